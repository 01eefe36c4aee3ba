"""A single-process, pure-Python evaluator of every check, without Spark.

For the checks that read the bulk events in Spark it gathers their facts from one parse of the history
(`spark_analysis.inprocess.lines.parse`, which reads each line as Spark's JSON reader does, under the same
damaged-line policy) and hands them to the judges the Spark checks call: delivery (`checks.delivery.judge`,
`checks.delivery.placement_judge`), consumer (`checks.consumer.judge`), commit order (`checks.group.judge`), the
transaction
checks (`spark_analysis.inprocess.txn` and `spark_analysis.inprocess.txn_eos` with `checks.txn.judge` and
`checks.txn.eos_judge`), the client-side stall SLOs (`spark_analysis.checks.slo.stalls` with `checks.slo.stall`). So
the rule of each check, and which anomalies the run's configuration permits (`checks.shared.permits`), is written once;
the events a failure shows are read again from the history (`inprocess.lines.events_at`), as Spark fetches them
by seq. The checks that already run in Python on collected rows (controller, quorum, partition, group, the other
SLOs, and `group.offsets_kept`, whose Spark path only reduces the commits and polls in Spark) run as they are, on
the parse's rows. Like `verify_run`, it answers the checks that apply to the run's cluster mode (`RunInfo.applies`),
then applies the damaged-history rule (`checks.shared.damage`).

It exists for two reasons: the benchmark compares Spark against it on the same file, and the tests cross-check
that both paths reach the same statuses, summaries, metrics and evidence. The facts are those the Spark plans
gather (see the check modules), with one known difference: a value acked on two topics is placed on the topic of
its first ack here, on the least topic hash in Spark.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from spark_analysis.checks import ALL_CHECKS, DAMAGE
from spark_analysis.checks.consumer.judge import (
    EVIDENCE_PAIRS,
    NonmonotonicPolls,
    PollPair,
    PollPairs,
    PollSkips,
    judge_nonmonotonic_poll,
    judge_poll_skip,
)
from spark_analysis.checks.delivery.judge import (
    ATTRIBUTION_ROWS,
    DUPLICATE_SAMPLE,
    LOST_COUNTERS,
    Duplicates,
    DuplicateSample,
    LostWrites,
    WriteCounts,
    judge_duplicate,
    judge_lost_write,
)
from spark_analysis.checks.delivery.placement_judge import SAMPLE as PLACEMENT_SAMPLE
from spark_analysis.checks.delivery.placement_judge import (
    KeyOrderFacts,
    OffsetSample,
    ReorderedWrite,
    Reordering,
    TwoValued,
    TwoValuedOffsets,
    judge_inconsistent_offsets,
    judge_key_order,
)
from spark_analysis.checks.group.judge import (
    COMMIT_FIELDS,
    SAMPLE,
    CommitOrder,
    CommitRegressions,
    RegressedCommit,
    judge_commit_monotonic,
)
from spark_analysis.checks.shared.damage import apply_damage_rule
from spark_analysis.checks.shared.permits import (
    Reason,
    Weighed,
    ack_permit,
    mixed,
    once_permit,
    order_permit,
    permit_of,
    tally,
    truncation_permit,
    unclean_partitions,
)
from spark_analysis.checks.slo.stall import ReadUnavailable, WriteUnavailable, python_read, python_write
from spark_analysis.checks.slo.stalls import poll_of
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.facts.faults import build_fault_index
from spark_analysis.facts.transactions import (
    ABORTED,
    COMMITTED,
    UNKNOWN,
    committed_only,
    pipeline_name,
)
from spark_analysis.ingest.load import HistoryDamage
from spark_analysis.ingest.runinfo import RunInfo, load_run_info
from spark_analysis.inprocess.lines import (
    ACKED,
    DEFINITE,
    ERRORED,
    POLLED,
    SENT,
    WEAK,
    Key,
    Location,
    Parsed,
    Value,
    as_int,
    events_at,
    events_of_values,
    parse,
    spark_row,
)
from spark_analysis.inprocess.txn import TxnRecord, txn_results
from spark_analysis.inprocess.txn_eos import PipeRead, Written, eos_results
from spark_analysis.result import Check as CheckProtocol
from spark_analysis.result import CheckResult, cannot_judge, run_check

INPROCESS_CHECKS: tuple[str, ...] = tuple(c.id for c in ALL_CHECKS)
"""Every check, in registry order (`inprocess_checks` leaves out those not applying to the run's mode)."""

T = TypeVar("T")
Facts = TypeVar("Facts")


def _weighed(items: Sequence[T], permit: Callable[[T], str | None],
             facts: Callable[[Sequence[T]], Facts]) -> Weighed[Facts]:
    """`items` (anomalies, in their sample order) weighed one by one, as `frames.weighed` weighs a frame."""
    permits = [permit(item) for item in items]
    anomalies = tally(permits)
    violations = [item for item, p in zip(items, permits, strict=True) if p is None]
    return Weighed(facts(items), anomalies, facts(violations) if mixed(anomalies) else None)


def _permit(ctx: CheckContext, reason: Reason, value: int | None, topic: str | None,
            partition: int | None) -> str | None:
    return permit_of(ctx, reason, value, (topic, partition) if topic is not None and partition is not None else None)


def _lost(st: Parsed, ctx: CheckContext) -> LostWrites:
    if not st.counts["poll"] and not st.counts["pipe.read"]:
        return LostWrites(readers=False)
    index = ctx.transactions
    n = dict.fromkeys(LOST_COUNTERS, 0)
    candidates: list[Value] = []
    for v in st.values.values():
        b, aborted, undecided = v.bits, False, False
        if v.txns is not None:
            outcomes = {index.outcome(*pt) for pt in v.txns}
            aborted, undecided = ABORTED in outcomes, UNKNOWN in outcomes
        n["txn_aborted_records"] += aborted
        n["txn_unknown_records"] += undecided and not aborted
        n["polled"] += bool(b & POLLED)
        n["unfinished"] += b & (SENT | ACKED | ERRORED) == SENT
        n["indefinite_errors"] += (b & (ERRORED | DEFINITE | ACKED) == ERRORED) and not aborted and not undecided
        if not b & ACKED or aborted or undecided:
            continue
        n["acked"] += 1
        if b & POLLED:
            continue
        if b & WEAK:
            n["unpolled_acks_weaker_than_all"] += 1
            continue
        n["acked_never_polled"] += 1
        if v.ack_topic in st.polled_topics:  # only topics some consumer reads can tell lost from unread
            candidates.append(v)
    counts = WriteCounts(**n)
    if not counts.acked_never_polled:
        return LostWrites(counts=counts)

    def read_past(v: Value) -> bool:
        """A consumer read at or past its offset on its partition."""
        if v.ack_offset is None or v.ack_partition is None:
            return False
        return v.ack_offset <= st.frontier.get((str(v.ack_topic), v.ack_partition), -1)

    # A completed run whose groups caught up in the drain: every acked write never polled is lost.
    lost = [v for v in candidates if ctx.drained or read_past(v)]
    if not lost:
        return LostWrites(counts=counts, unseen=len(candidates))
    by_tp: dict[tuple[str, int], int] = defaultdict(int)
    for v in lost:
        by_tp[(str(v.ack_topic), v.ack_partition if v.ack_partition is not None else -1)] += 1
    seqs = [v.ack_seq for v in sorted(lost, key=lambda v: (v.ack_t, v.ack_seq))[:ATTRIBUTION_ROWS]]
    rows = events_at(st.path, seqs)
    return LostWrites(counts=counts, lost=len(lost), unseen=len(candidates) - len(lost), lost_by_tp=dict(by_tp),
                      sample=[rows[s] for s in seqs if s in rows], unclean=unclean_partitions(ctx))


def _duplicates(st: Parsed, ctx: CheckContext) -> Duplicates:
    seen = sum(1 for v in st.values.values() if v.locs)
    dups = sorted(val for val, v in st.values.items() if len(v.locs) > 1)
    if not dups:
        return Duplicates(seen)

    def permit(val: int) -> str | None:
        v = st.values[val]
        return _permit(ctx, once_permit, val, v.ack_topic, v.ack_partition)

    def sample(values: Sequence[int]) -> DuplicateSample:
        return DuplicateSample(len(values), events_of_values(st.path, ("ack", "poll"), values[:DUPLICATE_SAMPLE]))

    return Duplicates(seen, _weighed(dups, permit, sample))


def _two_valued(st: Parsed, ctx: CheckContext) -> TwoValuedOffsets:
    bad = sorted(((TwoValued(part, off, min(vals), max(vals)), topic)
                  for (topic, part, off), vals in st.at_offset.items() if len(vals) > 1), key=lambda b: b[0].order())
    if not bad:
        return TwoValuedOffsets()

    def permit(b: tuple[TwoValued, str]) -> str | None:
        (loc, topic) = b
        return (_permit(ctx, ack_permit, loc.vmin, topic, loc.partition)
                or _permit(ctx, ack_permit, loc.vmax, topic, loc.partition))

    def sample(found: Sequence[tuple[TwoValued, str]]) -> OffsetSample:
        shown = [loc for loc, _topic in found[:PLACEMENT_SAMPLE]]
        values = {v for loc in shown for v in (loc.vmin, loc.vmax)}
        return OffsetSample(len(found), shown, events_of_values(st.path, ("ack", "poll"), values))

    return TwoValuedOffsets(_weighed(bad, permit, sample))


def _key_order(st: Parsed, ctx: CheckContext) -> KeyOrderFacts:
    per_key: dict[tuple[Key, str, int | None], list[tuple[int, int, int, int]]] = defaultdict(list)
    for val, v in st.values.items():
        if v.key is not None and v.key_ack is not None and v.key == v.key_ack[4]:
            off, seq, topic, part, key = v.key_ack
            per_key[(key, topic, part)].append((v.key_seq, off, seq, val))
    bad: list[tuple[ReorderedWrite, int, str, int | None]] = []
    for (_key, topic, part), items in per_key.items():
        items.sort()
        for (_s0, o0, a0, _v0), (s1, o1, a1, v1) in itertools.pairwise(items):
            if o1 <= o0:
                bad.append((ReorderedWrite(s1, o1, o0, a1, a0), v1, topic, part))
    if not bad:
        return KeyOrderFacts()
    bad.sort(key=lambda b: b[0].send_seq)

    def sample(found: Sequence[tuple[ReorderedWrite, int, str, int | None]]) -> Reordering:
        shown = [r for r, _v, _t, _p in found[:PLACEMENT_SAMPLE]]
        acks = events_at(st.path, [s for r in shown for s in (r.ack_seq, r.prev_ack_seq)])
        return Reordering(len(found), shown, acks)

    return KeyOrderFacts(_weighed(bad, lambda b: _permit(ctx, order_permit, b[1], b[2], b[3]), sample))


def _poll_pairs(ctx: CheckContext, pairs: Sequence[tuple[Row, Row, int | None]]) -> Weighed[PollPairs]:
    """Anomalous (previous poll, poll, next known offset) triples, by the poll's seq, weighed and sampled."""
    def sample(found: Sequence[tuple[Row, Row, int | None]]) -> PollPairs:
        shown = found[:EVIDENCE_PAIRS]
        return PollPairs(len(found), [PollPair(b["seq"], a["seq"], int(b["offset"]), int(a["offset"]), nxt)
                                      for a, b, nxt in shown],
                         {ev["seq"]: spark_row(ev) for a, b, _n in shown for ev in (a, b)})

    def permit(pair: tuple[Row, Row, int | None]) -> str | None:
        poll = pair[1]
        return _permit(ctx, truncation_permit, None, str(poll.get("topic")), as_int(poll.get("partition")))

    return _weighed(sorted(pairs, key=lambda p: p[1]["seq"]), permit, sample)


def _nonmonotonic(st: Parsed, ctx: CheckContext) -> NonmonotonicPolls:
    polls = st.counts["poll"]
    if not st.nonmonotonic:
        return NonmonotonicPolls(polls)
    return NonmonotonicPolls(polls, _poll_pairs(ctx, [(a, b, None) for a, b in st.nonmonotonic]))


def _skips(st: Parsed, ctx: CheckContext) -> PollSkips:
    polls, gaps = st.counts["poll"], len(st.gaps)
    index = ctx.transactions
    known: dict[tuple[str, int], list[int]] = {}

    def visible(loc: Location) -> bool:
        """Holds some record a read_committed consumer must return (one outside aborted and unknown transactions)."""
        return loc in st.valueless or any(index.outcome(*txn) == COMMITTED if (txn := st.values[val].txn) else True
                                          for val in st.at_offset.get(loc, ()))

    skips: list[tuple[Row, Row, int | None]] = []
    for a, b in st.gaps:
        topic, part = str(b.get("topic")), as_int(b.get("partition"))
        if part is None:
            continue
        offsets = known.get((topic, part))
        if offsets is None:
            offsets = known[(topic, part)] = sorted(st.known[(topic, part)])
        hidden_ok = index.any and committed_only(b.get("isolation"))
        offset = int(b["offset"])
        for o in offsets[bisect.bisect_right(offsets, int(a["offset"])):]:
            if not hidden_ok or visible((topic, part, o)):
                if o < offset:
                    skips.append((a, b, o))
                break
    return PollSkips(polls, gaps, _poll_pairs(ctx, skips) if skips else None)


def _commit_regressions(st: Parsed, ctx: CheckContext) -> CommitOrder:
    last: dict[tuple[object, ...], Row] = {}
    regressions: list[RegressedCommit] = []
    for c in st.commits:
        key = (c.get("group"), c.get("topic"), c.get("partition"), c.get("generation"))
        prev = last.get(key)
        if prev is not None and c["offset"] < prev["offset"]:
            regressions.append(RegressedCommit({k: c.get(k) for k in COMMIT_FIELDS}, int(prev["seq"]),
                                               prev.get("member"), int(prev["offset"])))
        last[key] = c
    total = st.counts["commit"]
    if not regressions:
        return CommitOrder(total)

    def permit(r: RegressedCommit) -> str | None:
        return _permit(ctx, truncation_permit, None, str(r.commit.get("topic")), as_int(r.commit.get("partition")))

    return CommitOrder(total, _weighed(regressions, permit,
                                       lambda found: CommitRegressions(total, len(found), found[:SAMPLE])))


@dataclass
class _Computed:
    """A check whose answer the in-process evaluator computes itself, run through `run_check` (same `needs` rule)."""

    id: str
    family: str
    needs: frozenset[str]
    compute: Callable[[CheckContext], CheckResult]

    def run(self, ctx: CheckContext) -> CheckResult:
        return self.compute(ctx)


def _stall_checks(st: Parsed, ctx: CheckContext) -> list[CheckResult]:
    """`slo.write_unavailable` and `slo.read_unavailable` from the parse's outcome and poll tuples."""
    send_min: dict[int, float] = {}
    for o in st.outcomes:
        if o.latency_ms is None and o.value is not None:
            v = st.values.get(o.value)
            if v is not None and v.send_t is not None:
                send_min[o.value] = v.send_t
    pending = sum(1 for v in st.values.values() if v.bits & (SENT | ACKED | ERRORED) == SENT)
    acks = [o for o in st.outcomes if o.is_ack]
    checks: list[CheckProtocol] = [
        _Computed(WriteUnavailable.id, WriteUnavailable.family, WriteUnavailable.needs,
                  lambda c: python_write(c, st.outcomes, send_min, pending)),
        _Computed(ReadUnavailable.id, ReadUnavailable.family, ReadUnavailable.needs,
                  lambda c: python_read(c, acks, st.polls)),
    ]
    return [run_check(check, ctx) for check in checks]


def _bulk_checks(st: Parsed, ctx: CheckContext) -> list[CheckResult]:
    """The delivery, consumer and commit-order checks: this parse's facts, the Spark checks' judges."""
    faults = ctx.faults
    return [judge_lost_write(_lost(st, ctx), faults), judge_duplicate(_duplicates(st, ctx), faults),
            judge_inconsistent_offsets(_two_valued(st, ctx), faults), judge_key_order(_key_order(st, ctx), faults),
            judge_nonmonotonic_poll(_nonmonotonic(st, ctx), faults), judge_poll_skip(_skips(st, ctx), faults),
            judge_commit_monotonic(_commit_regressions(st, ctx), faults)]


def inprocess_damage(history: Path) -> HistoryDamage:
    """What the in-process evaluator skips in `history`, counted as `spark_analysis.ingest.load.load_history` counts
    it."""
    st = parse(Path(history))
    return st.damage.history_damage(st.lines)


def _own_or_run(check: CheckProtocol, own: dict[str, CheckResult], ctx: CheckContext) -> CheckResult:
    """This module's result for `check`, under `run_check`'s `cannot_judge` rule; else `run_check` itself."""
    if check.id not in own:
        return run_check(check, ctx)
    return cannot_judge(check, ctx) or own[check.id]


def inprocess_checks(run_dir: Path, history: Path | None = None) -> list[CheckResult]:
    """Run INPROCESS_CHECKS (those that apply to the run's cluster mode, in registry order) on
    `run_dir/history.jsonl` in this process, without Spark; the delivery and consumer checks answer under the
    damaged-history rule, as `verify_run` has them."""
    run_dir = Path(run_dir)
    st = parse(history or run_dir / "history.jsonl")
    damage = st.damage.history_damage(st.lines)
    run: RunInfo = load_run_info(run_dir)
    small_by_type: dict[str, list[Row]] = defaultdict(list)
    for ev in st.small:
        small_by_type[ev["type"]].append(spark_row(ev))

    def provide(types: tuple[str, ...]) -> list[Row]:
        rows = [e for t in types for e in small_by_type.get(t, ())]
        if "commit" in types:
            rows += st.commits
        if "poll" in types:  # the polls with an offset, as `group.offsets_kept` reads them
            rows += [{"type": "poll", "seq": p.seq, "t": p.t, "consumer": p.consumer, "group": p.who,
                      "topic": p.topic, "partition": p.partition, "offset": p.offset, "value": p.value}
                     for p in st.polls]
        return sorted(rows, key=lambda e: e["seq"])

    ctx = CheckContext(run=run, type_counts=dict(st.counts), end_t=st.end_t, rows_provider=provide,
                       skipped_lines=st.skipped, damage=damage)
    ctx._faults = build_fault_index(provide(("fault.start", "fault.end")))
    out = _bulk_checks(st, ctx)
    out.extend(_stall_checks(st, ctx))
    records = {val: TxnRecord(val, v.txn[0], v.txn[1], v.ack)
               for val, v in st.values.items() if v.txn is not None}
    located = [ev for ev in st.small
               if ev["type"] == "pipe.read" and ev.get("partition") is not None and ev.get("offset") is not None]
    pipe_reads = [poll_of(ev, float(ev.get("t") or 0.0), int(ev["seq"])) for ev in located]
    out.extend(txn_results(ctx, records, st.polls + pipe_reads))
    written = {val: Written(val, v.first, v.txn, v.source, v.ack, v.zombie)
               for val, v in st.values.items() if v.first is not None}
    pipelines = [PipeRead(pipeline_name(ev.get("pipeline"), ev.get("src")), int(ev["txn"]), str(ev["topic"]),
                          int(ev["partition"]), int(ev["offset"]), int(ev["value"]), int(ev["seq"]),
                          float(ev.get("t") or 0.0))
                 for ev in located if all(ev.get(k) is not None for k in ("txn", "topic", "value"))]
    out.extend(eos_results(ctx, written, st.polls, [p for p in pipe_reads if p.value is not None], pipelines))
    own = {r.check_id: r for r in out}
    # The other checks read only small events: they run as they are on this parse's rows. Missing inputs
    # answer as `run_check` has every check answer them (unknown), this module's own checks included.
    results = [_own_or_run(c, own, ctx) for c in ALL_CHECKS if run.applies(c.id)]
    return apply_damage_rule(results, damage, ctx.faults, DAMAGE)
