"""`clock_skew`: what the kind asks of the cluster (on a double that records calls; libfaketime under a real
broker is in tests/integration/process_backend/test_faults_below_the_network_on_apache_kafka.py), and that a run
whose schedule has one starts its nodes on fake clocks."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.cluster.base import NodeId
from harness.engine.backend_needs import cluster_spec, needs_process_backend
from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.faults.catalog import CATALOG
from harness.faults.clock_faults import ClockSkew, _strobe
from harness.waiting import wait_until
from tests.unit.faults.support import inject_and_heal

EXPERIMENT = """name: c
duration: 30s
topics: [{name: t}]
cluster: {brokers: 3}
schedule:
  - {at: 1s, fault: clock_skew, target: 'broker:2', duration: 5s%s}
"""


class RecordingClocks:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def skew_clock(self, node: NodeId, offset_s: int) -> None:
        self.calls.append(f"{node} {offset_s:+d}")


def _inject(params: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    cluster = RecordingClocks()
    return inject_and_heal(EXPERIMENT % params, cluster, "c.yaml"), cluster.calls


def test_clock_skew_steps_the_clock_an_hour_ahead_by_default_and_the_heal_steps_it_back() -> None:
    events, calls = _inject()
    assert calls == ["broker:2 +3600", "broker:2 +0"]
    assert events[0]["effect"]["nodes"] == [{"role": "broker", "id": 2}] and events[0]["effect"]["down"] is False


def test_a_negative_offset_steps_the_clock_back() -> None:
    _events, calls = _inject(", params: {offset_s: -600}")
    assert calls == ["broker:2 -600", "broker:2 +0"]


def test_a_run_with_a_clock_skew_starts_its_nodes_on_fake_clocks_on_the_process_backend() -> None:
    exp = load_experiment_text(EXPERIMENT % "", "c.yaml")
    assert cluster_spec(exp).fake_clocks and not exp.cluster.fake_clocks
    assert needs_process_backend(exp) == "the clock_skew fault"
    plain = load_experiment_text(EXPERIMENT.replace("clock_skew", "kill") % "", "c.yaml")
    assert not cluster_spec(plain).fake_clocks


def test_a_strobe_flips_the_clock_between_the_step_and_the_real_time_until_stopped() -> None:
    """`_strobe` (the thread a `strobe_s` starts) alternates the offset and 0, one call per period."""
    clocks, stop = RecordingClocks(), threading.Event()
    thread = threading.Thread(target=_strobe, args=(clocks, NodeId.broker(2), 60, 0.01, stop))
    thread.start()
    wait_until("four flips", lambda: len(clocks.calls) >= 4 or None, 10.0)
    stop.set()
    thread.join(5.0)
    assert not thread.is_alive()
    assert clocks.calls[:4] == ["broker:2 +0", "broker:2 +60", "broker:2 +0", "broker:2 +60"]


def test_a_strobing_clock_skew_starts_stepped_records_its_period_and_its_heal_ends_the_strobe() -> None:
    events, calls = _inject(", params: {offset_s: 30, strobe_s: 5}")
    assert calls[0] == "broker:2 +30" and calls[-1] == "broker:2 +0"
    assert events[0]["effect"]["clocks"] == [{"role": "broker", "id": 2, "offset_s": 30, "strobe_s": 5.0}]
    kind = CATALOG["clock_skew"]
    assert isinstance(kind, ClockSkew) and not kind._strobes


def test_a_strobe_faster_than_a_node_follows_its_clock_file_is_refused_at_its_line() -> None:
    with pytest.raises(ValidationError, match="every 3 s at the fastest") as err:
        load_experiment_text(EXPERIMENT % ", params: {strobe_s: 2}", "c.yaml")
    assert "c.yaml:6" in str(err.value)
