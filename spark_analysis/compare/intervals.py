"""Controller failovers, leaderless windows and rebalances, exactly as the SLO checks measure them.

`measured_spans` asks `slo.controller_failover`, `slo.partition_unavailable` and `slo.rebalance` for
the intervals they judge (`intervals(ctx)`), so the figures on the compare page are the verdict's.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_analysis.checks.slo.checks import ControllerFailover, Interval, PartitionUnavailable, Rebalance
from spark_analysis.facts.context import CheckContext

LEADERLESS_SUFFIX = " without a leader"


@dataclass(frozen=True, slots=True)
class MeasuredSpans:
    """The intervals of the three SLO checks (each list in the check's own order) and what went wrong."""

    failovers: tuple[Interval, ...]
    leaderless: tuple[Interval, ...]
    rebalances: tuple[Interval, ...]
    problems: tuple[str, ...]


def measured_spans(ctx: CheckContext) -> MeasuredSpans:
    """Run the three SLO checks on `ctx` and keep their intervals; a check lacking events gives none."""
    out: dict[str, tuple[Interval, ...]] = {}
    problems: list[str] = []
    for name, check in (("failovers", ControllerFailover()), ("leaderless", PartitionUnavailable()),
                        ("rebalances", Rebalance())):
        missing = sorted(t for t in check.needs if ctx.count(t) == 0)
        if missing:
            problems.append(f"{check.id}: no {', '.join(missing)} events in the history")
            out[name] = ()
            continue
        try:
            out[name] = tuple(check.intervals(ctx))
        except Exception as exc:  # the page is still written, saying what is missing
            problems.append(f"{check.id}: could not measure: {type(exc).__name__}: {exc}".splitlines()[0])
            out[name] = ()
    return MeasuredSpans(out["failovers"], out["leaderless"], out["rebalances"], tuple(problems))


def leaderless_partition(interval: Interval) -> str:
    """The partition (`topic/p`) a `slo.partition_unavailable` interval is about."""
    if interval.end_event is not None and interval.end_event.get("topic") is not None:
        return f"{interval.end_event['topic']}/{interval.end_event.get('partition')}"
    return interval.what.removesuffix(LEADERLESS_SUFFIX)


def rebalance_group(interval: Interval) -> str:
    """The group a `slo.rebalance` interval is about."""
    group = interval.start_event.get("group")
    return str(group) if group is not None else interval.what.removeprefix("rebalance of ")
