"""`producer:<id>`: the `pause` fault's producer target, parsed, validated against `workload.producers`, resolved
and carried out through the producer's `pause`/`resume` (a fake producer; no Kafka)."""

from __future__ import annotations

import pytest

from harness.cluster.links import LinkGraph
from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.faults.inject import FaultInjector
from harness.faults.resolve import ProducerRef, resolve_node
from harness.faults.schedule import plan
from harness.faults.targets import TargetSyntaxError, parse_link, parse_target
from harness.history.jsonl import record_of
from harness.history.state import ClusterState

EXP = """name: p
duration: 30s
topics: [{name: t}]
workload:
  producers: [{id: api, topic: t}]
schedule:
  - {at: 5s, fault: pause, target: "producer:api", duration: 10s}
"""


class FakeProducer:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")


def test_the_target_prints_as_written_names_a_static_producer_and_is_no_link_end() -> None:
    t = parse_target("producer:api")
    assert (t.kind, t.producer, str(t), t.role, t.is_static) == ("producer", "api", "producer:api", "producer", True)
    assert resolve_node(t, ClusterState()) == ProducerRef("api")
    with pytest.raises(TargetSyntaxError, match="producer:<id>"):
        parse_target("producer:")
    with pytest.raises(TargetSyntaxError, match="a link ends at a broker"):
        parse_link("client->producer:api")


@pytest.mark.parametrize(("schedule", "message"), [
    ('{at: 5s, fault: pause, target: "producer:web", duration: 10s}',
     r"schedule\[0\]\.target.*producer is not declared under `workload.producers`.*declared producers: api"),
    ('{at: 5s, fault: kill, target: "producer:api"}', r"fault 'kill' cannot target a producer"),
    ('{at: 5s, fault: partition, groups: [["producer:api"], ["broker:1"]], duration: 1s}',
     r"partition groups name brokers"),
])
def test_validation_refuses_a_producer_target_that_names_nothing_or_a_fault_that_cannot_pause(
    schedule: str, message: str,
) -> None:
    text = EXP.replace('{at: 5s, fault: pause, target: "producer:api", duration: 10s}', schedule)
    with pytest.raises(ValidationError, match=message):
        load_experiment_text(text, "mem.yaml")


def test_the_injector_pauses_a_fake_producer_and_the_heal_resumes_it_recording_the_target() -> None:
    exp = load_experiment_text(EXP, "mem.yaml")
    (fault,) = plan(exp)
    events: list[dict[str, object]] = []
    producer = FakeProducer()
    injector = FaultInjector(None, ClusterState(), LinkGraph((1,), (1,)), lambda e: events.append(record_of(e)),  # type: ignore[arg-type]
                             producers={"api": producer})
    assert injector.inject(fault)
    injector.heal(fault)
    assert producer.calls == ["pause", "resume"]
    assert [(e["type"], e["target"]) for e in events] == [("fault.start", ["producer:api"]),
                                                          ("fault.end", ["producer:api"])]


def test_a_producer_that_is_not_running_makes_the_fault_skipped() -> None:
    (fault,) = plan(load_experiment_text(EXP, "mem.yaml"))
    events: list[dict[str, object]] = []
    injector = FaultInjector(None, ClusterState(), LinkGraph((1,), (1,)), lambda e: events.append(record_of(e)))  # type: ignore[arg-type]
    assert not injector.inject(fault)
    assert events[0]["type"] == "fault.skipped" and "no producer 'api' is running" in str(events[0]["error"])
