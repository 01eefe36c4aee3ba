"""What each fault did, for the report: what the clients went through and what the cluster did.

Owns `fault_impacts(verdict)`, read from what verdict.json already holds, so a report can be rendered
again from it alone: per fault, the write stall per partition and the read stall per group and
partition that the stall SLOs tied to it (`slo.write_unavailable` / `slo.read_unavailable` metrics
`by_fault`), the rebalances that started under it (group states of the timeline), the elections
(leader changes) and the ISR changes (size changes) of the timeline's partitions under it. An event
belongs to the fault in force at its time, or that ended less than `ATTRIBUTION_GRACE_S` before
(`spark_analysis.facts.faults.FaultIndex.active_at`, the rule failures are tied to faults by). Also the
write-stall bands of the timeline (`stall_bands`) and the worst stalls for JUnit (`worst_stalls`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.slo.checks import REBALANCING
from spark_analysis.facts.faults import FaultIndex, FaultWindow
from spark_analysis.verdict import Verdict

WRITE_CHECK = "slo.write_unavailable"
READ_CHECK = "slo.read_unavailable"


@dataclass(frozen=True, slots=True)
class Stall:
    key: str
    """`topic/p` (writes) or `group topic/p` (reads)."""
    who: str
    start: float
    end: float | None
    duration: float


@dataclass(frozen=True, slots=True)
class Change:
    """One cluster or group change: `what` (partition or group), when, and from/to (leader, ISR size, state)."""

    what: str
    t: float
    before: Any
    after: Any


@dataclass(frozen=True, slots=True)
class FaultImpact:
    fault: Mapping[str, Any]
    write_stalls: tuple[Stall, ...]
    read_stalls: tuple[Stall, ...]
    rebalances: tuple[Change, ...]
    elections: tuple[Change, ...]
    isr_changes: tuple[Change, ...]

    @property
    def label(self) -> str:
        return str(self.fault.get("label") or f"fault #{self.fault.get('id')}")


def _index(verdict: Verdict) -> FaultIndex:
    return FaultIndex(tuple(
        FaultWindow(str(f.get("id")), str(f.get("kind") or "fault"), str(f.get("target") or ""),
                    float(f.get("start") or 0.0), None if f.get("end") is None else float(f["end"]))
        for f in verdict.faults))


def _metrics(verdict: Verdict, check_id: str) -> Mapping[str, Any]:
    """The metrics of `check_id` in the verdict (empty when the verdict has no such check)."""
    try:
        return verdict.by_id(check_id).metrics
    except KeyError:
        return {}


def _stalls(verdict: Verdict, check_id: str) -> Mapping[str, Sequence[Mapping[str, Any]]]:
    by_fault = _metrics(verdict, check_id).get("by_fault") or {}
    return by_fault if isinstance(by_fault, Mapping) else {}


def _stall(row: Mapping[str, Any]) -> Stall:
    end = row.get("end")
    return Stall(str(row.get("key")), str(row.get("who") or ""), float(row.get("start") or 0.0),
                 None if end is None else float(end), float(row.get("duration") or 0.0))


def _changes(series: Mapping[str, Sequence[Sequence[Any]]], index: int) -> list[Change]:
    """Consecutive points of each series whose value at `index` differs (the first point is no change)."""
    out: list[Change] = []
    for name, points in series.items():
        for prev, point in itertools.pairwise(points):
            if prev[index] != point[index]:
                out.append(Change(name, float(point[0]), prev[index], point[index]))
    return out


def fault_impacts(verdict: Verdict) -> list[FaultImpact]:
    """One `FaultImpact` per fault of the run, in start order."""
    index = _index(verdict)
    timeline = verdict.timeline or {}
    partitions = timeline.get("partitions") or {}
    groups = timeline.get("groups") or {}
    owned: dict[str, dict[str, list[Change]]] = {w.fault_id: {"elections": [], "isr": [], "rebalances": []}
                                                 for w in index.windows}

    def attribute(kind: str, changes: list[Change]) -> None:
        for change in changes:
            window = index.active_at(change.t)
            if window is not None:
                owned[window.fault_id][kind].append(change)

    attribute("elections", _changes(partitions, 1))
    attribute("isr", _changes(partitions, 2))
    starts = [c for c in _changes(groups, 1) if c.after in REBALANCING and c.before not in REBALANCING]
    attribute("rebalances", starts)
    writes, reads = _stalls(verdict, WRITE_CHECK), _stalls(verdict, READ_CHECK)
    out = []
    for window, fault in zip(index.windows, verdict.faults, strict=True):
        mine = owned[window.fault_id]
        out.append(FaultImpact(
            fault=fault,
            write_stalls=tuple(sorted((_stall(r) for r in writes.get(window.fault_id, ())), key=lambda s: -s.duration)),
            read_stalls=tuple(sorted((_stall(r) for r in reads.get(window.fault_id, ())), key=lambda s: -s.duration)),
            rebalances=tuple(sorted(mine["rebalances"], key=lambda c: c.t)),
            elections=tuple(sorted(mine["elections"], key=lambda c: c.t)),
            isr_changes=tuple(sorted(mine["isr"], key=lambda c: c.t)),
        ))
    return out


def stall_bands(verdict: Verdict) -> dict[str, list[tuple[float, float | None, float]]]:
    """Per partition (`topic/p`), the write stalls the check reported (worst per partition, and per fault):
    (start, end or None when open, duration), for the timeline band next to the leaderless windows."""
    metrics = _metrics(verdict, WRITE_CHECK)
    rows = [*(metrics.get("worst") or ()), *(r for rs in (metrics.get("by_fault") or {}).values() for r in rs)]
    bands: dict[str, set[tuple[float, float | None, float]]] = {}
    for row in rows:
        s = _stall(row)
        bands.setdefault(s.key, set()).add((s.start, s.end, s.duration))
    return {k: sorted(v, key=lambda x: x[0]) for k, v in bands.items()}


def worst_stalls(verdict: Verdict) -> dict[str, str]:
    """JUnit properties: the worst write and read stall (seconds) and where, with the fault tied to it."""
    out: dict[str, str] = {}
    for name, check_id in (("write", WRITE_CHECK), ("read", READ_CHECK)):
        worst = _metrics(verdict, check_id).get("worst") or []
        if worst:
            top = max(worst, key=lambda r: float(r.get("duration") or 0.0))
            out[f"worst_{name}_stall_s"] = f"{float(top.get('duration') or 0.0):.3f}"
            out[f"worst_{name}_stall"] = str(top.get("key")) + (f" during {top['fault']}" if top.get("fault") else "")
    return out
