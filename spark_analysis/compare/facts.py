"""The typed facts about one run that `kafka-chaos compare` lines up against another run's.

Owns the frozen dataclasses (`RunHeader`, `Span`, `Election`, `IsrChange`, `AckStall`, `Measures`,
`FaultFacts`, `CheckStatus`, `RunFacts`) and their JSON form. Times inside a fault are written
relative to that fault's start (`at_s`), so that two runs line up whatever their clocks; the
absolute history time travels along as `t`. Durations are seconds rounded to the millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spark_analysis.facts.faults import FaultWindow

NOT_VERIFIED = "not verified"
"""A check's status in a run without a readable verdict.json (never counted as a pass)."""
NOT_SELECTED = "not selected"
"""A check the run's `verify.checks` left out."""
NOT_RUN = "not run"
"""A check the verdict does not mention at all (a verdict written before the check existed)."""


def ms(value: float) -> float:
    """Seconds rounded to the millisecond."""
    return round(float(value), 3)


@dataclass(frozen=True, slots=True)
class RunHeader:
    """Who a run is: its directory and what run.json and verdict.json say about it."""

    path: str
    name: str
    experiment: str | None
    seed: int | None
    backend: str | None
    flavour: str | None
    version: str | None
    tested: str
    run_status: str | None
    verdict_status: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "experiment": self.experiment, "seed": self.seed,
                "backend": self.backend, "flavour": self.flavour, "version": self.version, "tested": self.tested,
                "run_status": self.run_status, "verdict_status": self.verdict_status}


@dataclass(frozen=True, slots=True)
class Span:
    """One interval an SLO check measured: a controller failover, a leaderless window, a rebalance.

    `subject` is what it concerns (`controller`, a partition `orders/0`, a group); `what` is the
    check's own wording. An interval still open at the end of the history has `end=None` and its
    `duration` runs to the end of the history (a lower bound).
    """

    subject: str
    what: str
    start: float
    end: float | None
    duration: float

    @property
    def still_open(self) -> bool:
        return self.end is None

    def to_json(self, origin: float) -> dict[str, Any]:
        return {"subject": self.subject, "what": self.what, "at_s": ms(self.start - origin), "t": ms(self.start),
                "duration_s": ms(self.duration), "still_open": self.still_open}


@dataclass(frozen=True, slots=True)
class Election:
    """A leader change of one partition: who was chosen and by which rule.

    `rule` is the election strategy of `harness.model.election` the history points at (offline,
    controlled_shutdown, preferred, reassign), as `partition.election_conforms` infers it; None when
    the history does not tell. `new_leader` None means the election left the partition leaderless.
    """

    partition: str
    t: float
    old_leader: int | None
    new_leader: int | None
    leader_epoch: int | None
    rule: str | None
    isr_before: tuple[int, ...] | None

    def to_json(self, origin: float) -> dict[str, Any]:
        return {"partition": self.partition, "at_s": ms(self.t - origin), "t": ms(self.t),
                "old_leader": self.old_leader, "new_leader": self.new_leader, "leader_epoch": self.leader_epoch,
                "rule": self.rule, "isr_before": None if self.isr_before is None else list(self.isr_before)}


@dataclass(frozen=True, slots=True)
class IsrChange:
    """The ISR of one partition changing (as a set) from one observed state to the next."""

    partition: str
    t: float
    before: tuple[int, ...]
    after: tuple[int, ...]

    @property
    def added(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.after) - set(self.before)))

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.before) - set(self.after)))

    def to_json(self, origin: float) -> dict[str, Any]:
        return {"partition": self.partition, "at_s": ms(self.t - origin), "t": ms(self.t),
                "before": list(self.before), "after": list(self.after), "added": list(self.added),
                "removed": list(self.removed)}


@dataclass(frozen=True, slots=True)
class AckStall:
    """The longest wait for an ack on one partition among the waits that overlap a fault's window."""

    partition: str
    max_wait_s: float
    acks: int
    value: int | None
    send_t: float | None

    def to_json(self, origin: float) -> dict[str, Any]:
        return {"partition": self.partition, "max_wait_s": ms(self.max_wait_s), "acks": self.acks,
                "value": self.value, "sent_at_s": None if self.send_t is None else ms(self.send_t - origin)}


@dataclass(frozen=True, slots=True)
class Measures:
    """Everything measured within one fault's window (or outside every fault window)."""

    failovers: tuple[Span, ...] = ()
    leaderless: tuple[Span, ...] = ()
    elections: tuple[Election, ...] = ()
    isr_changes: tuple[IsrChange, ...] = ()
    rebalances: tuple[Span, ...] = ()
    ack_stalls: tuple[AckStall, ...] = ()
    unanswered_sends: int = 0
    """Sends made in the window that got neither an ack nor an error."""
    errored_sends: int = 0
    """Sends made in the window that ended in send.error."""

    def to_json(self, origin: float) -> dict[str, Any]:
        closed = [s.duration for s in self.rebalances]
        return {
            "controller_failovers": [s.to_json(origin) for s in self.failovers],
            "leaderless_windows": [s.to_json(origin) for s in self.leaderless],
            "elections": [e.to_json(origin) for e in self.elections],
            "isr_changes": [c.to_json(origin) for c in self.isr_changes],
            "rebalances": {"count": len(self.rebalances), "total_s": ms(sum(closed)),
                           "max_s": ms(max(closed)) if closed else None,
                           "items": [s.to_json(origin) for s in self.rebalances]},
            "ack_stalls": [a.to_json(origin) for a in self.ack_stalls],
            "unanswered_sends": self.unanswered_sends,
            "errored_sends": self.errored_sends,
        }


@dataclass(frozen=True, slots=True)
class FaultFacts:
    """One injected fault of a run and what was measured in its window."""

    window: FaultWindow
    measures: Measures

    def to_json(self) -> dict[str, Any]:
        w = self.window
        return {"kind": w.kind, "target": w.target, "label": w.label, "start": ms(w.start),
                "end": None if w.end is None else ms(w.end),
                "duration_s": None if w.end is None else ms(w.end - w.start),
                **self.measures.to_json(w.start)}


@dataclass(frozen=True, slots=True)
class CheckStatus:
    """One check's outcome in a run, as its verdict.json says (or NOT_VERIFIED / NOT_SELECTED / NOT_RUN)."""

    check_id: str
    status: str
    allowed: bool = False
    summary: str = ""

    @property
    def shown(self) -> str:
        return f"{self.status} (allowed)" if self.allowed and self.status != "pass" else self.status

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "allowed": self.allowed, "shown": self.shown, "summary": self.summary}


@dataclass(frozen=True, slots=True)
class RunFacts:
    """All the comparison knows about one run."""

    header: RunHeader
    faults: tuple[FaultFacts, ...]
    outside: Measures
    checks: tuple[CheckStatus, ...]
    skipped_faults: tuple[str, ...] = ()
    """Fault ids the engine recorded as fault.skipped (the target named nothing)."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    end_t: float = 0.0
    measured: bool = True
    """False when the run has no history: its faults are unknown (not absent)."""

    def fault(self, fault_id: str) -> FaultFacts | None:
        return next((f for f in self.faults if f.window.fault_id == fault_id), None)

    def check(self, check_id: str) -> CheckStatus:
        found = next((c for c in self.checks if c.check_id == check_id), None)
        if found is not None:
            return found
        return CheckStatus(check_id, NOT_VERIFIED if self.header.verdict_status == NOT_VERIFIED else NOT_RUN)
