"""One run's facts for the comparison, from its run.json, verdict.json and history.jsonl.

`collect_run(run_dir, spark) -> RunFacts` reads run.json (`runinfo`) and verdict.json (a run
without a readable one has every check "not verified"), loads the history the way `verify_run`
does (Parquet once, the same `CheckContext`), and measures per fault:

- controller failovers, leaderless windows and rebalances: the SLO checks' own intervals
  (`intervals.measured_spans`), each attributed to the fault in force when it started;
- elections and ISR changes: leader and ISR changes between consecutive partition states (the
  ZooKeeper observer's when it reported any, as the partition checks read them), with the
  election rule `partition.election_conforms` infers (`checks.partition.checks._strategy`), each
  attributed to the fault in force at the change;
- ack stalls: `acks.ack_stalls` in Spark.

Attribution is `FaultIndex.active_at` (the fault in force, with the grace after its end that the
checks' summaries use); whatever no fault claims is kept as "outside every fault window".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from spark_analysis.checks import CHECK_IDS
from spark_analysis.checks.partition.checks import _by_partition, _states, _strategy
from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.checks.slo.checks import Interval
from spark_analysis.compare.acks import FaultAcks, ack_stalls, fault_segments
from spark_analysis.compare.facts import (
    NOT_RUN,
    NOT_SELECTED,
    NOT_VERIFIED,
    CheckStatus,
    Election,
    FaultFacts,
    IsrChange,
    Measures,
    RunFacts,
    RunHeader,
    Span,
)
from spark_analysis.compare.intervals import leaderless_partition, measured_spans, rebalance_group
from spark_analysis.facts.context import CheckContext, spark_context
from spark_analysis.facts.liveness import build_liveness
from spark_analysis.ingest.load import load_history
from spark_analysis.ingest.runinfo import RunInfo, RunInfoError, load_run_info
from spark_analysis.verdict import VERDICT_FILE, read_verdict
from spark_analysis.verify import HISTORY_FILE

T = TypeVar("T")


def check_statuses(run_dir: Path) -> tuple[tuple[CheckStatus, ...], str, list[str]]:
    """Every check's status from verdict.json (registry order, then unknown ids), the verdict status, notes."""
    if not (run_dir / VERDICT_FILE).is_file():
        return (tuple(CheckStatus(c, NOT_VERIFIED) for c in CHECK_IDS), NOT_VERIFIED,
                [f"no {VERDICT_FILE}: every check is '{NOT_VERIFIED}' (run `kafka-chaos verify` on it first)"])
    try:
        verdict = read_verdict(run_dir)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return (tuple(CheckStatus(c, NOT_VERIFIED) for c in CHECK_IDS), NOT_VERIFIED,
                [f"{VERDICT_FILE} is not readable ({type(exc).__name__}: {exc}); every check is '{NOT_VERIFIED}'"])
    by_id = {r.check_id: CheckStatus(r.check_id, r.status, r.allowed, r.summary) for r in verdict.checks}
    ids = [*CHECK_IDS, *sorted(set(by_id) - set(CHECK_IDS))]
    not_selected = set(verdict.not_selected)
    statuses = tuple(by_id.get(c) or CheckStatus(c, NOT_SELECTED if c in not_selected else NOT_RUN) for c in ids)
    return statuses, str(verdict.status), []


def run_header(run_dir: Path, info: RunInfo, verdict_status: str) -> RunHeader:
    return RunHeader(path=str(run_dir), name=run_dir.resolve().name, experiment=info.experiment, seed=info.seed,
                     backend=info.backend, flavour=info.flavour, version=info.version,
                     tested=f"{info.title}, {info.client_title}",
                     run_status=info.status, verdict_status=verdict_status)


def partition_changes(ctx: CheckContext) -> tuple[list[Election], list[IsrChange]]:
    """Leader changes (with the inferred election rule) and ISR changes between consecutive states."""
    live = build_liveness(ctx.rows("broker.up", "broker.down"))
    elections: list[Election] = []
    isr_changes: list[IsrChange] = []
    for (_src, topic, part), states in _by_partition(_states(ctx)).items():
        label = tp_label(topic, part)
        prev: dict[str, Any] | None = None
        for ev in states:
            if prev is not None:
                t = float(ev.get("t") or 0.0)
                if ev.get("leader") is not None and ev.get("leader") != prev.get("leader"):
                    shutting = ctx.faults.stopping_gracefully(t)
                    isr = prev.get("isr")
                    elections.append(Election(
                        partition=label, t=t, old_leader=_broker(prev.get("leader")),
                        new_leader=_broker(ev.get("leader")), leader_epoch=ev.get("leader_epoch"),
                        rule=_strategy(prev, ev, live, shutting, t, ctx.operations)[0],
                        isr_before=None if isr is None else tuple(int(b) for b in isr)))
                before, after = prev.get("isr"), ev.get("isr")
                if before is not None and after is not None and set(before) != set(after):
                    isr_changes.append(IsrChange(label, t, tuple(int(b) for b in before),
                                                 tuple(int(b) for b in after)))
            prev = ev
    return elections, isr_changes


def _broker(value: object) -> int | None:
    return None if value is None or int(str(value)) < 0 else int(str(value))


def _by_fault(ctx: CheckContext, items: Iterable[T], when: Callable[[T], float]) -> dict[str | None, list[T]]:
    out: dict[str | None, list[T]] = defaultdict(list)
    for item in items:
        window = ctx.faults.active_at(when(item))
        out[window.fault_id if window is not None else None].append(item)
    return out


def _spans(intervals: Iterable[Interval], subject: Callable[[Interval], str], end_t: float) -> list[Span]:
    return sorted((Span(subject(i), i.what, i.start, i.end, i.duration(end_t)) for i in intervals),
                  key=lambda s: (s.start, s.subject))


def measure(ctx: CheckContext) -> tuple[tuple[FaultFacts, ...], Measures, list[str]]:
    """Per fault (in start order) and outside every fault: what `Measures` holds; plus problems met."""
    spans = measured_spans(ctx)
    failovers = _by_fault(ctx, _spans(spans.failovers, lambda i: "controller", ctx.end_t), lambda s: s.start)
    leaderless = _by_fault(ctx, _spans(spans.leaderless, leaderless_partition, ctx.end_t), lambda s: s.start)
    rebalances = _by_fault(ctx, _spans(spans.rebalances, rebalance_group, ctx.end_t), lambda s: s.start)
    election_list, isr_list = partition_changes(ctx)
    elections = _by_fault(ctx, sorted(election_list, key=lambda e: (e.t, e.partition)), lambda e: e.t)
    isr_changes = _by_fault(ctx, sorted(isr_list, key=lambda c: (c.t, c.partition)), lambda c: c.t)
    topics = {str(e["topic"]) for e in ctx.rows("partition.state") if e.get("topic") is not None}
    acks = ack_stalls(ctx, fault_segments(ctx.faults, ctx.end_t), topics)

    def measures(fid: str | None) -> Measures:
        fa = acks.get(fid, FaultAcks()) if fid is not None else FaultAcks()
        return Measures(failovers=tuple(failovers.get(fid, ())), leaderless=tuple(leaderless.get(fid, ())),
                        elections=tuple(elections.get(fid, ())), isr_changes=tuple(isr_changes.get(fid, ())),
                        rebalances=tuple(rebalances.get(fid, ())), ack_stalls=fa.stalls,
                        unanswered_sends=fa.unanswered, errored_sends=fa.errored)

    faults = tuple(FaultFacts(w, measures(w.fault_id)) for w in ctx.faults.windows)
    return faults, measures(None), list(spans.problems)


def collect_run(run_dir: Path, spark: SparkSession) -> RunFacts:
    """Everything the comparison shows about the run in `run_dir` (a missing file is a note, not an error)."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    try:
        info = load_run_info(run_dir)
    except RunInfoError as exc:
        info = RunInfo()
        notes.append(str(exc))
    if not (run_dir / "run.json").is_file():
        notes.append("no run.json: experiment, seed, backend and broker unknown")
    checks, verdict_status, check_notes = check_statuses(run_dir)
    notes.extend(check_notes)
    header = run_header(run_dir, info, verdict_status)
    if not (run_dir / HISTORY_FILE).is_file():
        notes.append(f"no {HISTORY_FILE}: nothing measured per fault")
        return RunFacts(header, (), Measures(), checks, (), tuple(notes), measured=False)
    loaded = load_history(spark, run_dir / HISTORY_FILE)
    if loaded.skipped_lines:
        notes.append(f"{plural(loaded.skipped_lines, 'torn line')} of {HISTORY_FILE} skipped")
    ctx = spark_context(info, spark, loaded.events, loaded.type_counts, loaded.end_t, loaded.skipped_lines)
    try:
        faults, outside, problems = measure(ctx)
        skipped = tuple(sorted({str(e.get("fault_id")) for e in ctx.rows("fault.skipped")}))
    finally:
        ctx.close()
    notes.extend(problems)
    return RunFacts(header, faults, outside, checks, skipped, tuple(notes), loaded.end_t)
