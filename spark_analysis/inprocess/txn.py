"""The transaction checks in the in-process evaluator (`spark_analysis.inprocess.evaluator`), and what the evaluator's
delivery and consumer checks need to know about transactional records.

Same semantics as the Spark checks (`spark_analysis.checks.txn.checks`): the facts are gathered here from the
evaluator's parse (each transactional value's producer, transaction and first ack; the reads: polls and
`pipe.read`s that name a value, partition and offset), and `checks.txn.judge` turns them into the same verdicts,
summaries and evidence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.slo.stalls import Poll
from spark_analysis.checks.txn.judge import (
    EVIDENCE_ROWS,
    LOST_SAMPLE,
    SAMPLE_PAIRS,
    AbortedReads,
    LostCommits,
    PartialView,
    PartialViews,
    judge_aborted_read,
    judge_atomic_visibility,
    judge_lost_commit,
)
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.transactions import ABORTED, COMMITTED, TransactionIndex
from spark_analysis.result import CheckResult

Ack = tuple[float, int, str, int, int]
"""(t, seq, topic, partition, offset) of a value's first ack."""


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """A record of a transaction: its value, producer, transaction number and first ack (None: never acked)."""

    value: int
    producer: str
    txn: int
    ack: Ack | None


def hidden(index: TransactionIndex, record: TxnRecord | None) -> bool:
    """Whether a read_committed consumer need not return the record (its transaction is not committed)."""
    return record is not None and index.outcome(record.producer, record.txn) != COMMITTED


def _ack_row(r: TxnRecord) -> dict[str, Any]:
    assert r.ack is not None
    t, seq, topic, partition, offset = r.ack
    return {"seq": seq, "t": t, "topic": topic, "partition": partition, "offset": offset, "value": r.value}


def _poll_row(p: Poll) -> dict[str, Any]:
    return {"seq": p.seq, "t": p.t, "consumer": p.consumer, "group": p.who, "topic": p.topic,
            "partition": p.partition, "offset": p.offset, "value": p.value}


def _of(records: Mapping[int, TxnRecord], index: TransactionIndex, outcome: str) -> dict[int, TxnRecord]:
    return {v: r for v, r in records.items() if index.outcome(r.producer, r.txn) == outcome}


def aborted_reads(ctx: CheckContext, records: Mapping[int, TxnRecord], polls: Sequence[Poll]) -> AbortedReads:
    index = ctx.transactions
    aborted = _of(records, index, ABORTED)
    rc = [p for p in polls if p.committed_only]
    bad = sorted((p for p in rc if p.value in aborted), key=lambda p: p.seq)
    frontier: dict[tuple[str, int], int] = {}
    for p in rc:
        frontier[(p.topic, p.partition)] = max(frontier.get((p.topic, p.partition), p.offset), p.offset)
    topics = {topic for topic, _p in frontier}
    judged = 0
    for r in aborted.values():
        if r.ack is None:
            continue
        _t, _seq, topic, partition, offset = r.ack
        if (topic in topics) if ctx.drained else offset <= frontier.get((topic, partition), -1):
            judged += 1
    sample = [{**_poll_row(p), "producer": aborted[p.value].producer, "txn": aborted[p.value].txn}
              for p in bad[:EVIDENCE_ROWS] if p.value is not None]
    return AbortedReads(records=len(aborted), judged=judged, reads=len(bad), values_read=len({p.value for p in bad}),
                        sample=sample)


def partial_views(ctx: CheckContext, records: Mapping[int, TxnRecord], polls: Sequence[Poll]) -> PartialViews:
    index = ctx.transactions
    committed = _of(records, index, COMMITTED)
    rc = [p for p in polls if p.committed_only]
    frontier: dict[tuple[str, str, int], int] = {}
    seen: dict[tuple[str, str, int], list[Poll]] = defaultdict(list)
    polled: set[tuple[str, int]] = set()
    for p in rc:
        key = (p.who, p.topic, p.partition)
        frontier[key] = max(frontier.get(key, p.offset), p.offset)
        r = committed.get(p.value) if p.value is not None else None
        if r is not None:
            seen[(p.who, r.producer, r.txn)].append(p)
            polled.add((p.who, r.value))
    located: dict[tuple[str, int], list[TxnRecord]] = defaultdict(list)
    for r in committed.values():
        if r.ack is not None:
            located[(r.producer, r.txn)].append(r)
    broken: list[tuple[int, str, tuple[str, str, int], list[TxnRecord]]] = []
    for pair in seen:
        group, producer, txn = pair
        missed = []
        for r in located.get((producer, txn), ()):
            assert r.ack is not None
            _t, _seq, topic, partition, offset = r.ack
            past = frontier.get((group, topic, partition))
            if (group, r.value) not in polled and past is not None and past > offset:
                missed.append(r)
        if missed:
            missed.sort(key=lambda r: r.ack[1] if r.ack else 0)
            broken.append((missed[0].ack[1] if missed[0].ack else 0, group, pair, missed))
    if not broken:
        return PartialViews(pairs=len(seen))
    broken.sort(key=lambda b: (b[0], b[1]))
    sample = []
    for _first, _group, (group, producer, txn), missed in broken[:SAMPLE_PAIRS]:
        mine = sorted(seen[(group, producer, txn)], key=lambda p: p.seq)
        sample.append(PartialView(group=group, producer=producer, txn=txn, records=len(located[(producer, txn)]),
                                  saw=len({p.value for p in mine}), seen=[_poll_row(p) for p in mine],
                                  missed=[_ack_row(r) for r in missed]))
    return PartialViews(pairs=len(seen), broken_pairs=len(broken), broken_txns=len({b[2][1:] for b in broken}),
                        missed_records=sum(len(b[3]) for b in broken), sample=sample)


def lost_commits(ctx: CheckContext, records: Mapping[int, TxnRecord], polls: Sequence[Poll]) -> LostCommits:
    committed = _of(records, ctx.transactions, COMMITTED)
    polled_values = {p.value for p in polls}
    frontier: dict[tuple[str, int], int] = {}
    for p in polls:
        frontier[(p.topic, p.partition)] = max(frontier.get((p.topic, p.partition), p.offset), p.offset)
    topics = {topic for topic, _p in frontier}
    lost: list[TxnRecord] = []
    unseen = unpolled = 0
    for r in committed.values():
        if r.ack is None or r.value in polled_values:
            continue
        unpolled += 1
        _t, _seq, topic, partition, offset = r.ack
        if topic not in topics:
            continue
        if ctx.drained or offset <= frontier.get((topic, partition), -1):
            lost.append(r)
        else:
            unseen += 1
    by_tp: dict[tuple[str, int], int] = defaultdict(int)
    for r in lost:
        assert r.ack is not None
        by_tp[(r.ack[2], r.ack[3])] += 1
    lost.sort(key=lambda r: (r.ack[0], r.ack[1]) if r.ack else (0.0, 0))
    return LostCommits(
        records=len(committed), without_ack=sum(1 for r in committed.values() if r.ack is None),
        polled=sum(1 for v in committed if v in polled_values), lost=len(lost),
        lost_txns=len({(r.producer, r.txn) for r in lost}), unseen=unseen, unverifiable=unpolled - len(lost) - unseen,
        lost_by_tp=dict(by_tp),
        sample=[{**_ack_row(r), "producer": r.producer, "txn": r.txn} for r in lost[:LOST_SAMPLE]])


def txn_results(ctx: CheckContext, records: Mapping[int, TxnRecord], reads: Sequence[Poll]) -> list[CheckResult]:
    """`txn.aborted_read`, `txn.atomic_visibility` and `txn.lost_commit` (each computed only when the run has
    transactions of its kind; the judge answers the rest), from the records and the reads (polls and pipe.reads
    with a partition and an offset; those without a value are left out here)."""
    index = ctx.transactions
    polls = [p for p in reads if p.value is not None]
    counts = index.counts()
    return [
        judge_aborted_read(index, aborted_reads(ctx, records, polls) if counts[ABORTED] else AbortedReads(),
                           ctx.faults),
        judge_atomic_visibility(index, partial_views(ctx, records, polls) if counts[COMMITTED] else PartialViews(),
                                ctx.faults),
        judge_lost_commit(index, lost_commits(ctx, records, polls) if counts[COMMITTED] else LostCommits(),
                          ctx.faults),
    ]
