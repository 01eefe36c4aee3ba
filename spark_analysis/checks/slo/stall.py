"""Client-side stall SLOs (KAFKA-BEHAVIOUR.md §7.12, issue 19): what producers and consumers went through.

- `slo.write_unavailable`: per partition, the longest time producers could not get an acknowledged
  write, ack latency included. Per (producer, topic, partition), over the outcomes that name a
  partition (acks, send.errors with a partition) in (t, seq) order, each with its send time
  `t - latency_ms/1000` (without a usable latency: the first send of its value, else t): a stall ends
  at each ack A, from max(the previous ack's t, the earliest send time among the outcomes since it, A
  included) to A.t. Outcomes after the last ack form a stall open until the end of the history. A
  partition's figure is the worst over its producers. Sends without any outcome name no partition:
  they are counted (`pending_without_partition`), never placed.
- `slo.read_unavailable`: per group and partition, the longest time the group received nothing while
  records below the high watermark waited. Per (group, topic, partition) of the topics the group
  polls, in (t, seq) order: acks raise the high watermark to offset+1, the group's polls its position
  to offset+1. A stall ends at each poll P: from the previous poll of the partition if records were
  waiting right after it (high watermark > position), else from the first ack after it above the
  position (no such ack: no stall), to P.t. Before the group's first poll of the partition the stall
  starts at the later of the group's first poll of the topic and the partition's first ack. Records
  still waiting after the last poll of the partition make a stall open until the group's last poll of
  anything (a group that stopped consuming is not stalled), or until the group's drain ended when it ended
  behind (`group.drain` not ok: a client that stopped fetching is stalled to the end). Transactions: for a
  read_committed group (some poll of it has `isolation` read_committed, or none recorded), a record of a committed
  transaction waits from the later of its ack and the commit (the last stable offset moves at the commit), and a
  record of an aborted transaction, or of one whose outcome is unknown, never waits (it never becomes
  readable to it); a read_uncommitted group reads every record from its ack.

Each stall is tied to a fault by `stalls.stall_fault`: the latest in force at its start, else the nearest
within 5 s of its start (ended before it, or begun during the stall), else the first in force at some point
of it. Against `verify.slo.write_unavailable` /
`read_unavailable` (none declared: report and pass), a key fails when its worst stall exceeds the
SLO; an open stall is censored: it counts only when it already exceeds the SLO.

Metrics (the HTML report reads them): `distribution` and `samples` over the worst closed stall per
key; `worst` (one entry per key, worst first: key, who, start, end, duration, fault_id, fault);
`by_fault` (per fault id, the worst stall per key among those tied to it); `slo_s`, `over_slo`,
`open_at_end` and counters. The stalls are computed in Spark (`stall_frames`) or, without a
DataFrame, in Python (`spark_analysis.checks.slo.stalls`); the judging below serves both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.shared.common import distribution, plural
from spark_analysis.checks.shared.damage import TXN_LINES, Depends
from spark_analysis.checks.slo.checks import samples
from spark_analysis.checks.slo.stalls import (
    Cell,
    Outcome,
    Poll,
    Stall,
    cells_of,
    events_at,
    from_rows,
    pending_sends,
    read_stalls,
    readable_to_committed,
    write_stalls,
)
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed, unknown

EVIDENCE_STALLS = 10
Fetch = Callable[[list[int]], Mapping[int, Mapping[str, Any]]]
"""Evidence lookup: the events at the given seqs (only called for a failure)."""


@dataclass(frozen=True, slots=True)
class Spec:
    check_id: str
    slo_key: str
    noun: str
    what: str
    who: str
    """How the summary names the stalled client ("producer"; empty: the key names it)."""
    open_text: str
    start_problem: Callable[[Stall, Mapping[str, Any]], str]
    end_problem: str


def _write_start(s: Stall, ev: Mapping[str, Any]) -> str:
    if s.start_seq == s.end_seq:
        return f"stall start: this write, sent at {s.start:.3f}s"
    if ev.get("type") == "ack":
        return "stall start: the producer's last ack before it"
    return f"stall start: write sent at {s.start:.3f}s ({ev.get('type')} at {float(ev.get('t') or 0.0):.3f}s)"


def _read_start(s: Stall, ev: Mapping[str, Any]) -> str:
    if ev.get("type") == "ack":
        return "stall start: a record waiting above the group's position"
    return "stall start: poll after which records were waiting"


WRITE = Spec("slo.write_unavailable", "write_unavailable", "partition", "without an acknowledged write",
             "producer", "still open at the end", _write_start, "stall end: acknowledged after {d:.3f}s")
READ = Spec("slo.read_unavailable", "read_unavailable", "group partition", "received nothing while records waited",
            "", "still waiting at the group's last poll, or at a drain it ended behind", _read_start,
            "stall end: polled after {d:.3f}s")


def _row(s: Stall, key: str) -> dict[str, Any]:
    return {"key": key, "who": s.who, "start": round(s.start, 3), "end": None if s.end is None else round(s.end, 3),
            "duration": round(s.duration, 3)}


def _evidence(spec: Spec, stalls: Sequence[tuple[str, Stall]], fetch: Fetch) -> list[dict[str, Any]]:
    seqs = [seq for _k, s in stalls for seq in (s.start_seq, s.end_seq) if seq is not None]
    found = fetch(seqs)
    rows: list[dict[str, Any]] = []
    for key, s in stalls:
        problems: dict[int, list[str]] = {}
        if s.end_seq is not None:
            problems.setdefault(s.start_seq, []).append(spec.start_problem(s, found.get(s.start_seq, {})))
            problems.setdefault(s.end_seq, []).append(spec.end_problem.format(d=s.duration))
        else:
            problems[s.start_seq] = [spec.start_problem(s, found.get(s.start_seq, {}))
                                     + f"; still open at {s.until:.3f}s ({s.duration:.3f}s)"]
        for seq, texts in problems.items():
            ev = found.get(seq)
            if ev is None:
                continue
            row = {k: ev[k] for k in ("seq", "t", "type", "topic", "partition", "offset", "value")
                   if ev.get(k) is not None}
            who = "group" if ev.get("type") == "poll" else "producer"
            row[who] = ev.get(who) or ev.get("src")
            row["problem"] = f"{key}: " + "; ".join(texts)
            rows.append(row)
    return rows


def stall_result(ctx: CheckContext, spec: Spec, cells: Sequence[Cell], counters: Mapping[str, Any],
                 fetch: Fetch) -> CheckResult:
    """The result from the cells: worst stall per key against `ctx.run.slo[spec.slo_key]`, and the metrics."""
    windows = ctx.faults.windows
    worst: dict[str, Cell] = {}
    closed: dict[str, float] = {}
    per_fault: dict[str, dict[str, Stall]] = {}
    for c in cells:
        if c.key not in worst or c.best.order() < worst[c.key].best.order():
            worst[c.key] = c
        if c.closed_max is not None:
            closed[c.key] = max(closed.get(c.key, c.closed_max), c.closed_max)
        if c.fault is not None:
            by_key = per_fault.setdefault(windows[c.fault].fault_id, {})
            if c.key not in by_key or c.best.order() < by_key[c.key].order():
                by_key[c.key] = c.best
    ranked = sorted(worst.values(), key=lambda c: c.best.order())
    entries = []
    for c in ranked:
        w = windows[c.fault] if c.fault is not None else None
        entries.append({**_row(c.best, c.key), "fault_id": w.fault_id if w else None, "fault": w.label if w else None})
    metrics: dict[str, Any] = {
        "distribution": distribution(closed.values()), "samples": samples(list(closed.values())),
        "worst": entries,
        "by_fault": {fid: [_row(s, k) for k, s in sorted(by_key.items(), key=lambda kv: kv[1].order())]
                     for fid, by_key in per_fault.items()},
        "open_at_end": sum(c.open for c in cells), "stalls": sum(c.count for c in cells), **counters,
    }
    slo = ctx.run.slo.get(spec.slo_key)
    metrics["slo_s"] = slo
    if not ranked:
        return passed(spec.check_id, f"no stall: no {spec.noun} had records waiting", metrics)
    top = ranked[0]
    top_text = (f"worst {top.key} {spec.what} for {top.best.duration:.3f}s"
                + (f" ({spec.who} {top.best.who})" if spec.who else "")
                + (f" ({spec.open_text})" if top.best.end is None else ""))
    if slo is None:
        return passed(spec.check_id, f"no SLO declared; {plural(len(ranked), spec.noun)}, {top_text}", metrics)
    over = [c for c in ranked if c.best.duration > slo]
    metrics["over_slo"] = len(over)
    if not over:
        return passed(spec.check_id, f"{plural(len(ranked), spec.noun)} within the {slo:g}s SLO ({top_text})",
                      metrics)
    fault = windows[top.fault] if top.fault is not None else None
    summary = (f"{plural(len(over), spec.noun)} over the {slo:g}s SLO, {top_text}"
               + (f" during {fault.label}" if fault else ""))
    ev = _evidence(spec, [(c.key, c.best) for c in over[:EVIDENCE_STALLS]], fetch)
    return failed(spec.check_id, summary, ev, metrics, fault.label if fault else None)


def write_counters(ctx: CheckContext, cells: Sequence[Cell], pending: int) -> dict[str, int]:
    """acks (with a partition), send.errors with and without a partition, sends still pending at the end."""
    acks = sum(c.count - c.open for c in cells)
    errors = sum(c.events for c in cells) - acks
    return {"acks": acks, "errors_with_partition": errors,
            "errors_without_partition": max(ctx.count("send.error") - errors, 0),
            "pending_without_partition": pending}


def python_write(ctx: CheckContext, outcomes: list[Outcome], send_min: Mapping[int, float],
                 pending: int) -> CheckResult:
    """`slo.write_unavailable` without Spark, from the outcomes (`checks.slo.stalls`)."""
    cells = cells_of(write_stalls(outcomes, send_min, ctx.end_t), ctx.faults.windows, key_of_read=False)
    return _write_result(ctx, cells, pending, lambda seqs: events_at(seqs, outcomes, ()))


def python_read(ctx: CheckContext, outcomes: list[Outcome], polls: list[Poll]) -> CheckResult:
    """`slo.read_unavailable` without Spark, from the acks (outcomes) and polls (`checks.slo.stalls`)."""
    cells = cells_of(read_stalls(outcomes, polls, readable_to_committed(ctx.transactions), ctx.drains_behind),
                     ctx.faults.windows, key_of_read=True)
    return _read_result(ctx, cells, len({p.who for p in polls}), lambda seqs: events_at(seqs, outcomes, polls))


def _write_result(ctx: CheckContext, cells: list[Cell], pending: int, fetch: Fetch) -> CheckResult:
    if not cells:
        return unknown(WRITE.check_id, "no ack or send.error names a partition")
    return stall_result(ctx, WRITE, cells, write_counters(ctx, cells, pending), fetch)


def _read_result(ctx: CheckContext, cells: list[Cell], groups: int, fetch: Fetch) -> CheckResult:
    if not groups:
        return unknown(READ.check_id, "no poll names a partition and an offset")
    return stall_result(ctx, READ, cells, {"polls": ctx.count("poll"), "groups": groups}, fetch)


class WriteUnavailable:
    id = "slo.write_unavailable"
    family = "slo"
    needs = frozenset({"ack"})

    # a lost ack line makes a write look stalled until the next one; a lost poll, a read look stalled
    damage = Depends(frozenset({"send", "ack", "send.error"}), frozenset({"ack"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.events is None:  # a context without Spark (rows in memory)
            rows = ctx.rows("send", "ack", "send.error")
            outcomes, _, send_min, _ = from_rows(rows)
            return python_write(ctx, outcomes, send_min, pending_sends(rows))
        from spark_analysis.checks.shared.bitsets import write_counters as value_counters
        from spark_analysis.checks.shared.frames import events_by_seq
        from spark_analysis.checks.slo.stall_frames import write_cells

        pending = int(value_counters(ctx).get("unfinished", 0))
        return _write_result(ctx, write_cells(ctx), pending, lambda seqs: events_by_seq(ctx, seqs))


class ReadUnavailable:
    id = "slo.read_unavailable"
    family = "slo"
    needs = frozenset({"ack", "poll"})

    damage = Depends(frozenset({"ack", "poll"}) | TXN_LINES, frozenset({"poll"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.events is None:  # a context without Spark (rows in memory)
            outcomes, polls, _, _ = from_rows(ctx.rows("ack", "poll"))
            return python_read(ctx, outcomes, polls)
        from spark_analysis.checks.shared.frames import events_by_seq
        from spark_analysis.checks.slo.stall_frames import read_cells

        cells, groups = read_cells(ctx)
        return _read_result(ctx, cells, groups, lambda seqs: events_by_seq(ctx, seqs))
