"""Check results and the `Check` extension point.

Owns `CheckResult` (status, one-line summary, at most 20 evidence events, metrics, the fault a
failure is tied to), the status order (fail > unknown > pass), the `Check` Protocol every check
implements, and `run_check`, which turns a crash or missing input into `unknown` — never `pass`.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from spark_analysis.facts.context import CheckContext

Status = Literal["pass", "fail", "unknown"]
STATUSES: tuple[Status, ...] = ("pass", "unknown", "fail")
MAX_EVIDENCE = 20
_RANK = {"pass": 0, "unknown": 1, "fail": 2}


def worst(statuses: Iterable[Status]) -> Status:
    """The worst status (fail > unknown > pass); `pass` for an empty input."""
    result: Status = "pass"
    for status in statuses:
        if _RANK[status] > _RANK[result]:
            result = status
    return result


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check."""

    check_id: str
    status: Status
    summary: str
    evidence: tuple[Mapping[str, Any], ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    fault: str | None = None
    allowed: bool = False
    duration_s: float = 0.0
    permitted: tuple[str, ...] = ()
    """The settings that permit anomalies this check found (docs/kafka-behaviour.md: a rule holds only under the
    configuration that asks for it): reported apart from violations, they never fail the run by themselves."""
    expected: bool = False
    """The experiment's `expect:` names this check as one that fails (a known bug): a fail is then what was
    expected, and a pass is the expectation unmet (`spark_analysis.verdict.counted_status`)."""

    def __post_init__(self) -> None:
        if self.status not in _RANK:
            raise ValueError(f"check {self.check_id}: status must be pass/fail/unknown, got {self.status!r}")
        if "\n" in self.summary:
            object.__setattr__(self, "summary", " ".join(self.summary.split()))
        if len(self.evidence) > MAX_EVIDENCE:
            object.__setattr__(self, "evidence", tuple(self.evidence[:MAX_EVIDENCE]))

    @property
    def family(self) -> str:
        return self.check_id.split(".", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.check_id,
            "family": self.family,
            "status": self.status,
            "allowed": self.allowed,
            "expected": self.expected,
            "permitted": list(self.permitted),
            "summary": self.summary,
            "fault": self.fault,
            "evidence": [_clean(e) for e in self.evidence],
            "metrics": _clean(dict(self.metrics)),
            "duration_s": round(self.duration_s, 3),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> CheckResult:
        return CheckResult(
            check_id=str(data["id"]),
            status=data["status"],
            summary=str(data.get("summary", "")),
            evidence=tuple(data.get("evidence") or ()),
            metrics=dict(data.get("metrics") or {}),
            fault=data.get("fault"),
            allowed=bool(data.get("allowed", False)),
            duration_s=float(data.get("duration_s", 0.0)),
            expected=bool(data.get("expected", False)),
            permitted=tuple(str(p) for p in data.get("permitted") or ()),
        )


def passed(check_id: str, summary: str, metrics: Mapping[str, Any] | None = None) -> CheckResult:
    return CheckResult(check_id, "pass", summary, (), dict(metrics or {}))


def failed(
    check_id: str,
    summary: str,
    evidence: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, Any] | None = None,
    fault: str | None = None,
) -> CheckResult:
    return CheckResult(check_id, "fail", summary, tuple(evidence[:MAX_EVIDENCE]), dict(metrics or {}), fault)


def unknown(
    check_id: str,
    summary: str,
    metrics: Mapping[str, Any] | None = None,
    evidence: Sequence[Mapping[str, Any]] = (),
) -> CheckResult:
    return CheckResult(check_id, "unknown", summary, tuple(evidence[:MAX_EVIDENCE]), dict(metrics or {}))


@runtime_checkable
class Check(Protocol):
    """One verifier. `needs` lists the event types without which the check cannot conclude."""

    id: str
    family: str
    needs: frozenset[str]

    def run(self, ctx: CheckContext) -> CheckResult: ...


def reads_frames(check: Check) -> bool:
    """Whether `check` gathers its facts from Spark frames of the bulk events (class attribute `frames = True`):
    it cannot run on rows in memory, and the in-process evaluator (`spark_analysis.inprocess`) gathers the same
    facts from its own parse and calls the same judge. Every other check runs as it is on rows, on both paths."""
    return getattr(check, "frames", False) is True


AUTHORITY_FAMILIES = ("controller", "partition")
AUTHORITY_CHECKS = ("slo.partition_unavailable", "slo.controller_failover")
"""The checks that judge the controller's decisions from one authority's view (ZooKeeper's, or KRaft's metadata):
every check of these families, and the SLOs measured from leaders and controllers."""
MIGRATION_CHECKS = ("controller.migration_handover", "partition.dual_write_agrees")
"""Checks of those families written for a migration: they judge the hand-over itself, so a migration leaves them
judged."""


def across_migration(check: Check, ctx: CheckContext) -> CheckResult | None:
    """Unknown for a check of `AUTHORITY_FAMILIES`/`AUTHORITY_CHECKS` in a run that migrated to KRaft, unless it runs
    on rows and the KRaft controller's taking of `/controller` was observed: from the metadata copy on the KRaft
    controller gives the orders while ZooKeeper is still written, the brokers leave `/brokers/ids` alive, and
    elections follow KRaft's rules, so one authority's view judges the run wrongly (on Apache Kafka 3.9.2 it failed
    `controller.unique`, `election_conforms` and `partition_unavailable` over a clean migration). Those that run on
    rows are judged on the ZooKeeper phase instead (`zookeeper_phase`, by `run_check`). None: judged (as usual, or
    on that phase)."""
    if not _judges_authority(check):
        return None
    migration = ctx.operations.migration
    if migration is None or zookeeper_phase(check, ctx) is not None:
        return None
    why = ("from Spark frames, which are not cut to the ZooKeeper phase" if reads_frames(check) else
           "on the ZooKeeper phase alone, whose end is not known: no KRaft controller was seen taking /controller")
    return unknown(check.id, f"cannot conclude: the run migrated to KRaft from {migration.start:.1f}s (op "
                   f"#{migration.op_id}), and this check reads one authority's view of the controller's decisions, "
                   f"{why}")


def _judges_authority(check: Check) -> bool:
    return (check.family in AUTHORITY_FAMILIES or check.id in AUTHORITY_CHECKS) and check.id not in MIGRATION_CHECKS


@dataclass(frozen=True, slots=True)
class ZookeeperPhase:
    """A migration's ZooKeeper phase: up to `end`, when KRaft controller `controller` took `/controller`."""

    end: float
    controller: int

    def told(self, result: CheckResult, kraft: CheckResult | None = None) -> CheckResult:
        """`result`, judged on this phase, saying so; with `kraft`, the same check's result on the KRaft phase from
        the metadata log (`kraft_phase`) joined to it: the worse status, both summaries, both evidences, its
        metrics prefixed `kraft_` and the phase's end as `zookeeper_phase_until_s`. Without it the KRaft phase is
        said not to be judged (the phase's end: `judged_until_s`)."""
        head = f"ZooKeeper phase (to {self.end:.1f}s, when KRaft controller {self.controller} took /controller)"
        if kraft is None:
            return replace(result, summary=f"{head}: {result.summary}; the KRaft phase after it is not judged",
                           metrics={**result.metrics, "judged_until_s": round(self.end, 3)})
        status = worst((result.status, kraft.status))
        first = kraft if kraft.status == status and result.status != status else result
        return replace(result, status=status, fault=first.fault,
                       summary=f"{head}: {result.summary}; KRaft phase (the KRaft controllers' metadata log): "
                               f"{kraft.summary}",
                       evidence=(*result.evidence, *kraft.evidence),
                       metrics={**result.metrics, "zookeeper_phase_until_s": round(self.end, 3),
                                **{f"kraft_{k}": v for k, v in kraft.metrics.items()}},
                       permitted=tuple(dict.fromkeys((*result.permitted, *kraft.permitted))))


KRAFT_LOG_CHECKS = ("partition.election_conforms", "partition.leader_in_isr")
"""The checks that also judge a migration's KRaft phase, on the KRaft controllers' metadata log
(`CheckContext.metadata_log`): every leader it wrote must be one KRaft's rules allow (rule M7)."""


def kraft_phase(check: Check, ctx: CheckContext) -> CheckResult | None:
    """`check` run on the KRaft controllers' metadata log, for a check of `KRAFT_LOG_CHECKS` in a run whose history
    holds it (`src: log`: the process backend reads it after a migration); None otherwise. The log holds only what
    the KRaft controllers decided, from the migration's metadata copy on, so the whole log is the KRaft phase."""
    if check.id not in KRAFT_LOG_CHECKS:
        return None
    log = ctx.metadata_log()
    return check.run(log) if log.rows("partition.state") else None


def zookeeper_phase(check: Check, ctx: CheckContext) -> ZookeeperPhase | None:
    """The phase a check of the authority families that runs on rows is judged on, in a run that migrated to KRaft:
    until the KRaft controller took `/controller`, the ZooKeeper-mode controller gave every order, by ZooKeeper
    mode's rules (KIP-866: the brokers' roll into migration mode comes first, under it). None: the run did not
    migrate, or no KRaft controller was seen taking over (`across_migration` then says unknown), or the check is not
    of those families or reads frames."""
    from spark_analysis.facts.liveness import kraft_takeover

    if not _judges_authority(check) or reads_frames(check) or ctx.operations.migration is None:
        return None
    first = kraft_takeover(ctx.rows("controller"), ctx.run.kraft_controller_ids)
    return None if first is None else ZookeeperPhase(float(first.get("t") or 0.0), int(first["broker"]))


def cannot_judge(check: Check, ctx: CheckContext) -> CheckResult | None:
    """Unknown when the history lacks events `check` needs, or the run is one it cannot judge (`across_migration`);
    None: it may run. Every path that evaluates a check asks this first."""
    missing = sorted(t for t in check.needs if ctx.count(t) == 0)
    if missing:
        return unknown(check.id, f"cannot conclude: no {', '.join(missing)} events in the history")
    return across_migration(check, ctx)


def run_check(check: Check, ctx: CheckContext) -> CheckResult:
    """Run `check`: what `cannot_judge` says first; in a run that migrated to KRaft, a check of the authority
    families on its ZooKeeper phase (`zookeeper_phase`); an exception -> unknown naming it; timed."""
    start = time.perf_counter()
    result_or_none = cannot_judge(check, ctx)
    phase = zookeeper_phase(check, ctx) if result_or_none is None else None
    if result_or_none is not None:
        result = result_or_none
    else:
        try:
            result = (check.run(ctx) if phase is None
                      else phase.told(check.run(ctx.until(phase.end)), kraft_phase(check, ctx)))
        except Exception as exc:
            tb = traceback.format_exc(limit=6)
            result = unknown(
                check.id,
                f"check crashed: {type(exc).__name__}: {exc}".splitlines()[0][:300],
                {"traceback": tb},
            )
        if result.check_id != check.id:
            result = replace(result, check_id=check.id)
    return replace(result, duration_s=time.perf_counter() - start)
