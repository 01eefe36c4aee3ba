"""A migration's KRaft phase judged on the KRaft controllers' metadata log (`src: log`, rule M7): the elections the
log records are held to KRaft's rules beside the ZooKeeper phase's, on the same path (`run_check`), and the log's
events stay out of every other view of the history (`CheckContext.rows`)."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks import BY_ID
from spark_analysis.result import run_check
from tests.fixtures.histories import python_context
from tests.unit.spark_analysis.test_checks_across_a_migration import MIGRATION_RUN, _history, _taken_over_at

Event = dict[str, Any]


def _log(elected: int) -> list[Event]:
    """The metadata log of a migration: brokers registered fenced and unfenced, the copy of t/0 (leader 1), then
    broker 1 fenced at 20 s and `elected` written as leader of t/0 with the ISR [2, 3]."""
    def ev(t: float, type_: str, **fields: Any) -> Event:
        return {"t": t, "src": "log", "type": type_, **fields}

    return [*(ev(8.0, "broker.fenced", broker=b) for b in (1, 2, 3)),
            *(ev(9.0, "broker.unfenced", broker=b) for b in (1, 2, 3)),
            ev(10.5, "partition.state", topic="t", partition=0, leader=1, leader_epoch=3, isr=[1, 2, 3],
               replicas=[1, 2, 3], elr=None),
            ev(20.0, "broker.fenced", broker=1),
            ev(20.0, "partition.state", topic="t", partition=0, leader=elected, leader_epoch=4, isr=[2, 3],
               replicas=[1, 2, 3], elr=None)]


def _events(elected: int) -> list[Event]:
    return sorted([*_history(migrates=True), _taken_over_at(10.0), *_log(elected)], key=lambda e: e["t"])


def test_an_election_the_metadata_log_records_by_kraft_rules_passes_the_kraft_phase() -> None:
    result = run_check(BY_ID["partition.election_conforms"], python_context(_events(elected=2), MIGRATION_RUN))
    assert result.status == "pass", result.summary
    assert "; KRaft phase (the KRaft controllers' metadata log): all 1 election conform" in result.summary
    assert result.metrics["kraft_elections_judged"] == 1 and "judged_until_s" not in result.metrics


def test_an_election_off_kraft_rules_in_the_metadata_log_fails_the_migrated_run() -> None:
    """Broker 2, unfenced and in the ISR, comes before 3 in the replicas: KRaft's offline election picks 2."""
    result = run_check(BY_ID["partition.election_conforms"], python_context(_events(elected=3), MIGRATION_RUN))
    assert result.status == "fail", result.summary
    assert "KRaft phase (the KRaft controllers' metadata log): 1 election off the model" in result.summary
    assert "picked 3, model prescribes 2" in result.summary


def test_without_the_metadata_log_the_kraft_phase_is_said_not_to_be_judged() -> None:
    events = sorted([*_history(migrates=True), _taken_over_at(10.0)], key=lambda e: e["t"])
    result = run_check(BY_ID["partition.election_conforms"], python_context(events, MIGRATION_RUN))
    assert result.summary.endswith("the KRaft phase after it is not judged"), result.summary


def test_the_metadata_logs_events_are_in_no_view_but_its_own() -> None:
    ctx = python_context(_events(elected=2), MIGRATION_RUN)
    assert {r["src"] for r in ctx.rows("partition.state", "broker.fenced", "broker.unfenced")} == {"zk"}
    log = ctx.metadata_log()
    assert {r["src"] for r in log.rows("partition.state", "broker.fenced", "broker.unfenced")} == {"log"}
    assert [r["type"] for r in log.rows("op.start")] == ["op.start", "op.start"]  # other types as they are


def _dual_write(log_isr: list[int]) -> list[Event]:
    """Dual-write from 12 s to 40 s; ZooKeeper and the brokers hold t/0 at leader 1, ISR [1, 2, 3] throughout, and the
    metadata log has the same leader with `log_isr` from 13 s."""
    def op(t: float, type_: str, **fields: Any) -> Event:
        return {"t": t, "src": "engine", "type": type_, "op_id": 0, **fields}

    return sorted([*_history(migrates=True), op(12.0, "op.end", step="copy", outcome="done"),
                   op(40.0, "op.start", step="controllers_kraft"),
                   {"t": 0.4, "src": "admin", "type": "partition.state", "topic": "t", "partition": 0, "leader": 1,
                    "isr": [1, 2, 3]},
                   {"t": 13.0, "src": "log", "type": "partition.state", "topic": "t", "partition": 0, "leader": 1,
                    "isr": log_isr, "replicas": [1, 2, 3]}], key=lambda e: e["t"])


def test_dual_write_holds_zookeeper_to_the_metadata_log_as_to_the_brokers() -> None:
    agrees = run_check(BY_ID["partition.dual_write_agrees"], python_context(_dual_write([1, 2, 3])))
    assert agrees.status == "pass", agrees.summary
    assert agrees.summary.endswith("; ZooKeeper and the KRaft controller's metadata log did too, for 1 partition")
    assert agrees.metrics["partitions_compared_with_log"] == 1
    apart = run_check(BY_ID["partition.dual_write_agrees"], python_context(_dual_write([1, 2])))
    assert apart.status == "fail", apart.summary
    assert "ZooKeeper and the KRaft controller's metadata log disagree" in apart.summary
    assert "the KRaft controller's metadata log had leader 1, ISR [1, 2]" in apart.summary


def test_dual_write_concludes_on_the_metadata_log_when_the_brokers_view_never_settles() -> None:
    """The brokers' roll into KRaft mode fills dual-write, so their answers change every few seconds (3.9.2: all 12
    partitions never settled for 10 s); ZooKeeper follows the log within 0.11 s, so 2 s settle those two."""
    churn = [{"t": t, "src": "admin", "type": "partition.state", "topic": "t", "partition": 0, "leader": 1 + k % 2,
              "isr": [1, 2, 3]} for k, t in enumerate((14.0, 20.0, 26.0, 32.0, 38.0))]
    result = run_check(BY_ID["partition.dual_write_agrees"],
                       python_context(sorted([*_dual_write([1, 2, 3]), *churn], key=lambda e: e["t"])))
    assert result.status == "pass", result.summary
    assert "metadata log named the same leader and ISR whenever settled, for 1 partition" in result.summary


def test_a_fault_that_holds_back_the_write_to_zookeeper_is_no_disagreement_until_it_has_settled() -> None:
    """The quorum cut off from ZooKeeper from 12.5 s to 30 s: the KRaft controller decides on (the log's ISR [1, 2]
    at 13 s) while ZooKeeper keeps [1, 2, 3]. Not judged in the fault and the SETTLE_S after it; judged after, where
    ZooKeeper has had time to follow."""
    def cut(start: float, end: float) -> list[Event]:
        effect = {"links": [{"src": "controller:101", "dst": "zookeeper:1"}]}
        return [{"t": start, "src": "engine", "type": "fault.start", "fault_id": "1", "kind": "partition",
                 "target": "controller:101 | zookeeper:1", "effect": effect},
                {"t": end, "src": "engine", "type": "fault.end", "fault_id": "1", "kind": "partition",
                 "target": "controller:101 | zookeeper:1"}]

    held = run_check(BY_ID["partition.dual_write_agrees"],
                     python_context(sorted([*_dual_write([1, 2]), *cut(12.5, 30.0)], key=lambda e: e["t"])))
    assert held.status == "pass" and held.metrics["partitions_compared_with_log"] == 0, held.summary
    soon = run_check(BY_ID["partition.dual_write_agrees"],
                     python_context(sorted([*_dual_write([1, 2]), *cut(12.5, 20.0)], key=lambda e: e["t"])))
    assert soon.status == "fail", soon.summary  # 30 s to 40 s: ZooKeeper still [1, 2, 3], the log [1, 2]
