"""The verdicts of the transaction checks (`checks.txn.checks`), from facts either path gathers.

The Spark checks (`checks.txn.checks`) and the in-process evaluator (`spark_analysis.inprocess.txn`) gather the
same facts (`AbortedReads`, `PartialViews`, `LostCommits`) their own way; the status, summary, evidence and
metrics are decided here only, so both paths say the same words about the same history.

Nothing to judge: a run without any transaction event (`txn.begin`, `txn.commit`, `txn.abort`) passes every
transaction check with "no transactional producer in the run (nothing to judge)", as `operation.completes`
passes a run without operations; a run with transactions but none of the kind a check is about (no aborted
transaction for `txn.aborted_read`, no committed one for the other two) passes with "(nothing to judge)" too.
When the kind is there but nothing could be observed about it (no read_committed consumer read past an aborted
record; no read_committed group read a committed transaction; committed records only in topics no consumer
reads, or not yet reached in a run cut short), the check is unknown, never pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.facts.transactions import ABORTED, COMMITTED, TransactionIndex
from spark_analysis.result import CheckResult, failed, passed, unknown

ABORTED_READ = "txn.aborted_read"
ATOMIC_VISIBILITY = "txn.atomic_visibility"
LOST_COMMIT = "txn.lost_commit"
EVIDENCE_ROWS = 20
SAMPLE_PAIRS = 5
"""(group, transaction) pairs a partial-view failure shows, two seen and two missed records each."""
LOST_SAMPLE = 2000
"""Lost records the fault attribution of `txn.lost_commit` looks at (the first, by ack)."""
NO_TXN = "no transactional producer in the run (nothing to judge)"

Row = Mapping[str, Any]
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class AbortedReads:
    """What read_committed consumers did with records of aborted transactions."""

    records: int = 0
    """Records (values) of aborted transactions."""
    judged: int = 0
    """Of them, acked ones a read_committed consumer had to skip: in a topic such a consumer polled, and at or
    below the highest offset such a consumer polled on its partition (any, once the run completed)."""
    reads: int = 0
    """Polls of such records by read_committed consumers."""
    values_read: int = 0
    sample: Sequence[Row] = ()
    """The first polls (by seq): seq, t, consumer, group, topic, partition, offset, value, producer, txn."""


@dataclass(frozen=True, slots=True)
class PartialView:
    """One read_committed group that saw part of one committed transaction."""

    group: str
    producer: str
    txn: int
    records: int
    """The transaction's acked records."""
    saw: int
    """Of its records (values), how many the group polled."""
    seen: Sequence[Row] = ()
    """The group's first polls of the transaction (seq, t, consumer, topic, partition, offset, value)."""
    missed: Sequence[Row] = ()
    """The records it missed below offsets it read past (ack seq, t, topic, partition, offset, value)."""


@dataclass(frozen=True, slots=True)
class PartialViews:
    """What read_committed groups saw of committed transactions."""

    pairs: int = 0
    """(group, committed transaction) pairs in which the group polled some record of the transaction."""
    broken_pairs: int = 0
    broken_txns: int = 0
    missed_records: int = 0
    sample: Sequence[PartialView] = ()


@dataclass(frozen=True, slots=True)
class LostCommits:
    """Which records of committed transactions no consumer polled."""

    records: int = 0
    """Records (values) of committed transactions."""
    without_ack: int = 0
    """Of them, never acked at an offset: where they are is unknown, they are not judged."""
    polled: int = 0
    lost: int = 0
    lost_txns: int = 0
    unseen: int = 0
    unverifiable: int = 0
    """Acked but never polled, in topics no consumer polls."""
    lost_by_tp: Mapping[TopicPartition, int] = field(default_factory=dict)
    sample: Sequence[Row] = ()
    """The first lost records by (ack t, ack seq), at most LOST_SAMPLE: seq, t, producer, txn, value, topic,
    partition, offset (of the ack)."""


def evidence_row(row: Row, index: TransactionIndex, kind: str, problem: str) -> dict[str, Any]:
    """An evidence row: `type` `kind`, the row's fields without nulls, its transaction's transactional_id (when
    the row names a producer and a txn the index knows), and `problem`."""
    out: dict[str, Any] = {"type": kind, **{k: v for k, v in row.items() if v is not None}}
    txn = index.get(str(row.get("producer")), int(row["txn"])) if row.get("txn") is not None else None
    if txn is not None and txn.transactional_id is not None:
        out["transactional_id"] = txn.transactional_id
    out["problem"] = problem
    return out


def location(row: Row) -> str:
    """'topic/partition@offset' of a row."""
    return f"{tp_label(row.get('topic'), row.get('partition'))}@{row.get('offset')}"


def during_fault(faults: FaultIndex, t: float | None) -> tuple[str, str | None]:
    """(' during <fault>', its label) for the fault active at `t`, else ('', None)."""
    fault = faults.active_at(float(t or 0.0))
    return (f" during {fault.label}", fault.label) if fault else ("", None)


def judge_aborted_read(index: TransactionIndex, facts: AbortedReads, faults: FaultIndex) -> CheckResult:
    counts = index.counts()
    metrics = {"transactions": counts["transactions"], "aborted_transactions": counts[ABORTED],
               "aborted_records": facts.records, "aborted_records_judged": facts.judged,
               "aborted_reads": facts.reads, "aborted_values_read": facts.values_read}
    if not index.any:
        return passed(ABORTED_READ, NO_TXN, metrics)
    if facts.reads:
        first = facts.sample[0]
        during, fault = during_fault(faults, first.get("t"))
        summary = (f"read_committed consumers polled {plural(facts.values_read, 'record')} of aborted transactions "
                   f"({plural(facts.reads, 'poll')}), e.g. {first.get('consumer')} (group {first.get('group')}) "
                   f"polled value {first.get('value')} of txn {first.get('txn')} of {first.get('producer')} at "
                   f"{location(first)}{during}")
        evidence = [evidence_row(r, index, "poll", f"read_committed consumer {r.get('consumer')} polled value "
                                                   f"{r.get('value')} of txn {r.get('txn')} of {r.get('producer')}, "
                                                   "which was aborted")
                    for r in facts.sample[:EVIDENCE_ROWS]]
        return failed(ABORTED_READ, summary, evidence, metrics, fault)
    if not counts[ABORTED]:
        return passed(ABORTED_READ, f"no transaction was aborted among {plural(counts['transactions'], 'transaction')}"
                                    " (nothing to judge)", metrics)
    if not facts.judged:
        return unknown(ABORTED_READ, f"no read_committed consumer read past any of the "
                                     f"{plural(facts.records, 'record')} of "
                                     f"{plural(counts[ABORTED], 'aborted transaction')}", metrics)
    return passed(ABORTED_READ, f"read_committed consumers skipped all {plural(facts.judged, 'record')} of aborted "
                                f"transactions they read past ({plural(counts[ABORTED], 'aborted transaction')})",
                  metrics)


def judge_atomic_visibility(index: TransactionIndex, facts: PartialViews, faults: FaultIndex) -> CheckResult:
    counts = index.counts()
    metrics = {"transactions": counts["transactions"], "committed_transactions": counts[COMMITTED],
               "group_transactions_judged": facts.pairs, "partial_views": facts.broken_pairs,
               "transactions_seen_in_part": facts.broken_txns, "records_missed": facts.missed_records}
    if not index.any:
        return passed(ATOMIC_VISIBILITY, NO_TXN, metrics)
    if facts.broken_pairs:
        first = facts.sample[0]
        txn = index.get(first.producer, first.txn)
        during, fault = during_fault(faults, txn.end_t if txn is not None else None)
        missed = ", ".join(location(r) for r in first.missed[:3]) + (" ..." if len(first.missed) > 3 else "")
        summary = (f"read_committed groups saw {plural(facts.broken_txns, 'committed transaction')} in part, e.g. "
                   f"group {first.group} polled {first.saw} of the {first.records} records of txn {first.txn} of "
                   f"{first.producer} and missed {missed}, which it read past{during}")
        evidence: list[dict[str, Any]] = []
        for view in facts.sample:
            label = f"txn {view.txn} of {view.producer}"
            evidence += [evidence_row({**r, "producer": view.producer, "txn": view.txn, "group": view.group}, index,
                                      "poll", f"group {view.group} saw this record of committed {label}")
                         for r in view.seen[:2]]
            evidence += [evidence_row({**r, "producer": view.producer, "txn": view.txn}, index, "ack",
                                      f"group {view.group} never polled this record of committed {label}, though it "
                                      f"polled past it on {tp_label(r.get('topic'), r.get('partition'))}")
                         for r in view.missed[:2]]
        return failed(ATOMIC_VISIBILITY, summary, evidence, metrics, fault)
    if not counts[COMMITTED]:
        return passed(ATOMIC_VISIBILITY, f"no transaction was committed among "
                                         f"{plural(counts['transactions'], 'transaction')} (nothing to judge)", metrics)
    if not facts.pairs:
        return unknown(ATOMIC_VISIBILITY, f"no read_committed group polled a record of any of "
                                          f"{plural(counts[COMMITTED], 'committed transaction')}", metrics)
    return passed(ATOMIC_VISIBILITY, f"every read_committed group saw whole each committed transaction it read, as "
                                     f"far as it read ({plural(facts.pairs, 'group-transaction pair')})", metrics)


def _lost_summary(facts: LostCommits, faults: FaultIndex) -> tuple[str, str | None]:
    """'lost 3 records of 2 committed transactions on t/1 during fault #2 ...' (+ the other partitions)."""
    by_fault: Counter[str] = Counter()
    for row in facts.sample:
        window = faults.at_or_after(float(row.get("t") or 0.0))
        if window is not None:
            by_fault[window.label] += 1
    fault = by_fault.most_common(1)[0][0] if by_fault else None
    ranked = sorted(facts.lost_by_tp.items(), key=lambda kv: (-kv[1], kv[0]))
    where = tp_label(*ranked[0][0]) if len(ranked) == 1 else (
        f"{len(ranked)} partitions: " + "; ".join(f"{tp_label(*tp)} ({n})" for tp, n in ranked[:4])
        + (f"; +{len(ranked) - 4} more partitions" if len(ranked) > 4 else ""))
    text = (f"lost {plural(facts.lost, 'record')} of {plural(facts.lost_txns, 'committed transaction')} on "
            f"{where}" + (f" during {fault}" if fault else ""))
    return text, fault


def judge_lost_commit(index: TransactionIndex, facts: LostCommits, faults: FaultIndex) -> CheckResult:
    counts = index.counts()
    judged = facts.records - facts.without_ack - facts.unverifiable
    metrics: dict[str, Any] = {
        "transactions": counts["transactions"], "committed_transactions": counts[COMMITTED],
        "committed_records": facts.records, "records_without_ack": facts.without_ack, "polled": facts.polled,
        "judged": judged, "lost": facts.lost, "unseen": facts.unseen, "unverifiable_no_consumer": facts.unverifiable}
    if not index.any:
        return passed(LOST_COMMIT, NO_TXN, metrics)
    if facts.lost:
        summary, fault = _lost_summary(facts, faults)
        metrics["lost_by_partition"] = {tp_label(*tp): n for tp, n in sorted(facts.lost_by_tp.items())}
        evidence = [evidence_row(r, index, "ack", f"record of committed txn {r.get('txn')} of {r.get('producer')}, "
                                                  f"acknowledged at {location(r)}, never polled by any consumer")
                    for r in facts.sample[:EVIDENCE_ROWS]]
        return failed(LOST_COMMIT, summary, evidence, metrics, fault)
    if not counts[COMMITTED]:
        return passed(LOST_COMMIT, f"no transaction was committed among {plural(counts['transactions'], 'transaction')}"
                                   " (nothing to judge)", metrics)
    if facts.unseen:
        return unknown(LOST_COMMIT, f"{plural(facts.unseen, 'record')} of committed transactions not yet polled when "
                                    "the run ended early (beyond what consumers reached)", metrics)
    if judged <= 0:
        return unknown(LOST_COMMIT, "no acknowledged record of a committed transaction in a topic some consumer reads",
                       metrics)
    note = f"; {facts.unverifiable} in topics no consumer reads not judged" if facts.unverifiable else ""
    return passed(LOST_COMMIT, f"all {plural(judged, 'record')} of {plural(counts[COMMITTED], 'committed transaction')}"
                               f" were polled{note}", metrics)
