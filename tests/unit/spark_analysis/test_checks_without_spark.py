"""The checks that run in Python on collected rows, the registry, and the in-process evaluator,
exercised on the hand-written fixture histories without starting Spark."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from harness.experiment.schema import CHECK_IDS as SCHEMA_IDS
from spark_analysis.catalogue import IDS_MODULE, WRITE_IDS, ids_module_text
from spark_analysis.checks import ALL_CHECKS, BY_ID, CHECK_IDS, DAMAGE, FAMILIES
from spark_analysis.ingest.runinfo import RunInfo
from spark_analysis.inprocess.evaluator import INPROCESS_CHECKS, inprocess_checks, inprocess_damage
from spark_analysis.result import Check, reads_frames, run_check
from tests.fixtures.histories import (
    EXPECTED_FAILURES,
    history_lines,
    ill_typed,
    python_context,
    run_json,
    scenario,
    tear_middle,
    write_lines,
    write_run,
)

SPARK_ONLY = {c.id for c in ALL_CHECKS if reads_frames(c)}
"""The checks that gather their facts from Spark frames (`frames = True`): no rows path."""
ROW_CHECKS = [c.id for c in ALL_CHECKS if c.id not in SPARK_ONLY and RunInfo().applies(c.id)]
"""The row checks that apply to the ZooKeeper-mode fixtures (`quorum.*` is KRaft only)."""


def test_the_loaders_check_ids_are_the_registrys_in_order() -> None:
    """The experiment loader validates check names against harness/experiment/check_ids.py, generated from the
    registry: a check added or renamed in its module needs the command, nothing else."""
    assert IDS_MODULE.read_text(encoding="utf-8") == ids_module_text(), f"stale: run `{WRITE_IDS}`"
    assert SCHEMA_IDS == CHECK_IDS


def test_every_check_gathering_from_frames_declares_its_damage_rule() -> None:
    """A check reading the bulk events at volume says which types it reads (its `damage` attribute)."""
    assert set(DAMAGE) >= SPARK_ONLY, sorted(SPARK_ONLY - set(DAMAGE))


def test_the_registry_finds_every_check_class_once() -> None:
    assert len(set(CHECK_IDS)) == len(CHECK_IDS) == len(ALL_CHECKS) >= 35
    assert [c.family for c in ALL_CHECKS] == sorted((c.family for c in ALL_CHECKS), key=FAMILIES.index)


@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.id)
def test_every_check_complies_with_the_check_protocol(check: Check) -> None:
    """id/family/needs are declared, the family prefixes the id, and the class lives in checks/<family>/."""
    assert isinstance(check, Check)
    assert check.id.split(".")[0] == check.family
    assert isinstance(check.needs, frozenset) and all(isinstance(n, str) for n in check.needs)
    module = importlib.import_module(type(check).__module__)
    assert module.__name__.split(".")[:3] == ["spark_analysis", "checks", check.family], module.__name__


@pytest.mark.parametrize("check_id", ROW_CHECKS)
def test_row_check_passes_on_the_healthy_history(check_id: str) -> None:
    result = run_check(BY_ID[check_id], python_context(scenario()))
    assert result.status == "pass", result.summary


@pytest.mark.parametrize("bug", sorted(b for b, (c, _) in EXPECTED_FAILURES.items() if c not in SPARK_ONLY))
def test_row_check_fails_for_its_bug_with_summary_and_evidence(bug: str) -> None:
    check_id, text = EXPECTED_FAILURES[bug]
    result = run_check(BY_ID[check_id], python_context(scenario(**{bug: True})))
    assert result.status == "fail"
    assert text in result.summary
    assert 0 < len(result.evidence) <= 20
    assert all("t" in e or "seq" in e for e in result.evidence)


def test_row_checks_without_their_events_are_unknown_never_pass() -> None:
    ctx = python_context([{"t": 0.0, "src": "engine", "type": "run.start"}])
    for check_id in ROW_CHECKS:
        assert run_check(BY_ID[check_id], ctx).status == "unknown", check_id


def test_election_check_uses_liveness_and_ar_order() -> None:
    """The election check names the strategy and the model's choice in its evidence."""
    result = run_check(BY_ID["partition.election_conforms"], python_context(scenario(wrong_election=True)))
    last = result.evidence[-1]
    assert last["strategy"] == "offline" and last["expected"] == [2] and last["leader"] == 3
    assert result.fault == "fault #2 kill broker 1"


def test_reference_passes_the_healthy_history(tmp_path: Path) -> None:
    results = inprocess_checks(write_run(tmp_path / "ok", scenario()))
    assert [r.check_id for r in results] == [c for c in INPROCESS_CHECKS if RunInfo().applies(c)]
    assert {r.status for r in results} == {"pass"}, [(r.check_id, r.summary) for r in results]


@pytest.mark.parametrize("bug", sorted(b for b, (c, _) in EXPECTED_FAILURES.items() if c in INPROCESS_CHECKS))
def test_reference_fails_the_same_check_for_each_bug(tmp_path: Path, bug: str) -> None:
    check_id, _ = EXPECTED_FAILURES[bug]
    by_id = {r.check_id: r for r in inprocess_checks(write_run(tmp_path / bug, scenario(**{bug: True})))}
    assert by_id[check_id].status == "fail", by_id[check_id].summary


def test_reference_on_a_torn_history_of_a_crash_counts_unfinished_writes_as_unknown(tmp_path: Path) -> None:
    events = [e for e in scenario() if e["t"] <= 6.0]
    events.append({"t": 6.01, "src": "producer:p1", "type": "send", "producer": "p1", "value": 900,
                   "topic": "orders", "acks": "all"})
    from tests.fixtures.histories import RUN_JSON

    run_dir = write_run(tmp_path / "torn", events, run=dict(RUN_JSON, status="crashed"), torn=True)
    lost = {r.check_id: r for r in inprocess_checks(run_dir)}["delivery.lost_write"]
    assert lost.status != "fail" and lost.metrics["lost"] == 0 and lost.metrics["unfinished"] >= 1


def test_reference_skips_a_wrong_typed_value_and_answers_unknown_instead_of_blaming_the_fault(tmp_path: Path) -> None:
    """`"value": "not-a-number"` on a poll during fault #1 is a skipped line (as on the Spark path,
    tests/integration/spark_analysis), not a poll without a value: the checks it would make fail are unknown."""
    events, line = ill_typed(scenario(), "poll", "value", "not-a-number", nth=10)
    run_dir = write_run(tmp_path / "ill-typed", events)
    damage = inprocess_damage(run_dir / "history.jsonl")
    assert (damage.total_lines, damage.skipped) == (len(events), 1)
    assert [(d.line, d.kind, d.type) for d in damage.listed] == [(line, "ill-typed", "poll")]
    by_id = {r.check_id: r for r in inprocess_checks(run_dir)}
    lost, skip = by_id["delivery.lost_write"], by_id["consumer.poll_skip"]
    assert lost.status == "unknown" and lost.metrics["status_without_damage_rule"] == "fail" and lost.fault is None
    assert skip.status == "unknown" and "1 inside fault windows" in skip.summary
    assert by_id["delivery.key_order"].status == "pass", "no send or ack line was damaged"


def test_reference_counts_torn_lines_in_the_middle_and_no_delivery_check_fails(tmp_path: Path) -> None:
    lines, torn = tear_middle(history_lines(scenario()), 37)
    run_dir = write_lines(tmp_path / "torn37", lines)
    damage = inprocess_damage(run_dir / "history.jsonl")
    assert damage.skipped == 37 and dict(damage.by_kind) == {"torn": 37}
    assert [d.line for d in damage.listed] == torn
    results = inprocess_checks(run_dir)
    assert not [r.check_id for r in results if r.status == "fail"]
    delivery = [r for r in results if r.check_id.startswith("delivery.")]
    assert all(r.status == "unknown" and "damaged history line" in r.summary for r in delivery), delivery


@pytest.mark.parametrize(("line", "damage"), [
    ('{"t":1.0,"src":"c","type":"poll","value":7.0,"offset":1,"partition":0,"topic":"o"}', ("ill-typed", "poll")),
    ('{"t":1.0,"src":"c","type":"poll","value":1,"offset":"1","partition":0,"topic":"o"}', ("ill-typed", "poll")),
    ('{"t":true,"src":"c","type":"poll","value":1}', ("ill-typed", "poll")),
    ('{"t":1.0,"src":"p","type":"send.error","value":1,"definite":1}', ("ill-typed", "send.error")),
    ('{"t":1.0,"src":"zk","type":"partition.state","leader":2.0}', ("ill-typed", "partition.state")),
    ('{"t":1.0,"src":"zk","type":"partition.state","isr":[1,"a"]}', ("ill-typed", "partition.state")),
    ('{"t":1.0,"src":"c","type":"assign","partitions":["o",0]}', ("ill-typed", "assign")),
    ('{"t":1.0,"src":"c","value":"x"}', ("torn", "?")),
    ('{"t":1.0,"src":"c"}', ("untyped", "?")),
    ('{"t":2.5,"src":"c","type":"poll","val', ("torn", "poll")),
    ("[1,2]", ("torn", "?")),
    ('{"t":"NaN","src":"a","type":"probe"}', None),
    ('{"t":1.0,"src":"zk","type":"partition.state","leader":"2","isr":[2,null]}', None),
    ('{"t":1.0,"src":"a","type":"group.state","leader":"m1","members":[{"id":1}]}', None),
    ('{"t":1.0,"src":"p","type":"send","value":1,"key":{"k":1}}', None),
    ('{"t":1.0,"wall":"noon","src":"e","type":"probe"}', None),
    ('{"t":1.0,"src":"e","type":"probe"} trailing text', None),
])
def test_reference_takes_the_json_types_sparks_reader_takes(
        tmp_path: Path, line: str, damage: tuple[str, str] | None) -> None:
    """A field of the wrong JSON type for the history schema skips the line; what Spark's reader accepts
    (a number's digits as a string leader, "NaN" as a double, any JSON in a string column, nulls in arrays,
    a column no check reads, text after the object) does not."""
    run_dir = write_lines(tmp_path / "run", ['{"t":0.0,"src":"engine","type":"run.start"}', line, "", "  "])
    found = inprocess_damage(run_dir / "history.jsonl")
    assert found.total_lines == 2, "blank lines are no lines"
    assert [(d.kind, d.type) for d in found.listed] == ([damage] if damage else [])


def _failover_history(no_leader_isr: list[int]) -> list[dict[str, object]]:
    """Broker 1 (leader of orders/0 and controller) dies; the new controller writes leader -1 with
    `no_leader_isr`, then elects broker 2."""
    def ps(t: float, leader: int, epoch: int, isr: list[int]) -> dict[str, object]:
        return {"t": t, "src": "zk", "type": "partition.state", "topic": "orders", "partition": 0,
                "leader": leader, "leader_epoch": epoch, "isr": isr, "replicas": [1, 2, 3]}

    return [{"t": 0.0, "src": "engine", "type": "run.start"},
            *({"t": 0.1, "src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)),
            ps(0.3, 1, 0, [1, 2, 3]),
            {"t": 5.0, "src": "zk", "type": "broker.down", "broker": 1},
            ps(6.0, -1, 1, no_leader_isr), ps(6.3, 2, 2, [2, 3])]


def test_election_check_takes_kafkas_no_leader_write_on_controller_failover_as_no_election() -> None:
    """Apache Kafka's new controller first takes the dead leader out of the ISR with leader -1
    (OfflineReplica), then elects: only the election is judged, against the shrunk ISR."""
    result = run_check(BY_ID["partition.election_conforms"], python_context(_failover_history([2, 3])))
    assert result.status == "pass", result.summary
    assert result.metrics["offline_replica_steps"] == 1 and result.metrics["elections_judged"] == 1


def test_election_check_still_fails_a_leaderless_write_that_keeps_live_isr_members_waiting() -> None:
    """Leader -1 while the ISR still holds the dead leader and live members is an election that chose no one."""
    result = run_check(BY_ID["partition.election_conforms"], python_context(_failover_history([1, 2, 3])))
    assert result.status == "fail"
    assert "offline election picked -1, model prescribes 2" in result.summary


def _last_member_history(unclean_after: float | None) -> list[dict[str, object]]:
    """orders/0 down to ISR [1] when its leader 1 dies; the new controller writes leader -1 with the last member
    kept, then (with unclean elections enabled) elects broker 2 uncleanly `unclean_after` s later."""
    def ps(t: float, leader: int, epoch: int, isr: list[int]) -> dict[str, object]:
        return {"t": t, "src": "zk", "type": "partition.state", "topic": "orders", "partition": 0,
                "leader": leader, "leader_epoch": epoch, "isr": isr, "replicas": [2, 3, 1]}

    events: list[dict[str, object]] = [
        {"t": 0.0, "src": "engine", "type": "run.start"},
        *({"t": 0.1, "src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)),
        ps(0.3, 1, 3, [1]), {"t": 5.0, "src": "zk", "type": "broker.down", "broker": 1}, ps(6.0, -1, 4, [1])]
    if unclean_after is not None:
        events.append(ps(6.0 + unclean_after, 2, 5, [2]))
    return events


def test_a_dead_last_isr_member_kept_with_no_leader_before_an_unclean_election_is_no_election() -> None:
    """Apache Kafka 3.9.2 (recorded: zk-3.9.2-weak-correlated-expiry): `leader -1, isr [1]` (OfflineReplica for the
    dead last ISR member, which stays in the ISR), then the unclean election 130 ms later."""
    unclean = run_json(cluster={"broker_config": {"unclean.leader.election.enable": "true"}})
    result = run_check(BY_ID["partition.election_conforms"], python_context(_last_member_history(0.13), unclean))
    assert result.status == "pass", result.summary
    assert result.metrics["offline_replica_steps"] == 1 and result.metrics["elections_judged"] == 1


def test_a_dead_last_isr_member_kept_with_no_leader_and_nothing_after_is_the_leaderless_election() -> None:
    result = run_check(BY_ID["partition.election_conforms"], python_context(_last_member_history(None)))
    assert result.status == "pass" and result.metrics["elections_judged"] == 1
    unclean = run_json(cluster={"broker_config": {"unclean.leader.election.enable": "true"}})
    late = run_check(BY_ID["partition.election_conforms"], python_context(_last_member_history(None), unclean))
    assert late.status == "fail" and "offline election picked -1, model prescribes 2" in late.summary


def test_a_run_where_no_leader_changed_passes_the_election_check_with_nothing_to_judge() -> None:
    """A steady-state baseline (load, no fault) is the first experiment a user writes: it must be able to pass."""
    events = [e for e in _failover_history([2, 3]) if e["type"] != "partition.state" or e["t"] < 1.0]
    events = [e for e in events if e["type"] != "broker.down"]
    result = run_check(BY_ID["partition.election_conforms"], python_context(events))
    assert result.status == "pass" and "nothing to judge" in result.summary, result.summary
