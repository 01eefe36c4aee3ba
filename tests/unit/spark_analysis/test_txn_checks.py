"""Transactional producers (issue 24) without Spark: how transactions end (`spark_analysis.facts.transactions`), the
three `txn.*` checks on the in-process evaluator (the Spark path reaches the same words:
tests/integration/spark_analysis/test_self_test_spark.py and test_txn_checks_spark.py), and the existing checks
on transactional records: aborted records are no acknowledged writes, occupy offsets, may be skipped by a
read_committed consumer only, and never make a read_committed group wait."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import BY_ID
from spark_analysis.checks.txn.judge import NO_TXN
from spark_analysis.facts.transactions import build_transaction_index
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import ill_typed, python_context, scenario, write_run
from tests.fixtures.histories_txn import (
    CRASHED_RUN,
    MIXED_RUN,
    RU,
    TxnHistory,
    aborted_read_history,
    lost_commit_history,
    mixed_txn_history,
    partial_view_history,
)

TXN_CHECKS = ("txn.aborted_read", "txn.atomic_visibility", "txn.lost_commit")


def reference(tmp_path: Path, events: list[dict[str, Any]], run: dict[str, Any] | None = None,
              name: str = "run") -> dict[str, CheckResult]:
    return {r.check_id: r for r in inprocess_checks(write_run(tmp_path / name, events, run=run))}


def _end(kind: str, txn: int, outcome: str | None, definite: bool | None = None, seq: int = 0) -> dict[str, Any]:
    return {"t": 1.0 + txn, "seq": seq, "src": "producer:tp1", "type": kind, "producer": "tp1", "txn": txn,
            "outcome": outcome, "definite": outcome not in (None, "unknown") if definite is None else definite}


def test_a_transaction_ends_as_its_end_event_says_and_is_unknown_without_a_definite_one() -> None:
    begins = [{"t": float(n), "seq": n, "src": "producer:tp1", "type": "txn.begin", "producer": "tp1",
               "transactional_id": "tp1-tid", "txn": n} for n in range(7)]
    index = build_transaction_index([
        *begins, _end("txn.commit", 0, "committed"), _end("txn.abort", 1, "aborted"),
        _end("txn.commit", 2, "aborted"), _end("txn.commit", 3, "unknown"),
        _end("txn.commit", 5, "committed"), _end("txn.abort", 5, "aborted"),  # two ends that disagree
        _end("txn.commit", 6, "committed", definite=False),  # no end for txn 4
    ])
    assert [index.outcome("tp1", n) for n in range(7)] == [
        "committed", "aborted", "aborted", "unknown", "unknown", "unknown", "unknown"]
    assert index.outcome("tp1", None) is None, "a record outside transactions"
    assert index.outcome("tp1", 99) == "unknown", "a record of a transaction no event describes"
    assert index.counts() == {"transactions": 7, "committed": 1, "aborted": 2, "unknown": 4, "unfinished": 1}
    first = index.get("tp1", 0)
    assert first is not None and first.transactional_id == "tp1-tid" and first.end_type == "txn.commit"


def test_a_run_without_transactions_passes_every_txn_check_with_nothing_to_judge(tmp_path: Path) -> None:
    got = reference(tmp_path, scenario())
    assert {c: (got[c].status, got[c].summary) for c in TXN_CHECKS} == {c: ("pass", NO_TXN) for c in TXN_CHECKS}


def test_a_run_without_producers_is_unknown_for_every_txn_check(tmp_path: Path) -> None:
    got = reference(tmp_path, [{"t": 0.0, "src": "engine", "type": "run.start"}])
    assert {got[c].status for c in TXN_CHECKS} == {"unknown"}


def test_a_read_committed_poll_of_an_aborted_record_fails_aborted_read_naming_value_txn_and_consumer(
        tmp_path: Path) -> None:
    result = reference(tmp_path, aborted_read_history(read_aborted=True))["txn.aborted_read"]
    assert result.status == "fail"
    assert result.summary == ("read_committed consumers polled 1 record of aborted transactions (1 poll), e.g. l1 "
                              "(group ledger) polled value 1003 of txn 1 of tp1 at payments/0@2")
    (row,) = result.evidence
    assert {k: row[k] for k in ("type", "consumer", "group", "producer", "transactional_id", "txn", "value", "topic",
                                "partition", "offset")} == {
        "type": "poll", "consumer": "l1", "group": "ledger", "producer": "tp1", "transactional_id": "tp1-tid",
        "txn": 1, "value": 1003, "topic": "payments", "partition": 0, "offset": 2}
    assert result.metrics["aborted_reads"] == 1 and result.metrics["aborted_records"] == 2


def test_read_committed_consumers_that_skip_aborted_records_they_read_past_pass_aborted_read(tmp_path: Path) -> None:
    result = reference(tmp_path, aborted_read_history())["txn.aborted_read"]
    assert result.status == "pass", result.summary
    assert result.metrics["aborted_records_judged"] == 2


def test_a_read_uncommitted_consumer_may_poll_aborted_records(tmp_path: Path) -> None:
    """`audit` (read_uncommitted) polls every record, the aborted one at its offset; `ledger` skips it. Neither
    the txn checks nor the delivery and consumer checks take the aborted record for a fault."""
    h = TxnHistory()
    records = [*h.txn(1.0, "tp1", [0]), *h.txn(2.0, "tp1", [0], end="aborted"), *h.txn(3.0, "tp1", [0])]
    h.read(3.2, "audit", "a1", RU, records)
    h.read(3.3, "ledger", "l1", "read_committed", [records[0], records[2]])
    got = reference(tmp_path, h.events())
    assert {c: r.status for c, r in got.items() if c.split(".")[0] in ("txn", "delivery", "consumer")} == {
        c: "pass" for c in got if c.split(".")[0] in ("txn", "delivery", "consumer")}
    assert got["txn.aborted_read"].metrics["aborted_reads"] == 0
    only_uncommitted = reference(tmp_path, aborted_read_history(read_aborted=True, isolation=RU), name="ru")
    assert only_uncommitted["txn.aborted_read"].status == "unknown", "no read_committed consumer read at all"


@pytest.mark.parametrize("reads_aborted", [False, True])
def test_a_pipeline_is_a_read_committed_reader_of_its_input(tmp_path: Path, reads_aborted: bool) -> None:
    """A read-process-write pipeline's `pipe.read`s count as reads of a read_committed consumer (src
    `pipeline:<id>`, its consumer group): it must skip the aborted input records, and the committed ones count
    as read for `txn.lost_commit`."""
    h = TxnHistory()
    records = [*h.txn(1.0, "tp1", [0]), *h.txn(2.0, "tp1", [0], end="aborted"), *h.txn(3.0, "tp1", [0])]
    for n, record in enumerate(records if reads_aborted else [records[0], records[2]]):
        h.pipe_read(3.2 + n * 0.01, "enrich", "enrich-group", n, record)
    got = reference(tmp_path, h.events())
    assert got["txn.aborted_read"].status == ("fail" if reads_aborted else "pass"), got["txn.aborted_read"].summary
    if reads_aborted:
        assert got["txn.aborted_read"].evidence[0]["consumer"] == "pipeline:enrich"
        assert got["txn.aborted_read"].evidence[0]["group"] == "enrich-group"
    assert got["txn.lost_commit"].status == "pass" and got["txn.lost_commit"].metrics["judged"] == 2


def test_aborted_read_is_unknown_when_no_read_committed_consumer_read_past_an_aborted_record(tmp_path: Path) -> None:
    """The run was cut short before the read_committed group went past the aborted transaction's records."""
    result = reference(tmp_path, aborted_read_history(completed=False), run=CRASHED_RUN)["txn.aborted_read"]
    assert result.status == "unknown"
    assert result.summary == "no read_committed consumer read past any of the 2 records of 1 aborted transaction"


def test_a_run_whose_transactions_all_committed_passes_aborted_read_with_nothing_to_judge(tmp_path: Path) -> None:
    result = reference(tmp_path, partial_view_history(partial=False))["txn.aborted_read"]
    assert (result.status, result.summary) == ("pass", "no transaction was aborted among 2 transactions "
                                                       "(nothing to judge)")


def test_a_group_that_saw_part_of_a_committed_transaction_fails_atomic_visibility_naming_seen_and_missed(
        tmp_path: Path) -> None:
    result = reference(tmp_path, partial_view_history())["txn.atomic_visibility"]
    assert result.status == "fail"
    assert result.summary == ("read_committed groups saw 1 committed transaction in part, e.g. group ledger polled 2 "
                              "of the 4 records of txn 0 of tp1 and missed payments/1@0, payments/1@1, which it read "
                              "past")
    assert [(e["type"], e["value"], e["partition"], e["offset"], e["txn"], e["producer"]) for e in result.evidence] == [
        ("poll", 1001, 0, 0, 0, "tp1"), ("poll", 1003, 0, 1, 0, "tp1"),
        ("ack", 1002, 1, 0, 0, "tp1"), ("ack", 1004, 1, 1, 0, "tp1")]
    assert {e.get("consumer") for e in result.evidence if e["type"] == "poll"} == {"l1"}
    assert result.metrics["records_missed"] == 2 and result.metrics["partial_views"] == 1


def test_a_group_that_has_not_read_past_the_rest_of_a_transaction_passes_atomic_visibility(tmp_path: Path) -> None:
    """In the mixed history `ledger` polled txn 4's record on payments/0 as its last poll, never payments/1 past
    txn 4's record there: no partial view."""
    result = reference(tmp_path, mixed_txn_history(), run=MIXED_RUN)["txn.atomic_visibility"]
    assert result.status == "pass", result.summary
    assert result.metrics["group_transactions_judged"] == 3


def test_atomic_visibility_is_unknown_when_only_read_uncommitted_groups_read(tmp_path: Path) -> None:
    h = TxnHistory()
    h.read(1.2, "audit", "a1", RU, h.txn(1.0, "tp1", [0, 1]))
    result = reference(tmp_path, h.events())["txn.atomic_visibility"]
    assert (result.status, result.summary) == ("unknown", "no read_committed group polled a record of any of 1 "
                                                          "committed transaction")


def test_an_unpolled_committed_record_that_consumers_read_past_fails_lost_commit(tmp_path: Path) -> None:
    got = reference(tmp_path, lost_commit_history())
    result = got["txn.lost_commit"]
    assert result.status == "fail"
    assert result.summary == "lost 1 record of 1 committed transaction on payments/1"
    (row,) = result.evidence
    assert {k: row[k] for k in ("type", "producer", "txn", "value", "topic", "partition", "offset")} == {
        "type": "ack", "producer": "tp1", "txn": 0, "value": 1002, "topic": "payments", "partition": 1, "offset": 0}
    assert got["txn.atomic_visibility"].status == "pass", "no group saw part of the transaction"


def test_committed_records_not_yet_reached_in_a_run_cut_short_are_unseen_not_lost(tmp_path: Path) -> None:
    got = reference(tmp_path, lost_commit_history(completed=False), run=CRASHED_RUN)
    assert got["txn.lost_commit"].status == "unknown"
    assert got["txn.lost_commit"].metrics["unseen"] == 2 and got["txn.lost_commit"].metrics["lost"] == 0
    assert got["delivery.lost_write"].status == "unknown"


def test_committed_records_in_topics_no_consumer_reads_are_not_judged(tmp_path: Path) -> None:
    h = TxnHistory()
    h.txn(1.0, "tp1", [0, 1])
    other = TxnHistory(topic="other", first_value=2001)
    other.read(2.0, "ledger", "l1", "read_committed", other.txn(1.5, "tp9", [0]))
    result = reference(tmp_path, sorted(h.events() + other.events()[2:-1], key=lambda e: e["t"]))["txn.lost_commit"]
    assert result.status == "pass", result.summary
    assert result.metrics["unverifiable_no_consumer"] == 2 and result.metrics["judged"] == 1
    alone = reference(tmp_path, h.events(), name="alone")["txn.lost_commit"]
    assert (alone.status, alone.summary) == (
        "unknown", "no acknowledged record of a committed transaction in a topic some consumer reads")


def test_every_check_passes_the_mixed_history_of_committed_aborted_and_unfinished_transactions(tmp_path: Path) -> None:
    """The healthy run plus transactions that committed, aborted (on purpose and after a failed commit), ended
    unknown and never ended, read by a read_committed and a read_uncommitted group: no existing check changes
    its verdict (all pass, as on the healthy run alone), and the txn checks pass."""
    got = reference(tmp_path, mixed_txn_history(), run=MIXED_RUN)
    alone = reference(tmp_path, scenario(), run=MIXED_RUN, name="alone")
    assert {c: r.status for c, r in got.items()} == {c: r.status for c, r in alone.items()} == {
        c: "pass" for c in got}, {c: r.summary for c, r in got.items() if r.status != "pass"}
    lost = got["delivery.lost_write"].metrics
    assert (lost["txn_aborted_records"], lost["txn_unknown_records"]) == (4, 4)


def test_records_of_aborted_transactions_are_no_acknowledged_writes(tmp_path: Path) -> None:
    """Acked, never polled, and the read_committed group read past them: not lost."""
    result = reference(tmp_path, aborted_read_history())["delivery.lost_write"]
    assert result.status == "pass", result.summary
    assert result.metrics["acked"] == 4 and result.metrics["txn_aborted_records"] == 2


@pytest.mark.parametrize(("isolation", "status"), [("read_committed", "pass"), (None, "pass"),
                                                    ("read_uncommitted", "fail")])
def test_only_a_read_committed_consumer_may_jump_over_aborted_records(
        tmp_path: Path, isolation: str | None, status: str) -> None:
    """A consumer without a recorded isolation level reads committed records only (librdkafka's default)."""
    result = reference(tmp_path, aborted_read_history(isolation=isolation))["consumer.poll_skip"]
    assert result.status == status, result.summary


def test_a_read_committed_group_waits_for_committed_records_only_from_the_commit(tmp_path: Path) -> None:
    """With 1 s read SLOs: `ledger` never waits for aborted or unknown records (that would be a 6 s stall on
    payments/0), and on in-memory rows the check says what the reference says."""
    events = mixed_txn_history()
    ref = reference(tmp_path, events, run=MIXED_RUN)["slo.read_unavailable"]
    rows = run_check(BY_ID["slo.read_unavailable"], python_context(events, MIXED_RUN))
    assert (ref.status, ref.summary) == (rows.status, rows.summary) and ref.status == "pass"
    ledger = [w for w in ref.metrics["worst"] if w["key"].startswith("ledger ")]
    assert ledger and max(w["duration"] for w in ledger) < 0.2, ledger


def test_a_lost_poll_line_makes_a_lost_commit_unknown_not_a_failure(tmp_path: Path) -> None:
    """The damaged-history rule: a missing poll can make a committed record look lost."""
    events, _line = ill_typed(lost_commit_history(lose=False), "poll", "value", "not-a-number", nth=2)
    result = reference(tmp_path, events)["txn.lost_commit"]
    assert result.status == "unknown"
    assert result.metrics["status_without_damage_rule"] == "fail"
