"""The explore loop: draw schedules, run them until one fails, then shrink it; pure given its runner and clock. Owns
`Outcome` (what one run of a schedule gave), the `Runner` protocol (run a schedule, verify it), `Budget`,
`explore(...)` and its `ExploreResult`. A schedule fails when its verdict fails (with `find`: when that check fails,
or finds anomalies the run's configuration permits: a trade-off, not a bug, `Outcome.hits`). Runs are not
deterministic, so a drawn schedule that fails counts only once it fails at least `needed` of `reruns` runs with the
same check (`_confirmed`: it is run again by `until_known`, the one rerun rule; one that does not is `unconfirmed`,
and the draws go on), and during the shrink a candidate counts as failing on the same terms (`reproduces`): the
schedule handed back, shrunk or not, is one that failed `needed` of `reruns` times. When the budget ends while a drawn
schedule is being run again, it stands as found, not confirmed (`ExploreResult.confirmed`). The loop stops at a local
minimum (no candidate reproduces) or when the budget ends. Once a failure is confirmed, the shrink leaves the time of
one round of fresh runs (`_reserve`: `reruns` runs as long as the fresh ones seen, which bring a cluster up, or
`FRESH_FACTOR` times the reused cluster's) for `_recheck`: among many candidates, one whose failure is rare can pass
its `needed` of `reruns` by luck (seen on Apache Kafka: minimal.yaml files that lost writes in 1 of 3 runs), and a
reused cluster (leaders moved, logs grown by the schedules before) is not what `kafka-chaos run minimal.yaml` starts
from (seen on 3.9.2, weak-isr seed 2: a drawn schedule confirmed 2 of 3 on the reused cluster lost no write in 3 runs
of its own). So the schedule to hand back is run again, each run on a fresh cluster (`fresh=True`), with a margin: it
must fail every one of `reruns` runs (a schedule kept on 2 of 3 sits near the edge the shrink seeks, and one that
fails all of its fresh runs is likely to fail `needed` of the user's). One that misses gives way to the kept step
before it, the drawn schedule last; when none meets the margin (or the budget ends first), the one that failed most of
its fresh runs is handed back, saying so, and the drawn schedule, said not to reproduce, when none failed any.
Asked to (`afresh`, `--afresh`), every run after the first failure is on a fresh cluster (`auto`: where a fresh run
costs at most `FRESH_CHEAP` times a reused one, `_judge_afresh`) and the recheck counts a kept step's runs. A
pinning step (`shrink.candidates`) runs on fresh clusters when it is tried. It comes first when every failing run of
the schedule resolved its targets alike (a steady role: the shrink goes on from the pinned form), else last, at the
unpinned form's local minimum, and then ends the shrink once kept; a pin kept last whose fresh runs all failed is
handed back without another round; a pin of an elected role (a broker as ZooKeeper mode's controller) must fail
all of its `reruns`. Every run is recorded, with the shrink step it served.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median_high
from typing import Literal, Protocol

from harness.errors import HarnessError
from harness.explore.shrink import MIN_DURATION_S, Candidate, candidates
from harness.faults.generator import Entry

Status = Literal["pass", "fail", "unknown"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run of a schedule: its verdict's status, its failing checks and where it is."""

    status: Status
    failing: tuple[str, ...] = ()
    run_dir: str | None = None
    note: str | None = None
    permitted: tuple[str, ...] = ()
    """Checks that passed with anomalies the run's configuration permits (`CheckResult.permitted`): what `--find`
    looks for when the question is a trade-off ("the smallest schedule that loses my data with these settings")."""
    resolved: tuple[tuple[int, str], ...] = ()
    """Where the schedule's faults on one node resolved in this run: (entry index, node), as its `fault.start` named
    it; the shrink pins a failing run's symbolic targets to them (`shrink.pinned`)."""
    refused: bool = False
    """The loader refused the schedule (no run was made): it refuses it again, so it is not run again."""

    def hits(self, target: tuple[str, ...] | str | None) -> bool:
        """Whether this run shows the anomaly sought: its verdict failed (with a check of `target` when given), or
        a check of `target` found anomalies its configuration permits."""
        if target is None:
            return self.status == "fail"
        wanted = {target} if isinstance(target, str) else set(target)
        return (self.status == "fail" and bool(wanted & set(self.failing))) or bool(wanted & set(self.permitted))


class Runner(Protocol):
    """Runs `schedule` for `duration_s` seconds of chaos (an experiment file with that schedule) and verifies it.
    `label` names the run (its directory); `fresh`: on a cluster of its own, as `kafka-chaos run` would run it."""

    def __call__(self, schedule: tuple[Entry, ...], duration_s: float, label: str, fresh: bool = False) -> Outcome:
        ...


@dataclass(slots=True)
class Budget:
    """Wall-clock seconds for the whole exploration (`clock` injectable for tests)."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    _start: float = field(init=False)

    def __post_init__(self) -> None:
        self._start = self.clock()

    @property
    def spent(self) -> float:
        return round(self.clock() - self._start, 3)

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
    ended_s: float = 0.0
    """Seconds from the exploration's start to this run's verdict (the budget's clock)."""
    shrink_step: int | None = None
    """The index in `ExploreResult.shrink` of the step this run served (None: a draw)."""
    fresh: bool = False
    """Whether the run was asked for a cluster of its own (a pin's, a recheck's)."""
    confirms: str | None = None
    """The draw this run runs again to confirm it (`_confirmed`; its `purpose`, `draw 4`)."""


@dataclass(frozen=True, slots=True)
class ShrinkStep:
    """A candidate of the shrink: the step, the outcomes of its reruns and whether it was kept."""

    step: str
    outcomes: tuple[Outcome, ...]
    kept: bool
    recheck: bool = False
    """A kept step (or the drawn schedule) run again on fresh clusters after the shrink (`_recheck`): `kept` then says
    whether it reproduced."""


@dataclass(slots=True)
class ExploreResult:
    tried: list[Tried] = field(default_factory=list)
    failing: Tried | None = None
    """The first drawn schedule that failed and was confirmed (or whose confirmation the budget cut short)."""
    confirmed: bool = False
    """Whether `failing` failed `needed` of `reruns` runs (False: the budget ended before it was known)."""
    unconfirmed: list[str] = field(default_factory=list)
    """Drawn schedules that failed once and then not often enough (`draw 3: 1 of 3 runs`)."""
    find: str | None = None
    """The check sought (`--find`); None: any failure."""
    target: tuple[str, ...] = ()
    """The checks the shrink keeps failing: the first failure's (or `find`)."""
    minimal: Candidate | None = None
    shrink: list[ShrinkStep] = field(default_factory=list)
    local_minimum: bool = False
    """Whether the shrink ended because no candidate reproduced (False: the budget ended first)."""
    recheck: str | None = None
    """How the handed-back schedule fared when run again on fresh clusters (`_recheck`); None: not run again."""
    afresh: bool | None = None
    """Whether the runs after a drawn schedule's first failure (its confirmation, the shrink, the recheck) are on
    fresh clusters (`_judge_afresh`); None: not known yet."""
    afresh_why: str | None = None
    """What decided `afresh` (the measured cost of a fresh run against a reused one, or the caller's choice)."""
    clusters: int = 0
    """Clusters the runs used (0: a cluster of its own for each run)."""
    fresh: tuple[str, ...] = ()
    """Why each cluster after the first was brought up (a run left the one before unhealthy)."""
    doing: str = "the start"
    """The run under way (`draw 3`, `shrink 2 run 1`): where a Ctrl-C between a run's end and its verdict stopped."""
    stopped: str | None = None
    """Why the exploration stopped before its budget or a local minimum (a signal, a run that could not be recorded);
    what was found up to then stands."""


class Stopped(HarnessError):
    """A runner's way to end the exploration: its run was interrupted by a signal or could not be recorded."""


def until_known(once: Callable[[int], Outcome], target: tuple[str, ...], needed: int, reruns: int, budget: Budget,
                made: tuple[Outcome, ...] = ()) -> tuple[bool, tuple[Outcome, ...]]:
    """The one rerun rule of explore: given the runs `made` so far, call `once(k)` for run k = len(made), ... until it
    is known whether at least `needed` of `reruns` runs hit `target`, or the budget ends or the loader refuses the
    schedule (then not):
    (whether they did, every outcome, `made` included)."""
    outcomes = list(made)
    while True:
        hits = sum(o.hits(target) for o in outcomes)
        if hits >= needed or len(outcomes) >= reruns or hits + (reruns - len(outcomes)) < needed or budget.left <= 0 \
                or any(o.refused for o in outcomes):
            return hits >= needed, tuple(outcomes)
        outcomes.append(once(len(outcomes)))


def reproduces(run: Runner, cand: Candidate, target: tuple[str, ...], needed: int, reruns: int,
               result: ExploreResult, budget: Budget, what: str = "shrink", made: tuple[Outcome, ...] = ()
               ) -> tuple[bool, tuple[Outcome, ...]]:
    """Whether the shrink candidate `cand` fails with a check of `target` in at least `needed` of `reruns` runs
    (`until_known`); `what` names its runs (`shrink`, or `recheck` when one is run again on fresh clusters). A pinning
    step runs on fresh clusters too: it is there so that the schedule means the same on any cluster, and on the reused
    one a node can keep the role it had by luck (KAFKA-15489 seed 3 on 3.6.2: the quorum's leader pinned to voter 102
    reproduced 2 of 3 there, then 0 of 1 afresh). `made`: its runs so far (a kept pin's, which the recheck counts)."""
    fresh = what == "recheck" or cand.pin or bool(result.afresh)

    def once(k: int) -> Outcome:
        result.doing = f"{what} step {len(result.shrink)} run {k + 1}"
        outcome = run(cand.schedule, cand.duration_s, f"{what}-{len(result.shrink)}-{k}", fresh=fresh)
        result.tried.append(Tried(f"{what}: {cand.step} (run {k + 1})", cand.schedule, cand.duration_s, outcome,
                                  budget.spent, len(result.shrink), fresh))
        _judge_afresh(result)
        return outcome

    return until_known(once, target, needed, reruns, budget, made)


def _confirmed(run: Runner, drawn: Tried, target: tuple[str, ...], needed: int, reruns: int, result: ExploreResult,
               budget: Budget) -> tuple[int, int]:
    """A drawn schedule that failed once, run again by `until_known`, its first run counted: (runs that hit
    `target`, runs made)."""
    def once(k: int) -> Outcome:
        result.doing = f"{drawn.purpose} run {k + 1}"
        fresh = result.afresh is not False  # not known yet: this run, on a fresh cluster, is how it gets known
        outcome = run(drawn.schedule, drawn.duration_s, f"{drawn.purpose.replace(' ', '-')}-again-{k}", fresh=fresh)
        result.tried.append(Tried(f"{drawn.purpose} (run {k + 1})", drawn.schedule, drawn.duration_s, outcome,
                                  budget.spent, fresh=fresh, confirms=drawn.purpose))
        _judge_afresh(result)
        return outcome

    _ok, outcomes = until_known(once, target, needed, reruns, budget, (drawn.outcome,))
    return sum(o.hits(target) for o in outcomes), len(outcomes)


def explore(draw: Callable[[int], tuple[tuple[Entry, ...], float]], run: Runner, budget: Budget, *,
            needed: int = 2, reruns: int = 3, find: str | None = None, afresh: bool | None = False,
            shortest_s: float = MIN_DURATION_S, say: Callable[[str], None] = lambda _s: None) -> ExploreResult:
    """Draw schedule 0, 1, ... (`draw(i)`), run each until one fails, then shrink it (see the module doc). `afresh`:
    whether the runs after a first failure are on fresh clusters (`--afresh`; None: where a fresh run is measured to
    be cheap, `_judge_afresh`); `shortest_s`: the space's shortest fault, which the shrink does not go below. A
    `Stopped` from the runner, or Ctrl-C between runs, ends it with `stopped` set and what was found so far."""
    result = ExploreResult(find=find, afresh=afresh, afresh_why="fresh clusters, as asked" if afresh else None)
    try:
        return _explore(draw, run, budget, result, needed, reruns, find, shortest_s, say)
    except (Stopped, KeyboardInterrupt) as exc:
        result.stopped = str(exc) or f"interrupted (Ctrl-C) during {result.doing}"
        result.local_minimum = False
        say(f"stopped: {result.stopped}")
        return result


def _explore(draw: Callable[[int], tuple[tuple[Entry, ...], float]], run: Runner, budget: Budget,
             result: ExploreResult, needed: int, reruns: int, find: str | None, shortest_s: float,
             say: Callable[[str], None]) -> ExploreResult:
    i = 0
    while budget.left > 0:
        schedule, duration = draw(i)
        result.doing = f"draw {i}"
        outcome = run(schedule, duration, f"draw-{i}")
        result.tried.append(Tried(f"draw {i}", schedule, duration, outcome, budget.spent))
        say(f"schedule {i}: {outcome.status}" + (f" ({', '.join(outcome.failing)})" if outcome.failing else "")
            + (f", permitted anomalies in {', '.join(outcome.permitted)}" if outcome.permitted else "")
            + f"; {budget.left:.0f}s left")
        i += 1
        if outcome.hits(find):
            target = (find,) if find else outcome.failing
            drawn = result.tried[-1]
            hits, runs = _confirmed(run, drawn, target, needed, reruns, result, budget)
            if hits >= needed or budget.left <= 0:
                result.failing, result.target, result.confirmed = drawn, target, hits >= needed
                break
            result.unconfirmed.append(f"{drawn.purpose}: {hits} of {runs} runs")
            say(f"schedule {i - 1}: failed {hits} of {runs} runs, not the {needed} needed; drawing on")
    if result.failing is None:
        return result
    as_drawn = current = result.minimal = Candidate("as drawn", result.failing.schedule, result.failing.duration_s)
    kept: list[Candidate] = []
    pin_failed = False  # then what fails is the role (the quorum's leader), not the node: nothing is pinned again
    if result.afresh_why:
        say(f"runs after the first failure: {result.afresh_why}")
    while budget.left > (reserve := _reserve(result, reruns, needed)):
        resolved, steady = _resolved(result, current)
        for cand in candidates(current.schedule, current.duration_s, {} if pin_failed else resolved,
                               pin_first=steady, shortest_s=shortest_s):
            if budget.left <= reserve:
                break
            ok, outcomes = reproduces(run, cand, result.target, reruns if cand.elected else needed, reruns, result,
                                      budget)
            result.shrink.append(ShrinkStep(cand.step, outcomes, ok))
            say(f"shrink: {cand.step}: {'kept' if ok else 'dropped'}; {budget.left:.0f}s left")
            pin_failed = pin_failed or (cand.pin and not ok)
            if ok:
                current = result.minimal = cand
                kept.append(cand)
                break
        else:
            result.local_minimum = budget.left > 0  # no candidate reproduced (with the budget left to know it)
            break
        if current.pin and not steady:  # offered last, at the unpinned form's local minimum: the shrink's end
            result.local_minimum = True
            break
    result.minimal = _recheck(run, [as_drawn, *kept], result, reruns, budget, say)
    return result


def _resolved(result: ExploreResult, current: Candidate) -> tuple[dict[int, str], bool]:
    """Where `current`'s targets resolved in a run of it that hit the target (its first; the drawn schedule's when
    nothing was kept yet), and whether every such run resolved them alike: a steady role (a group's coordinator stays
    on its broker for the reused cluster's life) is pinned first, a moving one (the quorum's leader) last."""
    assert result.failing is not None
    runs = [t.outcome for t in result.tried if t.schedule == current.schedule and t.outcome.hits(result.target)]
    first = dict(runs[0].resolved) if runs else dict(result.failing.outcome.resolved)
    return first, len(runs) > 1 and all(dict(o.resolved) == first for o in runs)


FRESH_FACTOR = 2.0
"""How much longer a run on a fresh cluster takes than one on the reused cluster, until one is seen: it brings its
cluster up first (measured on 2 cores: 68/30 s on KAFKA-15489 3.6.2, 100/50 s and, three explores at once, 185/96 s;
78/70 s on weak-isr.yaml). The first draw is no guide: it also starts the verifiers' Spark, 2-4x a fresh run."""


FRESH_CHEAP = 1.5
"""A fresh run at most this many times as long as a run on the reused cluster is cheap (`_judge_afresh`): measured on
2 cores, weak-isr.yaml on 3.9.2 1.1-1.25x (78/70 s, 84.6/67.9 s), KAFKA-15489 on 3.6.2 2.3x (68/30 s)."""


def _took(result: ExploreResult) -> list[tuple[Tried, float]]:
    """Each run with the seconds it took (from the run before it ended; the first draw's includes the verifiers'
    start)."""
    ends = [t.ended_s for t in result.tried]
    return [(t, b - a) for t, a, b in zip(result.tried, [0.0, *ends], ends, strict=False)]


def _judge_afresh(result: ExploreResult) -> None:
    """While `afresh` is not known (`auto`), once a fresh run and a run on the reused cluster (but the first draw)
    have been timed: judge the rest of the confirmation, the shrink and the recheck on fresh clusters when a fresh
    run costs at most `FRESH_CHEAP` times a reused one. A failure on the reused cluster can hang on what the
    schedules before left there (3.9.2, weak-isr seed 4: three steps kept there each failed their first fresh run);
    where a fresh cluster costs much more (KAFKA-15489 on 3.6.2) the shrink stays there, judged afresh at the end."""
    if result.afresh is not None:
        return
    took = _took(result)
    fresh = [d for t, d in took if t.fresh]
    reused = [d for t, d in took[1:] if not t.fresh]
    if not fresh or not reused:
        return
    f, r = median_high(fresh), median_high(reused)
    result.afresh = r > 0 and f <= FRESH_CHEAP * r
    result.afresh_why = (f"{'fresh' if result.afresh else 'the reused'} clusters: a fresh run took {f:.0f} s, "
                         f"{f / r if r > 0 else float('inf'):.2f}x a reused one ({r:.0f} s; cheap up to "
                         f"{FRESH_CHEAP}x)")


def _reserve(result: ExploreResult, reruns: int, needed: int) -> float:
    """The budget `_recheck` needs: `reruns` runs as long as the median fresh run seen (a pin's), else `FRESH_FACTOR`
    times the median of the last ten but the first draw (reserved at the reused cluster's pace, weak-isr seed 2's
    recheck on 3.9.2 was cut short after 1 of its runs; sized by the first draw, KAFKA-15489 seed 3's left no time for
    a shrink step). Judged afresh, a kept step has made `needed` of its fresh runs already: the rest."""
    took = _took(result)
    fresh = [d for t, d in took if t.fresh]
    recent = median_high([d for _t, d in took[1:][-10:]] or [d for _t, d in took] or [0.0])  # the first draw's
    runs = max(1, reruns - needed) if result.afresh else reruns  # only when it is the only one
    return runs * max(recent, median_high(fresh) if fresh else FRESH_FACTOR * recent)


def _made_afresh(result: ExploreResult, cand: Candidate, reruns: int) -> tuple[Outcome, ...]:
    """The fresh runs `cand` has made already, which the recheck counts: a kept pin's, or a kept step's judged afresh
    (`reproduces`); the drawn schedule's fresh confirmation runs."""
    assert result.failing is not None
    if cand.step == "as drawn":
        drawn = result.failing.purpose
        return tuple(t.outcome for t in result.tried if t.fresh and t.confirms == drawn)[:reruns]
    step = next((s for s in reversed(result.shrink) if s.kept and not s.recheck and s.step == cand.step), None)
    return step.outcomes if step is not None and (cand.pin or result.afresh) else ()


def _recheck(run: Runner, kept: list[Candidate], result: ExploreResult, reruns: int, budget: Budget,
             say: Callable[[str], None]) -> Candidate:
    """The schedule to hand back (`kept`: the drawn schedule, then each kept step): the last one that fails all of
    `reruns` runs on fresh clusters (the margin; the fresh runs it made before count, `_made_afresh`), trying the
    last kept step first, or whose fresh runs the budget cut short before any passed; else the one that failed most
    of its fresh runs (the later on a tie), said to fall short; the drawn schedule, said to be not reproduced afresh,
    when none failed any. `ExploreResult.recheck` says which."""
    assert result.failing is not None
    as_drawn = kept[0]
    best: tuple[int, Candidate, str] | None = None
    while kept:
        cand = kept[-1]
        made = _made_afresh(result, cand, reruns)
        ok, outcomes = reproduces(run, cand, result.target, reruns, reruns, result, budget, "recheck", made)
        if not outcomes:  # the budget had ended
            break
        kept.pop()
        if len(outcomes) > len(made):
            result.shrink.append(ShrinkStep(f"run again: {cand.step}", outcomes[len(made):], ok, recheck=True))
        hits = sum(o.hits(result.target) for o in outcomes)
        cut = not ok and hits == len(outcomes)  # no run passed, and the budget ended before all were made
        seen = f"{cand.step}: {hits} of {len(outcomes)} runs on fresh clusters" + (
            f" ({len(made)} of them before the recheck)" if made else "") + (", cut short by the budget" if cut else "")
        say(f"recheck: {seen}; {budget.left:.0f}s left")
        if ok or cut:
            result.recheck = seen
            return cand
        if best is None or hits > best[0]:
            best = (hits, cand, seen)
    if best is None:
        result.recheck = f"{kept[-1].step}: not run again on a fresh cluster, the budget ended"
        return kept[-1]
    if best[0] > 0:
        result.recheck = f"{best[2]}, short of the {reruns} of {reruns} asked" + (
            "; the budget ended before the steps before it were run again" if kept else
            "; no step before it, nor the drawn schedule, did better")
        return best[1]
    result.recheck = ("not reproduced afresh: no kept step, nor the drawn schedule, failed a run on fresh clusters"
                      + (" before the budget ended" if kept else "") + "; handed back as drawn")
    return as_drawn
