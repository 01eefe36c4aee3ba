"""`power_loss`: what the kind asks of the cluster (on a fake cluster that records calls; the real kill and rollback
of unsynced writes, and Kafka's recovery, are in tests/integration/process_backend/test_power_loss_on_apache_kafka.py),
one node or several at one instant (`targets:`)."""

from __future__ import annotations

from types import MappingProxyType

from harness.cluster.base import NodeId, UnsyncedLoss
from tests.unit.faults.support import inject_and_heal

EXPERIMENT = """name: p
duration: 30s
topics: [{name: t}]
cluster: {brokers: 3}
schedule:
  - {at: 1s, fault: power_loss, %s, duration: 5s}
"""


class RecordingPower:
    """A cluster double that records the power calls and loses one file per node."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def power_loss(self, *nodes: NodeId) -> tuple[UnsyncedLoss, ...]:
        self.calls.append("power_loss " + " ".join(map(str, nodes)))
        return tuple(UnsyncedLoss(MappingProxyType({f"data/t-{n.id}/0.log": 100}), ()) for n in nodes)

    def start(self, node: NodeId) -> None:
        self.calls.append(f"start {node}")


def test_one_power_loss_fault_with_several_targets_cuts_them_in_one_call_and_starts_each_at_the_heal() -> None:
    cluster = RecordingPower()
    events = inject_and_heal(EXPERIMENT % "targets: [broker:2, broker:3]", cluster, "p.yaml")
    assert cluster.calls[0] == "power_loss broker:2 broker:3"
    assert sorted(cluster.calls[1:]) == ["start broker:2", "start broker:3"]
    start = events[0]
    assert start["target"] == ["broker:2", "broker:3"]
    assert [n["id"] for n in start["effect"]["lost"]] == [2, 3]
    assert all(n["log_bytes"] == 100 for n in start["effect"]["lost"])
    assert events[-1]["type"] == "fault.end" and not events[-1].get("heal_errors")


def test_a_single_target_power_loss_cuts_that_node_alone() -> None:
    cluster = RecordingPower()
    inject_and_heal(EXPERIMENT % "target: broker:1", cluster, "p.yaml")
    assert cluster.calls == ["power_loss broker:1", "start broker:1"]
