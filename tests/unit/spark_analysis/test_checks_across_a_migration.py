"""A run that migrated to KRaft (`migrate_to_kraft`): the checks that read one authority's view of the controller's
decisions are judged on the ZooKeeper phase alone, up to the KRaft controller's taking of `/controller`, and answer
unknown, naming the migration, when that moment was not seen, on every path (`run_check`); the others are judged as
usual. On Apache Kafka 3.9.2 a clean migration failed controller.unique, election_conforms and partition_unavailable
from ZooKeeper's view over the whole run (docs/design.md, the migration)."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks import BY_ID
from spark_analysis.checks.partition.isr import OfflineReplicaLeavesIsr
from spark_analysis.result import run_check
from tests.fixtures.histories import RUN_JSON, python_context

Event = dict[str, Any]


def _history(migrates: bool) -> list[Event]:
    def ev(t: float, type_: str, src: str = "zk", **fields: Any) -> Event:
        return {"t": t, "src": src, "type": type_, **fields}

    op = [ev(5.0, "op.start", "engine", op_id=0, action="migrate_to_kraft", topic=None, partitions=[],
             timeout_s=120.0, description="#0 migrate_to_kraft"),
          ev(5.0, "op.start", "engine", op_id=0, action="migrate_to_kraft", topic=None, partitions=[],
             timeout_s=120.0, description="#0 migrate_to_kraft: controllers", step="controllers"),
          ev(9.0, "op.end", "engine", op_id=0, action="migrate_to_kraft", topic=None, outcome="done", via="",
             detail="", elapsed_s=4.0, description="#0 migrate_to_kraft: controllers", step="controllers"),
          ev(20.0, "op.end", "engine", op_id=0, action="migrate_to_kraft", topic=None, outcome="done", via="",
             detail="", elapsed_s=15.0, description="#0 migrate_to_kraft")] if migrates else []
    # broker 3 leaves /brokers/ids alive (a KRaft broker now) and stays in the ISR: a fail from ZooKeeper's view
    phases = [ev(t, "phase", "engine", name=n) for t, n in ((1.0, "chaos"), (40.0, "heal"), (50.0, "drain"))]
    return sorted([*phases, *(ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)),
                   ev(0.2, "partition.state", topic="t", partition=0, leader=1, leader_epoch=0, isr=[1, 2, 3],
                      replicas=[1, 2, 3]),
                   ev(12.0, "broker.down", broker=3), *op, ev(60.0, "run.end", "engine")], key=lambda e: e["t"])


def test_an_authority_check_of_a_migrated_run_is_unknown_naming_the_migration() -> None:
    result = run_check(OfflineReplicaLeavesIsr(), python_context(_history(migrates=True)))
    assert result.status == "unknown"
    assert result.summary.startswith("cannot conclude: the run migrated to KRaft from 5.0s (op #0)")


MIGRATION_RUN = {**RUN_JSON, "cluster": {**RUN_JSON["cluster"], "controllers": 1}}
"""A ZooKeeper-mode run with one dedicated KRaft controller (node 101) for its migration."""


def _taken_over_at(t: float) -> Event:
    return {"t": t, "src": "zk", "type": "controller", "broker": 101, "epoch": 7}


def test_an_authority_check_of_a_migrated_run_is_judged_on_the_zookeeper_phase_up_to_the_kraft_takeover() -> None:
    """Broker 3 leaves /brokers/ids alive at 12 s, after KRaft controller 101 took /controller at 10 s: the KRaft
    phase, not judged; taken over at 30 s instead, the loss is the ZooKeeper controller's to handle, and fails."""
    events = sorted([*_history(migrates=True), _taken_over_at(10.0)], key=lambda e: e["t"])
    result = run_check(OfflineReplicaLeavesIsr(), python_context(events, MIGRATION_RUN))
    assert result.status == "pass", result.summary
    assert result.summary.startswith("ZooKeeper phase (to 10.0s, when KRaft controller 101 took /controller): ")
    assert result.summary.endswith("the KRaft phase after it is not judged") and result.metrics["judged_until_s"] == 10
    late = sorted([*_history(migrates=True), _taken_over_at(30.0)], key=lambda e: e["t"])
    assert run_check(OfflineReplicaLeavesIsr(), python_context(late, MIGRATION_RUN)).status == "fail"


def test_the_same_history_without_the_migration_is_judged() -> None:
    assert run_check(OfflineReplicaLeavesIsr(), python_context(_history(migrates=False))).status == "fail"


def test_a_check_outside_the_authority_families_is_judged_across_a_migration() -> None:
    result = run_check(BY_ID["operation.completes"], python_context(_history(migrates=True)))
    assert result.status == "pass", result.summary


def test_the_hand_over_check_of_the_controller_family_is_judged_across_a_migration() -> None:
    events = [*_history(migrates=True), {"t": 1.0, "src": "zk", "type": "controller", "broker": 1, "epoch": 1}]
    result = run_check(BY_ID["controller.migration_handover"], python_context(events))
    assert result.status == "pass", result.summary
    assert result.summary.startswith("no KRaft controller took /controller"), result.summary


def test_dual_write_is_judged_from_the_copy_until_the_finalizing_step_and_a_late_change_is_settling() -> None:
    """`partition.dual_write_agrees` compares the views through dual-write (until here the `controllers_kraft` step's
    start at 30 s, not the history's end), and a change within SETTLE_S of it is still on its way, not a
    disagreement."""
    def ev(t: float, type_: str, **fields: Any) -> Event:
        return {"t": t, "src": "engine", "type": type_, "op_id": 0, **fields}

    events = [*_history(migrates=True),
              ev(12.0, "op.end", step="copy", outcome="done"), ev(30.0, "op.start", step="controllers_kraft"),
              {"t": 0.4, "src": "admin", "type": "partition.state", "topic": "t", "partition": 0, "leader": 1,
               "isr": [3, 2, 1]},
              {"t": 0.4, "src": "admin", "type": "partition.state", "topic": "t", "partition": 1, "leader": 2,
               "isr": [2]},
              {"t": 25.0, "src": "zk", "type": "partition.state", "topic": "t", "partition": 1, "leader": 2,
               "isr": [2, 1]},
              {"t": 45.0, "src": "zk", "type": "partition.state", "topic": "t", "partition": 0, "leader": 2,
               "isr": [2]}]
    result = run_check(BY_ID["partition.dual_write_agrees"], python_context(events))
    assert result.status == "pass", result.summary
    assert result.metrics["partitions_compared"] == 1 and result.metrics["partitions_never_settled"] == 1
    assert result.summary.startswith("dual-write 12.0s-30.0s:"), result.summary


def test_a_raft_epoch_of_the_quorum_and_a_zookeeper_epoch_of_the_same_number_are_two_controllers_of_two_counters(
) -> None:
    """Recorded: zk-3.9.2-migration-raft-epoch-beside-zookeeper-epoch (make test, 3.9.2): ZooKeeper's controller
    epoch 1 was broker 2's and the KRaft quorum's Raft epoch 1 controller 101's, two counters. Two controllers in one
    epoch of one counter still fail."""
    def controller(t: float, src: str, broker: int, epoch: int) -> Event:
        return {"t": t, "src": src, "type": "controller", "broker": broker, "epoch": epoch}

    quorum = {"t": 25.9, "src": "quorum", "type": "quorum.state", "voter": 101, "leader": 101, "epoch": 1,
              "role": "leader"}
    events = sorted([*_history(migrates=True), controller(3.0, "zk", 2, 1), quorum, controller(25.97, "quorum", 101, 1),
                     _taken_over_at(30.0)], key=lambda e: e["t"])
    result = run_check(BY_ID["controller.unique"], python_context(events, MIGRATION_RUN))
    assert result.status == "pass", result.summary
    twice = sorted([*events, controller(4.0, "zk", 3, 1)], key=lambda e: e["t"])
    assert run_check(BY_ID["controller.unique"], python_context(twice, MIGRATION_RUN)).status == "fail"


def test_a_zookeeper_controller_failover_ends_at_the_next_zookeeper_controller_not_at_a_quorum_leader() -> None:
    """In a migration's ZooKeeper phase the quorum observer's `controller` events (the KRaft quorum's leader) are
    another stream: ZooKeeper's controller gone at 10 s and back at 14 s is a 4 s failover, though the quorum named
    its leader at 10.5 s."""
    def controller(t: float, src: str, broker: int, epoch: int) -> Event:
        return {"t": t, "src": src, "type": "controller", "broker": broker, "epoch": epoch}

    events = sorted([*_history(migrates=True), controller(1.0, "zk", 2, 1), controller(10.0, "zk", -1, 1),
                     controller(10.5, "quorum", 101, 3), controller(14.0, "zk", 3, 2), _taken_over_at(30.0)],
                    key=lambda e: e["t"])
    result = run_check(BY_ID["slo.controller_failover"], python_context(events, MIGRATION_RUN))
    assert result.metrics["samples"] == [4.0], result.summary
