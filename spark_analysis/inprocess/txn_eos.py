"""`txn.zombie_fenced` and `txn.exactly_once_pipeline` in the in-process evaluator
(`spark_analysis.inprocess.evaluator`).

Same semantics as the Spark checks (`spark_analysis.checks.txn.eos`): the facts are gathered here from the
evaluator's parse (each written value's first write event, transaction, source, first ack and zombie flag; the
polls; the pipelines' pipe.reads), and `checks.txn.eos_judge` turns them into the same verdicts, summaries and
evidence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.slo.stalls import Poll
from spark_analysis.checks.txn.eos_judge import (
    EVIDENCE_ROWS,
    SAMPLE,
    DuplicateInput,
    OffsetClaim,
    PipelineFacts,
    ZombieWrites,
    committed_positions,
    judge_exactly_once_pipeline,
    judge_zombie_fenced,
    offset_claims,
)
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.transactions import ABORTED, COMMITTED, UNKNOWN, TransactionIndex
from spark_analysis.inprocess.txn import Ack
from spark_analysis.result import CheckResult

First = tuple[int, float, str, str, str | None]
"""(seq, t, type, producer, topic) of a value's first send/ack/send.error."""


@dataclass(frozen=True, slots=True)
class Written:
    """A value some producer wrote: its first write event, transaction (producer, txn) of its first event naming
    one, `source` (a pipeline's output: the input value), first ack, and whether a fenced client wrote it."""

    value: int
    first: First
    txn: tuple[str, int] | None = None
    source: int | None = None
    ack: Ack | None = None
    zombie: bool = False

    @property
    def producer(self) -> str:
        return self.txn[0] if self.txn is not None else self.first[3]


@dataclass(frozen=True, slots=True)
class PipeRead:
    """A pipe.read with a value, partition, offset and txn."""

    pipeline: str
    txn: int
    topic: str
    partition: int
    offset: int
    value: int
    seq: int
    t: float


def _clean(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if v is not None}


def _read_row(p: Poll, kind: str, w: Written) -> dict[str, Any]:
    return _clean({"type": kind, "seq": p.seq, "t": p.t, "consumer": p.consumer, "group": p.who, "topic": p.topic,
                   "partition": p.partition, "offset": p.offset, "value": p.value,
                   "producer": w.txn[0] if w.txn else w.first[3], "txn": w.txn[1] if w.txn else None})


def zombie_writes(written: Mapping[int, Written], polls: Sequence[Poll], pipe_polls: Sequence[Poll]) -> ZombieWrites:
    """`polls`: the polls; `pipe_polls`: the pipe.reads (both with a partition and an offset)."""
    zombies = {v: w for v, w in written.items() if w.zombie}
    if not zombies:
        return ZombieWrites()
    reads = sorted([*((p, "poll") for p in polls if p.committed_only and p.value in zombies),
                    *((p, "pipe.read") for p in pipe_polls if p.value in zombies)], key=lambda r: r[0].seq)
    return ZombieWrites(records=len(zombies), acked=sum(1 for w in zombies.values() if w.ack is not None),
                        reads=len(reads), values_read=len({p.value for p, _k in reads}),
                        sample=[_read_row(p, kind, zombies[int(p.value or 0)]) for p, kind in reads[:EVIDENCE_ROWS]])


@dataclass(frozen=True, slots=True)
class _Input:
    at: tuple[int, int, float, str, int, int]
    """(0 for an ack, 1 for a pipe.read; seq, t, topic, partition, offset)."""
    value: int
    producer: str | None
    txn: int | None
    outcome: str | None

    @property
    def visible(self) -> bool:
        return self.outcome is None or self.outcome == COMMITTED

    def row(self) -> dict[str, Any]:
        prio, seq, t, topic, partition, offset = self.at
        return _clean({"type": "ack" if prio == 0 else "pipe.read", "seq": seq, "t": t, "topic": topic,
                       "partition": partition, "offset": offset, "value": self.value, "producer": self.producer,
                       "txn": self.txn})


@dataclass(frozen=True, slots=True)
class _Output:
    value: int
    txn: int | None
    outcome: str | None
    source: int | None
    row: dict[str, Any]


def _output(pipeline: str, w: Written, index: TransactionIndex) -> _Output:
    if w.ack is not None:
        t, seq, topic, partition, offset = w.ack
        where: dict[str, Any] = {"type": "ack", "seq": seq, "t": t, "topic": topic, "partition": partition,
                                 "offset": offset}
    else:
        seq, t, kind, _producer, first_topic = w.first
        where = {"type": kind, "seq": seq, "t": t, "topic": first_topic}
    txn = w.txn[1] if w.txn is not None else None
    row = _clean({**where, "value": w.value, "producer": pipeline, "txn": txn, "input_value": w.source})
    return _Output(w.value, txn, index.outcome(*w.txn) if w.txn is not None else None, w.source, row)


def _inputs(pipeline: str, topics: set[str], written: Mapping[int, Written], reads: Sequence[PipeRead],
            index: TransactionIndex) -> dict[int, _Input]:
    at: dict[int, tuple[int, int, float, str, int, int]] = {}
    for w in written.values():
        if w.ack is not None and w.ack[2] in topics:
            t, seq, topic, partition, offset = w.ack
            at[w.value] = (0, seq, t, topic, partition, offset)
    for r in reads:
        here = (1, r.seq, r.t, r.topic, r.partition, r.offset)
        at[r.value] = min(at.get(r.value, here), here)
    out = {}
    for value, where in at.items():
        upstream = written.get(value)
        txn = upstream.txn if upstream is not None else None
        out[value] = _Input(where, value, txn[0] if txn else None, txn[1] if txn else None,
                            index.outcome(*txn) if txn else None)
    return out


def _first_visible(inputs: Sequence[_Input], lo: int, hi: int) -> _Input | None:
    """The visible input at the smallest offset in [lo, hi) (ties: as Spark orders the rows)."""
    inside = [i for i in inputs if i.visible and lo <= i.at[5] < hi]
    return min(inside, key=lambda i: (i.at[5], "ack" if i.at[0] == 0 else "pipe.read", i.at[1])) if inside else None


def _pipeline(pipeline: str, written: Mapping[int, Written], reads: Sequence[PipeRead],
              index: TransactionIndex) -> PipelineFacts:
    positions = committed_positions(index, pipeline)
    topics = {r.topic for r in reads} | {topic for (topic, _p) in positions}
    outputs = [_output(pipeline, w, index) for w in written.values() if w.producer == pipeline]
    inputs = _inputs(pipeline, topics, written, reads, index)
    committed = sorted((o for o in outputs if o.outcome == COMMITTED), key=lambda o: o.row["seq"])
    by_source: dict[int, list[_Output]] = defaultdict(list)
    for o in committed:
        if o.source is not None:
            by_source[o.source].append(o)
    undecided = {r.value for r in reads if index.outcome(pipeline, r.txn) == UNKNOWN}
    undecided |= {o.source for o in outputs if o.outcome == UNKNOWN and o.source is not None}
    counts: dict[str, int] = defaultdict(int)
    lost: list[tuple[_Input, int]] = []
    for i in inputs.values():
        _prio, _seq, _t, topic, partition, offset = i.at
        position = positions.get((topic, partition))
        below = position is not None and offset < position
        has, u = i.value in by_source, i.value in undecided
        counts["judged"] += i.visible and below and (has or not u)
        counts["processed"] += i.visible and below and has
        counts["unknown_outcome"] += not has and u
        counts["upstream_unknown"] += below and i.outcome == UNKNOWN
        counts["beyond"] += i.visible and not below and not has and not u
        if i.visible and below and not has and not u:
            assert position is not None
            lost.append((i, position))
    lost.sort(key=lambda x: x[0].at[1])
    dups = sorted((outs for outs in by_source.values() if len(outs) >= 2), key=lambda outs: outs[0].row["seq"])
    aborted = [(o, inputs[o.source]) for o in committed
               if o.source is not None and o.source in inputs and inputs[o.source].outcome == ABORTED]
    read_max: dict[tuple[int, str, int], int] = {}
    for r in reads:
        key = (r.txn, r.topic, r.partition)
        read_max[key] = max(read_max.get(key, r.offset), r.offset)
    bad, to_check = offset_claims(index, pipeline, read_max)
    by_tp: dict[tuple[str, int], list[_Input]] = defaultdict(list)
    for i in inputs.values():
        by_tp[(i.at[3], i.at[4])].append(i)
    for c in to_check:
        assert c.committed is not None
        hit = _first_visible(by_tp.get((c.topic, c.partition), []), c.read_up_to + 1, c.committed)
        if hit is not None:
            bad.append(OffsetClaim(c.txn, c.topic, c.partition, c.committed, c.read_up_to, hit.row()))
    bad.sort(key=lambda c: (c.txn, c.topic, c.partition))
    return PipelineFacts(
        pipeline=pipeline, reads=len(reads), inputs_read=len({r.value for r in reads}),
        outputs_committed=len(committed), inputs_judged=counts["judged"], processed=counts["processed"],
        unknown_outcome=counts["unknown_outcome"], upstream_unknown=counts["upstream_unknown"],
        beyond_committed=counts["beyond"], duplicates=len(dups),
        duplicate_sample=[DuplicateInput(source=int(outs[0].source or 0), outputs=[o.row for o in outs],
                                         input=inputs[outs[0].source].row() if outs[0].source in inputs else None)
                          for outs in dups[:SAMPLE]],
        lost=len(lost), lost_sample=[{**i.row(), "committed_offset": c} for i, c in lost[:SAMPLE]],
        offset_mismatches=len(bad), offset_sample=bad[:SAMPLE], aborted_outputs=len(aborted),
        aborted_sample=[(o.row, i.row()) for o, i in aborted[:SAMPLE]])


def eos_results(ctx: CheckContext, written: Mapping[int, Written], polls: Sequence[Poll],
                pipe_polls: Sequence[Poll], reads: Sequence[PipeRead]) -> list[CheckResult]:
    """`txn.zombie_fenced` and `txn.exactly_once_pipeline` from the written values, the polls, the pipe.reads as
    polls (`pipe_polls`: read_committed reads of zombie records) and as `PipeRead`s (the pipelines)."""
    index = ctx.transactions
    attempts = ctx.rows("txn.zombie")
    zombie = zombie_writes(written, polls, pipe_polls) if attempts or index.any else ZombieWrites()
    by_pipe: dict[str, list[PipeRead]] = defaultdict(list)
    for r in reads:
        by_pipe[r.pipeline].append(r)
    facts = [_pipeline(p, written, by_pipe[p], index) for p in sorted(by_pipe)]
    return [judge_zombie_fenced(index, attempts, zombie, ctx.faults),
            judge_exactly_once_pipeline(index, facts, ctx.faults)]
