"""`packet_loss`: what the kind asks of the cluster (on a double that records calls; the real iptables rules and
Kafka's reaction are in tests/integration/process_backend/test_packet_loss_on_apache_kafka.py), the effect it
records, and what the loader refuses."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster.base import LinkSource, NodeId, link_name
from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from tests.unit.faults.support import inject_and_heal

EXPERIMENT = """name: p
duration: 30s
topics: [{name: t}]
cluster: {brokers: 3}
schedule:
  - {at: 1s, fault: packet_loss, link: '%s', duration: 5s%s}
"""


class _Link:
    def __init__(self, name: str) -> None:
        self.name = name


class RecordingPackets:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def drop_packets(self, src: LinkSource, dst: NodeId, probability: float) -> str:
        self.calls.append(f"drop {link_name(src, dst)} {probability}")
        return f"h-{link_name(src, dst)}"

    def stop_dropping(self, handle: str) -> None:
        self.calls.append(f"stop {handle}")

    def link(self, src: LinkSource, dst: NodeId) -> _Link:
        return _Link(link_name(src, dst))


def _inject(link: str, params: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    cluster = RecordingPackets()
    return inject_and_heal(EXPERIMENT % (link, params), cluster, "p.yaml"), cluster.calls


def test_packet_loss_drops_on_the_link_and_the_heal_stops_it() -> None:
    events, calls = _inject("client->broker:2", ", params: {probability: 0.3}")
    assert calls == ["drop client->2 0.3", "stop h-client->2"]
    effect = events[0]["effect"]
    assert effect["toxics"] == [{"type": "packet_loss", "stream": "both", "toxicity": 0.3,
                                 "attributes": {"probability": 0.3}, "links": ["client->2"]}]
    assert effect["links"] == [] and effect["nodes"] == [] and effect["down"] is False


def test_a_link_to_zookeeper_drops_on_the_link_to_each_member_with_the_default_probability() -> None:
    _events, calls = _inject("broker:1->zookeeper")
    assert calls == ["drop 1->zk1 0.1", "stop h-1->zk1"]


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.2"])
def test_a_probability_outside_zero_to_one_is_refused_naming_the_field(bad: str) -> None:
    with pytest.raises(ValidationError, match=r"p.yaml:6:\d+: schedule\[0\]\.params"):
        load_experiment_text(EXPERIMENT % ("client->broker:2", f", params: {{probability: {bad}}}"), "p.yaml")


def test_an_experiment_with_a_fault_only_the_process_backend_runs_names_it_for_the_backend_choice() -> None:
    from harness.cluster.select import choose_backend
    from harness.engine.backend_needs import needs_process_backend
    from harness.errors import BackendError

    exp = load_experiment_text(EXPERIMENT % ("client->broker:2", ""), "p.yaml")
    assert needs_process_backend(exp) == "the packet_loss fault"
    plain = load_experiment_text(EXPERIMENT.replace(
        "  - {at: 1s, fault: packet_loss, link: '%s', duration: 5s%s}\n", "  - {at: 1s, fault: kill, target: "
        "'broker:1', duration: 5s}\n"), "p.yaml")
    assert needs_process_backend(plain) == ""
    with pytest.raises(BackendError, match="the packet_loss fault needs the process backend"):
        choose_backend("containers", process_only=needs_process_backend(exp))
