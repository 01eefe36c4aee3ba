"""Smaller schedules than a failing one, delta-debugging style: pure and deterministic.

Owns `Candidate` and `candidates(schedule, duration_s, resolved)`: every schedule one step smaller than the given
one, in the order the shrinker tries them (the biggest cuts first):
- drop one fault (or operation);
- cut the run to the end of the last fault plus `TAIL_S` (or to half, whichever is longer);
- halve one fault's duration, or shorten it to the fault space's shortest (`shortest_s`: an `explore:` block's first
  `durations` value, which the user chose, e.g. to outlast a session timeout; at least `MIN_DURATION_S`) when half
  is shorter than that, and that cuts at least a quarter (`CUT`);
- move one fault earlier (its start halved);
- name one node fewer: a partition group or a `targets:` list without one of its nodes (a group keeps one);
- pin the symbolic targets (`controller`, `leader:…`, `coordinator:…`, …) to the nodes they resolved to in a run
  that failed (`resolved`, `pinned`), because a symbolic target resolves anew on each cluster (a group's
  coordinator is wherever Kafka's random replica placement put its `__consumer_offsets` partition), so a schedule
  that fails on one cluster by killing broker 1 as the coordinator may kill broker 2 on a fresh one (seen on 3.9.2,
  weak-isr seed 2: lost writes in 2 of 2 runs where the coordinator was broker 1, none in 3 where it was not).
  First when the schedule's failing runs all resolved the targets alike (`pin_first`: a steady role, which the
  reused cluster keeps for its life), else last: the other steps run on the reused cluster, where a moving role
  resolves anew in each run while a pinned node may lose it (KAFKA-15489 on 3.6.2, seed 4: pinned first, the
  quorum's leader to voter 103, all 9 steps after it were dropped on the reused cluster, where 103 no longer led;
  weak-isr seed 3 on 3.9.2, pinned last, ran out of budget before the pin, and its `coordinator:billing` form failed
  0 of 1 afresh). The shrinker (`search.explore`) judges the pin on fresh clusters and ends the shrink once a last
  pin is kept; once a pin has not reproduced it offers pinning no more: what fails is then the role, not the node
  (isolating the quorum's leader, whichever voter leads). `controller` (the active controller, the quorum's leader)
  is an elected role (`ELECTED`): which node wins an election is a race that a fresh cluster runs again, while a
  partition's leader or a group's coordinator follows the replica placement; KAFKA-15489 seed 2 on 3.6.2 handed back
  the leader pinned to voter 101 after 2 of 3 fresh runs, and `kafka-chaos run` then failed 1 of 3 (101 led in one).
  So a dedicated controller (`controller:101`), which holds nothing but its role, is never pinned; a broker in the
  role (ZooKeeper mode's controller) holds logs and a side of a partition too, and what fails can be that node (3.9.2,
  weak-isr seed 4: the controller killed was broker 3, which the partition then left alone with ZooKeeper, so it came
  back behind and was elected uncleanly; fresh clusters elected broker 1, 2 or 3 first, and the unpinned schedule lost
  writes in 1 of 3 `kafka-chaos run`s). Such a pin (`Candidate.elected`) must fail every one of its fresh runs, so a
  role that only the pinned broker won by luck does not pass it.

A schedule is a tuple of entries as an experiment file's `schedule:` holds them (mappings: `at`, `fault` or
`action`, `target`/`targets`/`groups`/`link`, `duration`, `params`), so a candidate is written into an ordinary
experiment file and read by the ordinary loader, whose rules may refuse it (the caller skips it then).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.experiment.durations import format_duration
from harness.faults.generator import Entry, last_end, seconds

MIN_DURATION_S = 2.0
"""The shortest fault a shrink leaves in any space (a fault shorter than the observers' polls shows nothing). Within a
space, its shortest duration: weak-isr.yaml draws 8-16 s faults to outlast ZooKeeper's 6 s session timeout, and on
3.9.2 the shrink kept faults halved to 6.5, 5.5 and 2.8 s (seeds 2, 1, 5) that then passed fresh runs."""
CUT = 0.75
"""A shortened fault lasts at most this share of what it did (a smaller cut is not worth a step's reruns)."""
TAIL_S = 10.0
"""The chaos phase a cut run keeps after the last fault ends (its heal and the effects seen after it)."""
CONCRETE = re.compile(r"(broker|zookeeper|controller):\d+")
"""A target naming one node (`broker:2`, `zookeeper:1`, `controller:101`); any other node target is symbolic."""
ELECTED = frozenset({"controller"})
"""Symbolic targets an election resolves (the active controller, the quorum's leader): pinned only to a broker."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One step smaller: what the step did (`step`), the schedule and the run's duration after it; `pin`: the step
    pins symbolic targets (`pinned`); `elected`: one of them an elected role (judged on all of its runs)."""

    step: str
    schedule: tuple[Entry, ...]
    duration_s: float
    pin: bool = False
    elected: bool = False


def parts(entry: Entry) -> tuple[str, Any]:
    """A schedule entry's kind (its fault or action) and what it acts on (target(s), link, groups or topic)."""
    what = entry.get("fault") or entry.get("action") or "?"
    where = entry.get("target") or entry.get("targets") or entry.get("link") or entry.get("groups") or \
        entry.get("topic") or ""
    return str(what), where


def describe(entry: Entry) -> str:
    what, where = parts(entry)
    return f"{what} {where}".strip()


def pinned(schedule: tuple[Entry, ...], resolved: Mapping[int, str]) -> tuple[tuple[Entry, ...], list[str]] | None:
    """`schedule` with each symbolic `target:` replaced by the node it resolved to (`resolved`: entry index -> the
    node, as a run's `fault.start` named it; an elected one only where that is a broker), and what changed; None when
    nothing would."""
    changed: list[str] = []
    out = list(schedule)
    for i, node in sorted(resolved.items()):
        target = schedule[i].get("target") if 0 <= i < len(schedule) else None
        if isinstance(target, str) and not CONCRETE.fullmatch(target) and CONCRETE.fullmatch(node) \
                and (target not in ELECTED or node.startswith("broker:")):
            out[i] = {**copy.deepcopy(schedule[i]), "target": node}
            changed.append(f"#{i} {target} -> {node}")
    return (tuple(out), changed) if changed else None


def candidates(schedule: tuple[Entry, ...], duration_s: float, resolved: Mapping[int, str] | None = None, *,
               pin_first: bool = False, shortest_s: float = MIN_DURATION_S) -> list[Candidate]:
    """Every schedule one step smaller than `schedule` (see the module doc), biggest cuts first; `resolved`: where
    its symbolic targets resolved in a run that failed (entry index -> node); the pinning step first with
    `pin_first`, else last; `shortest_s`: the fault space's shortest duration (halving stops there)."""
    out: list[Candidate] = []
    if len(schedule) > 1:
        for i, e in enumerate(schedule):
            out.append(Candidate(f"drop #{i} {describe(e)}", schedule[:i] + schedule[i + 1:], duration_s))
    cut = max(last_end(schedule) + TAIL_S, duration_s / 2)
    if cut < duration_s - 1:
        out.append(Candidate(f"cut the run to {format_duration(round(cut))}", schedule, float(round(cut))))
    floor = max(MIN_DURATION_S, shortest_s)
    for i, e in enumerate(schedule):
        long = seconds(e.get("duration", 0))
        if (shorter := max(round(long / 2, 1), floor)) <= CUT * long:
            out.append(Candidate(f"shorten #{i} {describe(e)} to {format_duration(shorter)}",
                                 _with(schedule, i, duration=format_duration(shorter)), duration_s))
    for i, e in enumerate(schedule):
        if seconds(e.get("at", 0)) >= 2:
            earlier = round(seconds(e["at"]) / 2, 1)
            out.append(Candidate(f"move #{i} {describe(e)} to {format_duration(earlier)}",
                                 _with(schedule, i, at=format_duration(earlier)), duration_s))
    for i, e in enumerate(schedule):
        out += _fewer_nodes(schedule, i, e, duration_s)
    pin = pinned(schedule, resolved or {})
    if pin is not None:
        elected = any(e.get("target") in ELECTED and e != p for e, p in zip(schedule, pin[0], strict=True))
        step = Candidate(f"pin {', '.join(pin[1])}", pin[0], duration_s, pin=True, elected=elected)
        out = [step, *out] if pin_first else [*out, step]
    return out


def _with(schedule: tuple[Entry, ...], i: int, **changes: Any) -> tuple[Entry, ...]:
    entry = {**copy.deepcopy(schedule[i]), **changes}
    return (*schedule[:i], entry, *schedule[i + 1:])


def _fewer_nodes(schedule: tuple[Entry, ...], i: int, e: Entry, duration_s: float) -> list[Candidate]:
    out: list[Candidate] = []
    groups = e.get("groups")
    if isinstance(groups, list):
        for g, group in enumerate(groups):
            if isinstance(group, list) and len(group) > 1:
                for node in group:
                    smaller = [[n for n in grp if not (gi == g and n == node)] for gi, grp in enumerate(groups)]
                    out.append(Candidate(f"#{i} {describe(e)} without {node}", _with(schedule, i, groups=smaller),
                                         duration_s))
    targets = e.get("targets")
    if isinstance(targets, list) and len(targets) > 1:
        for node in targets:
            rest = [t for t in targets if t != node]
            changes: dict[str, Any] = {"targets": rest} if len(rest) > 1 else {"target": rest[0]}
            entry = {k: v for k, v in copy.deepcopy(e).items() if k != "targets"}
            out.append(Candidate(f"#{i} {describe(e)} without {node}",
                                 (*schedule[:i], {**entry, **changes}, *schedule[i + 1:]), duration_s))
    return out
