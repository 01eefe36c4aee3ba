"""The explore loop: draw schedules, run them until one fails, then shrink it; pure given its runner and clock.

Owns `Outcome` (what one run of a schedule gave), the `Runner` protocol (run a schedule, verify it), `Budget`,
`explore(...)` and its `ExploreResult`. A schedule fails when its verdict fails (with `find`: when that check
fails). Runs are not deterministic, so during the shrink a candidate counts as failing when it fails at least
`needed` of `reruns` runs with a failing check the first failure had (`reproduces`); the loop stops at a local
minimum (no candidate reproduces) or when the budget ends. Every run is recorded, with the shrink step it served.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from harness.explore.shrink import Candidate, candidates
from harness.faults.generator import Entry

Status = Literal["pass", "fail", "unknown"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run of a schedule: its verdict's status, its failing checks and where it is."""

    status: Status
    failing: tuple[str, ...] = ()
    run_dir: str | None = None
    note: str | None = None


class Runner(Protocol):
    """Runs `schedule` for `duration_s` seconds of chaos (an experiment file with that schedule) and verifies it.
    `label` names the run (its directory)."""

    def __call__(self, schedule: tuple[Entry, ...], duration_s: float, label: str) -> Outcome: ...


@dataclass(slots=True)
class Budget:
    """Wall-clock seconds for the whole exploration (`clock` injectable for tests)."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    _start: float = field(init=False)

    def __post_init__(self) -> None:
        self._start = self.clock()

    @property
    def left(self) -> float:
        return max(0.0, self.seconds - (self.clock() - self._start))


@dataclass(frozen=True, slots=True)
class Tried:
    """One run: the schedule, the outcome, and what it was for (`draw 3`, `shrink: drop #1 kill broker:2`)."""

    purpose: str
    schedule: tuple[Entry, ...]
    duration_s: float
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class ShrinkStep:
    """A candidate of the shrink: the step, the outcomes of its reruns and whether it was kept."""

    step: str
    outcomes: tuple[Outcome, ...]
    kept: bool


@dataclass(slots=True)
class ExploreResult:
    tried: list[Tried] = field(default_factory=list)
    failing: Tried | None = None
    """The first drawn schedule that failed."""
    target: tuple[str, ...] = ()
    """The checks the shrink keeps failing: the first failure's (or `find`)."""
    minimal: Candidate | None = None
    shrink: list[ShrinkStep] = field(default_factory=list)
    local_minimum: bool = False
    """Whether the shrink ended because no candidate reproduced (False: the budget ended first)."""


def failed(outcome: Outcome, find: str | None) -> bool:
    return outcome.status == "fail" and (find is None or find in outcome.failing)


def reproduces(run: Runner, cand: Candidate, target: tuple[str, ...], needed: int, reruns: int,
               result: ExploreResult, budget: Budget) -> tuple[bool, tuple[Outcome, ...]]:
    """Whether `cand` fails with a check of `target` in at least `needed` of `reruns` runs (stops as soon as the
    answer is known, or the budget ends: then not)."""
    outcomes: list[Outcome] = []
    hits = 0
    for k in range(reruns):
        if budget.left <= 0 or hits >= needed or hits + (reruns - k) < needed:
            break
        outcome = run(cand.schedule, cand.duration_s, f"shrink-{len(result.shrink)}-{k}")
        result.tried.append(Tried(f"shrink: {cand.step} (run {k + 1})", cand.schedule, cand.duration_s, outcome))
        outcomes.append(outcome)
        hits += outcome.status == "fail" and bool(set(outcome.failing) & set(target))
    return hits >= needed, tuple(outcomes)


def explore(draw: Callable[[int], tuple[tuple[Entry, ...], float]], run: Runner, budget: Budget, *,
            needed: int = 2, reruns: int = 3, find: str | None = None,
            say: Callable[[str], None] = lambda _s: None) -> ExploreResult:
    """Draw schedule 0, 1, ... (`draw(i)`), run each until one fails, then shrink it (see the module doc)."""
    result = ExploreResult()
    i = 0
    while budget.left > 0:
        schedule, duration = draw(i)
        outcome = run(schedule, duration, f"draw-{i}")
        result.tried.append(Tried(f"draw {i}", schedule, duration, outcome))
        say(f"schedule {i}: {outcome.status}" + (f" ({', '.join(outcome.failing)})" if outcome.failing else "")
            + f"; {budget.left:.0f}s left")
        i += 1
        if failed(outcome, find):
            result.failing = result.tried[-1]
            result.target = (find,) if find else outcome.failing
            break
    if result.failing is None:
        return result
    current = Candidate("as drawn", result.failing.schedule, result.failing.duration_s)
    result.local_minimum = True
    while budget.left > 0:
        for cand in candidates(current.schedule, current.duration_s):
            if budget.left <= 0:
                result.local_minimum = False
                break
            ok, outcomes = reproduces(run, cand, result.target, needed, reruns, result, budget)
            result.shrink.append(ShrinkStep(cand.step, outcomes, ok))
            say(f"shrink: {cand.step}: {'kept' if ok else 'dropped'}; {budget.left:.0f}s left")
            if ok:
                current = cand
                break
        else:
            result.local_minimum = budget.left > 0  # no candidate reproduced (with the budget left to know it)
            break
        if budget.left <= 0:
            result.local_minimum = False
    result.minimal = current
    return result
