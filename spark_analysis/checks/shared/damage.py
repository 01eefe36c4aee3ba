"""The damaged-history rule of the checks that read the bulk events (delivery, consumer, txn).

A skipped line (torn, ill-typed, untyped: `spark_analysis.ingest.load.HistoryDamage`) is an event the
checks never see. Below a threshold that is noise; above it a check's answer is not to be
trusted: missing polls make acked writes look lost and polls look skipped, missing acks hide
lost writes. The threshold, per check, over the damaged lines of the event types it reads (a
line whose type is unknown counts for every check): more than `DAMAGE_FRACTION` of the
history's lines, or any one of them inside a fault window (or at an unknown time while there
are fault windows).

Over the threshold the check answers `unknown`, naming the count and what it would have said,
with one exception: a `fail` that no missing line can produce stays a `fail` (a value at two
offsets, an offset holding two values, a key out of order, a poll going back: each is proven by
events that were read intact). A check's `damage` attribute (a `Depends`, in its own module; the registry
collects them as `spark_analysis.checks.DAMAGE`) says which types it reads and which of them, missing, could
produce its failure. A check without one is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from spark_analysis.checks.shared.common import plural
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.facts.transactions import TXN_TYPES
from spark_analysis.ingest.load import HistoryDamage
from spark_analysis.result import CheckResult

DAMAGE_FRACTION = 0.001
"""Damaged lines (of the types a check reads) above this fraction of all lines make it unknown."""
UNKNOWN_TYPE = "?"


@dataclass(frozen=True, slots=True)
class Depends:
    """The event types a check reads, and those whose missing lines could make it fail."""

    reads: frozenset[str]
    fabricated_by: frozenset[str] = frozenset()


TXN_LINES = frozenset(TXN_TYPES)
"""A lost txn.* line leaves its transaction's outcome unknown: its records are then never blamed (a pass
could be wrong, a failure could not)."""
TXN_READS = frozenset({"poll", "pipe.read", "send", "ack", "send.error"}) | TXN_LINES
"""What the transaction checks read."""



@dataclass(frozen=True, slots=True)
class DamageFinding:
    """The damaged lines one check reads: how many, by type, how many inside fault windows."""

    lines: int
    by_type: Mapping[str, int]
    in_faults: int
    total_lines: int
    can_fabricate: bool
    """Whether some of them are of a type whose absence could produce the check's failure."""

    @property
    def over(self) -> bool:
        return self.lines > DAMAGE_FRACTION * self.total_lines or self.in_faults > 0

    def describe(self) -> str:
        types = ", ".join(f"{t} {n}" for t, n in sorted(self.by_type.items(), key=lambda kv: (-kv[1], kv[0])))
        where = f", {self.in_faults} inside fault windows" if self.in_faults else ""
        return f"{plural(self.lines, 'damaged history line')} of the events it reads ({types}{where})"

    def metrics(self) -> dict[str, Any]:
        return {"damaged_lines": self.lines, "damaged_by_type": dict(self.by_type),
                "damaged_in_fault_windows": self.in_faults,
                "damage_threshold": f"> {DAMAGE_FRACTION:.1%} of {self.total_lines} lines or any in a fault window"}


def finding(damage: HistoryDamage | None, depends: Depends, faults: FaultIndex) -> DamageFinding | None:
    """The damaged lines of the types `depends` reads, or None when there are none."""
    if damage is None or not damage.skipped:
        return None
    wanted = depends.reads | {UNKNOWN_TYPE}
    by_type = {t: n for t, n in damage.by_type.items() if t in wanted and n}
    lines = sum(by_type.values())
    if not lines:
        return None
    in_faults = sum(1 for d in damage.listed if d.type in wanted and _in_window(d.t, faults))
    if damage.truncated and faults.windows:
        in_faults += lines - sum(1 for d in damage.listed if d.type in wanted)  # not listed: times unknown
    fabricate = bool(set(by_type) & (depends.fabricated_by | {UNKNOWN_TYPE}))
    return DamageFinding(lines, by_type, in_faults, damage.total_lines, fabricate)


def _in_window(t: float | None, faults: FaultIndex) -> bool:
    if not faults.windows:
        return False
    return t is None or any(w.contains(t) for w in faults.windows)


def judge_with_damage(result: CheckResult, found: DamageFinding | None) -> CheckResult:
    """`result` under the damage rule (see the module doc)."""
    if found is None:
        return result
    metrics = {**dict(result.metrics), **found.metrics()}
    if not found.over:
        return replace(result, metrics=metrics)
    if result.status == "fail" and not found.can_fabricate:
        return replace(result, metrics=metrics,
                       summary=f"{result.summary} ({found.describe()}; missing lines cannot produce this)")
    if result.status == "unknown":
        return replace(result, metrics=metrics, summary=f"{result.summary}; and {found.describe()}")
    metrics["status_without_damage_rule"] = result.status
    return replace(result, status="unknown", fault=None, metrics=metrics,
                   summary=f"cannot conclude: {found.describe()}; read as is it would {result.status}: "
                           f"{result.summary}")


def apply_damage_rule(results: Iterable[CheckResult], damage: HistoryDamage | None, faults: FaultIndex,
                      depends: Mapping[str, Depends]) -> list[CheckResult]:
    """Every result of a check in `depends` (the registry's `DAMAGE`: each check's `damage` attribute) judged under
    the damage rule; the others unchanged."""
    out: list[CheckResult] = []
    for r in results:
        reads = depends.get(r.check_id)
        out.append(r if reads is None else judge_with_damage(r, finding(damage, reads, faults)))
    return out
