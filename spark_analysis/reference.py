"""A single-process, pure-Python implementation of every check: its own for the checks that read the bulk events in
Spark (delivery, consumer, commit order, the transaction checks: `spark_analysis.reference_txn` and
`spark_analysis.reference_txn_eos`, and the
client-side stall SLOs `slo.write_unavailable` and `slo.read_unavailable`: `spark_analysis.reference_stall`), and
the checks that already run in Python on collected rows (controller, quorum, partition, group, the other SLOs)
reused as they are, fed from this module's parse instead of Spark (a line is read as Spark reads it:
`spark_analysis.reference_lines`). `group.offsets_kept` runs as it is too, on the commits and polls this module
keeps (its Spark path only reduces them in Spark). Like `verify_run`, it answers the checks that apply to the run's
cluster mode (`RunInfo.applies`).

It exists for two reasons: the benchmark compares Spark against it on the same file, and the
tests cross-check that both reach the same statuses on the fixtures. Same semantics as the Spark
checks (see their modules).

Same damaged-line policy as `spark_analysis.load` too: a line that is not a complete JSON object
(torn), has no `type` (untyped), or has a field of the wrong JSON type for `HISTORY_SCHEMA`
(ill-typed: `"value": "not-a-number"`, a float offset, a scalar `isr`, a non-integer `leader` outside
`group.state`) is skipped and counted, never read as a half-event; the delivery and consumer checks
then answer under `checks.delivery_damage`'s rule. The types follow what Spark's JSON reader accepts
(a double also takes the strings `NaN`/`Infinity`, a string column any JSON value, an array column
nulls; blank lines are not lines; text after a complete object is ignored; the columns no check reads
are not checked). Known differences: a key given twice counts once here (the last value; Spark checks
both), and a bulk event's field outside Arrow's columns is not checked by Spark when Arrow parses its
chunk (`arrow_split`), while it is here.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.history.jsonl import iter_lines
from spark_analysis.checks import ALL_CHECKS
from spark_analysis.checks.common import plural, tp_label
from spark_analysis.checks.delivery import NO_READS, lost_summary
from spark_analysis.checks.delivery_damage import apply_damage_rule
from spark_analysis.checks.slo_stall import ReadUnavailable, WriteUnavailable, python_read, python_write
from spark_analysis.context import CheckContext, Row
from spark_analysis.faults import build_fault_index
from spark_analysis.json_read import damage_kind, is_double, json_object, json_text, type_text
from spark_analysis.load import HistoryDamage
from spark_analysis.reference_lines import Damage, spark_row
from spark_analysis.reference_stall import Outcome, Poll, outcome_of, poll_of
from spark_analysis.reference_txn import TxnRecord, txn_results
from spark_analysis.reference_txn_eos import PipeRead, Written, eos_results
from spark_analysis.result import Check as CheckProtocol
from spark_analysis.result import CheckResult, failed, passed, run_check, unknown
from spark_analysis.runinfo import RunInfo, load_run_info
from spark_analysis.schema import BULK_TYPES
from spark_analysis.transactions import (
    ABORTED,
    COMMITTED,
    UNKNOWN,
    TransactionIndex,
    committed_only,
    pipeline_name,
    producer_name,
)

REFERENCE_CHECKS: tuple[str, ...] = tuple(c.id for c in ALL_CHECKS)
"""Every check, in registry order (`reference_checks` leaves out those not applying to the run's mode)."""


@dataclass
class _Value:
    sent: bool = False
    send_seq: int = -1
    strong: bool = True
    pk: tuple[str, str] | None = None
    ack: tuple[float, int, str, int, int] | None = None
    errored: bool = False
    definite: bool = False
    polled: bool = False
    locs: set[tuple[str, int, int]] = field(default_factory=set)
    send_t: float | None = None
    outcome: bool = False
    txn: tuple[str, int] | None = None
    """(producer, txn) of a transactional record (its first event that names a transaction)."""
    first: tuple[int, float, str, str, str | None] | None = None
    """(seq, t, type, producer, topic) of its first send/ack/send.error."""
    source: int | None = None
    """A pipeline's output record: the input value it was made from (its first write event naming one)."""
    zombie: bool = False
    """Written by a fenced (zombie) transactional client: some write event has `zombie: true`."""


@dataclass
class _State:
    values: dict[int, _Value] = field(default_factory=dict)
    at_offset: dict[tuple[str, int, int], set[int]] = field(default_factory=dict)
    frontier: dict[tuple[str, int], int] = field(default_factory=dict)
    known: dict[tuple[str, int], set[int]] = field(default_factory=lambda: defaultdict(set))
    last_poll: dict[tuple[str, str, int], tuple[int, Row]] = field(default_factory=dict)
    nonmonotonic: list[tuple[Row, Row]] = field(default_factory=list)
    gaps: list[tuple[Row, Row]] = field(default_factory=list)
    last_commit: dict[tuple[str, str, int, int], Row] = field(default_factory=dict)
    commit_back: list[tuple[Row, Row]] = field(default_factory=list)
    commits: list[Row] = field(default_factory=list)
    """Every commit with an offset (`group.offsets_kept` reads them with the polls)."""
    small: list[Row] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    """Acks and send.errors that name a partition (the stall checks)."""
    polls: list[Poll] = field(default_factory=list)
    """Polls with a partition and an offset (the stall checks)."""
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    end_t: float = 0.0
    lines: int = 0
    damage: Damage = field(default_factory=Damage)

    @property
    def skipped(self) -> int:
        return sum(self.damage.by_kind.values())


def _parse(path: Path) -> _State:
    st = _State()
    for line in iter_lines(path, decode=json_object):  # a blank line is no line (Spark's reader skips it too)
        seq, text, ev = line.number - 1, line.text, line.record
        st.lines += 1
        if ev is None:  # not one JSON object (Spark: `_corrupt_record`)
            st.damage.add(seq, text, "torn", None, None)
            continue
        damaged = damage_kind(ev)
        if damaged is not None:
            t = ev.get("t")
            st.damage.add(seq, text, damaged, type_text(ev.get("type")),
                          float(t) if t is not None and is_double(t) else None)
            continue
        ev["seq"] = seq
        kind: str = ev["type"] if type(ev["type"]) is str else json_text(ev["type"])
        ev["type"] = kind
        st.counts[kind] += 1
        t = float(ev.get("t") or 0.0)
        st.end_t = max(st.end_t, t)
        if kind not in BULK_TYPES:
            st.small.append(ev)
            if kind == "pipe.read":
                _pipe_read(st, ev)
            if kind in ("assign", "revoke"):
                for tp in ev.get("partitions") or ():
                    if tp and len(tp) >= 2 and str(tp[1]).lstrip("-").isdigit():  # [topic, partition]
                        st.last_poll.pop((str(ev.get("src")), str(tp[0]), int(tp[1])), None)
            continue
        if kind == "commit":
            key = (str(ev.get("group")), str(ev.get("topic")), int(ev.get("partition", -1)),
                   int(ev.get("generation") or -1))
            prev = st.last_commit.get(key)
            if prev is not None and ev.get("offset") is not None and ev["offset"] < prev["offset"]:
                st.commit_back.append((prev, ev))
            st.last_commit[key] = ev
            if ev.get("offset") is not None:
                st.commits.append(spark_row(ev))
            continue
        if kind in ("ack", "send.error"):
            if ev.get("partition") is not None:
                st.outcomes.append(outcome_of(ev, t, seq))
        elif kind == "poll" and ev.get("offset") is not None and ev.get("partition") is not None:
            st.polls.append(poll_of(ev, t, seq))
        value = ev.get("value")
        if value is None:
            continue
        v = st.values.get(value)
        if v is None:
            v = st.values[value] = _Value()
        if kind in ("ack", "send.error"):
            v.outcome = True
        if kind != "poll":
            if v.txn is None and ev.get("txn") is not None:
                v.txn = (producer_name(ev.get("producer"), ev.get("src")), int(ev["txn"]))
            if v.first is None:
                topic = ev.get("topic")
                v.first = (seq, t, kind, producer_name(ev.get("producer"), ev.get("src")),
                           None if topic is None else json_text(topic))
            if v.source is None and ev.get("input_value") is not None:
                v.source = int(ev["input_value"])
            v.zombie = v.zombie or ev.get("zombie") is True
        if kind == "send":
            v.sent = True
            if v.send_t is None or t < v.send_t:
                v.send_t = t
            if v.send_seq < 0:
                v.send_seq = seq
            v.strong = str(ev.get("acks", "all")).lower() in ("all", "-1")
            if ev.get("key") is not None:
                v.pk = (str(ev.get("producer")), str(ev["key"]))
        elif kind == "send.error":
            v.errored = True
            v.definite = v.definite or bool(ev.get("definite"))
        elif kind in ("ack", "poll") and ev.get("offset") is not None:
            topic, part, off = str(ev.get("topic")), int(ev["partition"]), int(ev["offset"])
            loc = (topic, part, off)
            v.locs.add(loc)
            st.at_offset.setdefault(loc, set()).add(value)
            st.known[(topic, part)].add(off)
            if kind == "ack":
                if v.ack is None:
                    v.ack = (t, seq, topic, part, off)
                if v.pk is None and ev.get("key") is not None:
                    v.pk = (str(ev.get("producer")), str(ev["key"]))
            else:
                v.polled = True
                if off > st.frontier.get((topic, part), -1):
                    st.frontier[(topic, part)] = off
                ckey = (str(ev.get("src")), topic, part)
                last = st.last_poll.get(ckey)
                if last is not None:
                    if off <= last[0]:
                        st.nonmonotonic.append((last[1], ev))
                    elif off > last[0] + 1:
                        st.gaps.append((last[1], ev))
                st.last_poll[ckey] = (off, ev)
    return st


def _pipe_read(st: _State, ev: Row) -> None:
    """A pipeline's pipe.read reads its input topic: its value counts as polled, and its offset as read, for
    `delivery.lost_write` (`checks.frames.write_facts`)."""
    value = ev.get("value")
    if value is None:
        return
    v = st.values.get(value)
    if v is None:
        v = st.values[value] = _Value()
    v.polled = True
    if ev.get("offset") is not None and ev.get("partition") is not None:
        tp = (str(ev.get("topic")), int(ev["partition"]))
        st.frontier[tp] = max(st.frontier.get(tp, -1), int(ev["offset"]))


def _txn_outcome(v: _Value, index: TransactionIndex) -> str | None:
    return None if v.txn is None else index.outcome(*v.txn)


def _lost(st: _State, ctx: CheckContext) -> CheckResult:
    cid = "delivery.lost_write"
    if not st.counts["poll"] and not st.counts["pipe.read"]:
        return unknown(cid, NO_READS)
    index = ctx.transactions
    outcomes = {val: _txn_outcome(v, index) for val, v in st.values.items() if v.txn is not None}
    # A record of an aborted or unknown transaction is no acknowledged write (`checks.delivery`).
    acked = [(val, v) for val, v in st.values.items() if v.ack is not None and outcomes.get(val) in (None, COMMITTED)]
    lost: list[tuple[float, int, str, int, int, int]] = []
    unseen = 0
    polled_topics = {topic for (topic, _p) in st.frontier}
    for val, v in acked:
        if v.polled or not v.strong:
            continue
        assert v.ack is not None
        t, seq, topic, part, off = v.ack
        if topic not in polled_topics:
            continue
        if ctx.completed or off <= st.frontier.get((topic, part), -1):
            lost.append((t, seq, topic, part, off, val))
        else:
            unseen += 1
    unfinished = sum(1 for v in st.values.values() if v.sent and v.ack is None and not v.errored)
    metrics = {"acked": len(acked), "lost": len(lost), "unseen": unseen, "unfinished": unfinished,
               "txn_aborted_records": sum(1 for o in outcomes.values() if o == ABORTED),
               "txn_unknown_records": sum(1 for o in outcomes.values() if o == UNKNOWN)}
    if lost:
        lost.sort()
        by_tp: dict[tuple[str, int], int] = defaultdict(int)
        for x in lost:
            by_tp[(x[2], x[3])] += 1
        sample = [{"t": x[0], "seq": x[1], "topic": x[2], "partition": x[3], "offset": x[4], "value": x[5]}
                  for x in lost[:2000]]
        summary, fault = lost_summary(dict(by_tp), sample, ctx.faults)
        return failed(cid, summary, sample[:20], metrics, fault)
    if unseen:
        return unknown(cid, f"{plural(unseen, 'acked write')} not yet polled when the run ended early", metrics)
    if not acked:
        return unknown(cid, "no acknowledged write to check", metrics)
    return passed(cid, f"all {len(acked)} acked writes were polled", metrics)


def _pairs_result(cid: str, pairs: list[tuple[Row, Row]], noun: str, total: int) -> CheckResult:
    if not pairs:
        return passed(cid, f"no {noun} in {total} events", {noun.replace(" ", "_"): 0})
    a, b = pairs[0]
    ev = [x for pair in pairs[:10] for x in pair]
    return failed(cid, f"{plural(len(pairs), noun)}, e.g. {tp_label(b.get('topic'), b.get('partition'))}@"
                       f"{b.get('offset')} after @{a.get('offset')}", ev, {noun.replace(" ", "_"): len(pairs)})


def _key_order(st: _State) -> CheckResult:
    per_key: dict[tuple[tuple[str, str], str, int], list[tuple[int, int, int]]] = defaultdict(list)
    for val, v in st.values.items():
        if v.pk is not None and v.ack is not None and v.send_seq >= 0:
            per_key[(v.pk, v.ack[2], v.ack[3])].append((v.send_seq, v.ack[4], val))
    bad = 0
    example = None
    for key, items in per_key.items():
        items.sort()
        for (_s0, o0, v0), (_s1, o1, v1) in itertools.pairwise(items):
            if o1 <= o0:
                bad += 1
                example = example or (key, v0, o0, v1, o1)
    if not bad:
        return passed("delivery.key_order", "every key's acked writes are in send order", {"reordered": 0})
    assert example is not None
    return failed("delivery.key_order", f"{plural(bad, 'write')} stored out of send order, e.g. value "
                                        f"{example[3]} at {example[4]} after {example[1]} at {example[2]}",
                  [{"value": example[1], "offset": example[2]}, {"value": example[3], "offset": example[4]}],
                  {"reordered": bad})


@dataclass
class _Computed:
    """A check whose answer the reference computes itself, run through `run_check` (same `needs` rule)."""

    id: str
    family: str
    needs: frozenset[str]
    compute: Callable[[CheckContext], CheckResult]

    def run(self, ctx: CheckContext) -> CheckResult:
        return self.compute(ctx)


def _stall_checks(st: _State, ctx: CheckContext) -> list[CheckResult]:
    """`slo.write_unavailable` and `slo.read_unavailable` from the parse's outcome and poll tuples."""
    send_min: dict[int, float] = {}
    for o in st.outcomes:
        if o.latency_ms is None and o.value is not None:
            v = st.values.get(o.value)
            if v is not None and v.send_t is not None:
                send_min[o.value] = v.send_t
    pending = sum(1 for v in st.values.values() if v.sent and not v.outcome)
    acks = [o for o in st.outcomes if o.is_ack]
    checks: list[CheckProtocol] = [
        _Computed(WriteUnavailable.id, WriteUnavailable.family, WriteUnavailable.needs,
                  lambda c: python_write(c, st.outcomes, send_min, pending)),
        _Computed(ReadUnavailable.id, ReadUnavailable.family, ReadUnavailable.needs,
                  lambda c: python_read(c, acks, st.polls)),
    ]
    return [run_check(check, ctx) for check in checks]


def reference_damage(history: Path) -> HistoryDamage:
    """What the reference skips in `history`, counted as `spark_analysis.load.load_history` counts it."""
    st = _parse(Path(history))
    return st.damage.history_damage(st.lines)


def _own_or_run(check: CheckProtocol, own: dict[str, CheckResult], ctx: CheckContext) -> CheckResult:
    """This module's result for `check`, under `run_check`'s missing-events rule; else `run_check` itself."""
    if check.id not in own:
        return run_check(check, ctx)
    missing = sorted(t for t in check.needs if ctx.count(t) == 0)
    if missing:
        return unknown(check.id, f"cannot conclude: no {', '.join(missing)} events in the history")
    return own[check.id]


def reference_checks(run_dir: Path, history: Path | None = None) -> list[CheckResult]:
    """Run REFERENCE_CHECKS (those that apply to the run's cluster mode, in registry order) on
    `run_dir/history.jsonl` in this process, without Spark; the delivery and consumer checks answer under the
    damaged-history rule, as `verify_run` has them."""
    run_dir = Path(run_dir)
    st = _parse(history or run_dir / "history.jsonl")
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
    out = [_lost(st, ctx)]
    dup = [(val, v) for val, v in st.values.items() if len(v.locs) > 1]
    out.append(passed("delivery.duplicate", "no value at two offsets", {"duplicated_values": 0}) if not dup else
               failed("delivery.duplicate", f"{plural(len(dup), 'value')} appear at more than one offset",
                      [{"value": val, "locations": sorted(v.locs)} for val, v in dup[:20]],
                      {"duplicated_values": len(dup)}))
    inc = [(loc, vals) for loc, vals in st.at_offset.items() if len(vals) > 1]
    out.append(passed("delivery.inconsistent_offsets", "every observed offset holds one value",
                      {"inconsistent_offsets": 0}) if not inc else
               failed("delivery.inconsistent_offsets", f"{plural(len(inc), 'offset')} seen with two values",
                      [{"location": list(loc), "values": sorted(vals)} for loc, vals in inc[:20]],
                      {"inconsistent_offsets": len(inc)}))
    out.append(_key_order(st))
    out.append(_pairs_result("consumer.nonmonotonic_poll", st.nonmonotonic, "nonmonotonic poll", st.counts["poll"]))
    skips = []
    index = ctx.transactions
    for a, b in st.gaps:
        topic, part = str(b.get("topic")), int(b["partition"])
        known = st.known[(topic, part)]
        between = (o for o in range(int(a["offset"]) + 1, int(b["offset"])) if o in known)
        if index.any and committed_only(b.get("isolation")):
            # read_committed: only offsets holding some record outside aborted and unknown transactions count
            between = (o for o in between if any(_txn_outcome(st.values[val], index) in (None, COMMITTED)
                                                 for val in st.at_offset.get((topic, part, o), ())))
        if any(True for _ in between):
            skips.append((a, b))
    out.append(_pairs_result("consumer.poll_skip", skips, "poll skip", st.counts["poll"]))
    out.append(unknown("group.commit_monotonic", "no commit events") if not st.counts["commit"] else
               _pairs_result("group.commit_monotonic", st.commit_back, "commit regression", st.counts["commit"]))
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
    return apply_damage_rule(results, damage, ctx.faults)
