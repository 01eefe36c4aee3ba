"""Schedules nobody wrote: multi-fault schedules drawn from a fault space, pure and deterministic given a seed.

Owns `FaultSpace` (which fault kinds and how often each, which target choices, how many faults a schedule holds
and how many may be in effect at once, their durations, the window they fall in) and
`draw_schedule(rng, space, cluster)`: a list of schedule entries, each a mapping as an experiment's `schedule:`
holds it, so a drawn schedule is written into an ordinary experiment file and read by the ordinary loader (its
rules refuse overlaps a kind forbids; the caller draws again). The targets are Jepsen's choices over the
cluster's shape: one node (a broker, the controller, a partition leader, a group coordinator), a minority or a
majority (partitions into two groups), correlated losses (two brokers together), and in ZooKeeper mode ZooKeeper
itself (isolations from it, partitions that put it on the minority side, pauses past the session timeout).
`benchmarks/false_fail_hunt.py` runs such schedules over safe configurations; the explore command builds on it.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.experiment.durations import parse_duration

Entry = dict[str, Any]

ZK_KINDS = ("kill", "stop", "pause", "isolate", "isolate_zookeeper", "partition", "correlated_kill", "latency",
            "reassign", "elect_preferred")
KRAFT_KINDS = ("kill", "stop", "pause", "isolate", "partition", "correlated_kill", "latency", "controller_kill",
               "quorum_partition", "reassign", "elect_preferred")

TARGETS = ("one", "controller", "leaders", "coordinator", "minority", "majority")
"""Jepsen's target choices, as `explore.targets` names them: a fault on one node hits `one` broker by id, the
`controller` (in KRaft: the quorum's leader for `controller_kill` and `quorum_partition`, a broker by id for the
broker faults), a partition's leader (`leaders`) or a group's coordinator (`coordinator`), resolved when it fires;
a `partition` cuts off a `minority` of the brokers from the rest and the metadata quorum (ZooKeeper, or the KRaft
controllers), or a `majority` of them, the quorum staying with the minority. `controller_kill`'s `one` is any
voter (`controller:any`), `quorum_partition`'s a voter by id. `correlated_kill` (two brokers at once, the quorum
with the third), `latency` and the operations have no choice to narrow."""

_NODE_TARGETS = ("one", "controller", "leaders", "coordinator")
CHOICES: dict[str, tuple[str, ...]] = {
    **{kind: _NODE_TARGETS for kind in ("kill", "stop", "pause", "isolate", "isolate_zookeeper")},
    "partition": ("minority", "majority"),
    "controller_kill": ("controller", "one"),
    "quorum_partition": ("controller", "one"),
}
"""The target choices each kind draws among (a kind absent here has none)."""


def uncovered(kinds: Sequence[str], targets: Sequence[str]) -> list[str]:
    """The kinds of `kinds` that `targets` leave nothing to aim at (none of their choices among them)."""
    return [k for k in kinds if k in CHOICES and not set(CHOICES[k]) & set(targets)]


@dataclass(frozen=True, slots=True)
class FaultSpace:
    """What to draw from. `kinds` are the names above; `correlated_kill` kills two brokers at once, `controller_kill`
    and `quorum_partition` act on KRaft voters (`quorum_partition` cuts off from the other voters, as two target
    choices drawn alike, the quorum's leader, whichever voter leads when it fires (Jepsen's partitioned leader), or
    one voter by id), `partition` splits the brokers (and ZooKeeper) into two sides."""

    kinds: tuple[str, ...] = ZK_KINDS
    faults: tuple[int, int] = (2, 4)
    """How many faults a schedule holds (inclusive)."""
    window: tuple[float, float] = (3.0, 30.0)
    """When faults may start, seconds into the chaos phase."""
    durations: tuple[float, float] = (4.0, 16.0)
    topics: tuple[str, ...] = ("orders",)
    partitions: int = 3
    groups: tuple[str, ...] = ("billing",)
    extra: dict[str, Any] = field(default_factory=dict)
    overlap: float = 0.0
    """The chance that a fault starts inside the fault before it, in its second half (`draw_schedule`); 0: every
    start is drawn alone in `window` (the false-fail hunt's draws)."""
    targets: tuple[str, ...] = TARGETS
    """The target choices drawn among (`TARGETS`); every kind in `kinds` with choices needs one of its own here
    (`uncovered`)."""
    rates: tuple[float, ...] = ()
    """How often each of `kinds` is drawn, relative to the others (in `kinds`' order); empty: alike."""
    concurrent: int | None = None
    """The most faults in effect at once: a fault that would start while that many are starts when one ends (and
    is left out when that is past the window's end); None: no limit."""


def _s(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


def draw_fault(rng: random.Random, space: FaultSpace, brokers: int, voters: Sequence[int], kraft: bool) -> Entry:
    """One fault or operation entry (without `at`). With every target choice and no rates the draws are those the
    generator made before either existed (a seed's schedules stay as they were)."""
    kind = rng.choices(space.kinds, weights=space.rates)[0] if space.rates else rng.choice(space.kinds)
    duration = _s(rng.uniform(*space.durations))
    ids = list(range(1, brokers + 1))
    aim = set(space.targets)

    def broker() -> str:
        options = [
            f"broker:{rng.choice(ids)}" if "one" in aim else "",
            ("controller" if not kraft else f"broker:{rng.choice(ids)}") if "controller" in aim else "",
            f"leader:{rng.choice(space.topics)}/{rng.randrange(space.partitions)}" if "leaders" in aim else "",
            f"coordinator:{rng.choice(space.groups)}" if "coordinator" in aim else "",
        ]
        return rng.choice([o for o in options if o])

    def either(a: str, b: str) -> str:
        """Choice `a` or `b` of those in the space (drawn alike when both are)."""
        return rng.choice((a, b)) if {a, b} <= aim else (a if a in aim else b)

    if kind in ("kill", "stop", "pause"):
        return {"fault": kind, "target": broker(), "duration": duration}
    if kind == "isolate":
        return {"fault": "isolate", "target": broker(), "duration": duration}
    if kind == "isolate_zookeeper":
        return {"fault": "isolate_zookeeper", "target": broker(), "duration": duration}
    if kind == "correlated_kill":
        a, b = rng.sample(ids, 2)
        quorum = [f"controller:{v}" for v in voters] if kraft else ["zookeeper:1"]
        return {"fault": "partition", "groups": [[f"broker:{a}", f"broker:{b}"],
                                                 [f"broker:{i}" for i in ids if i not in (a, b)] + quorum],
                "duration": duration}
    if kind == "partition":
        minority = rng.sample(ids, rng.randint(1, max(1, (brokers - 1) // 2)))
        rest = [f"broker:{i}" for i in ids if i not in minority]
        quorum = [f"controller:{v}" for v in voters] if kraft else ["zookeeper:1"]
        # side: ZooKeeper (or the quorum) with the minority, the majority cut off from it
        side = rng.random() < 0.5 if {"minority", "majority"} <= aim else "majority" in aim
        first = [f"broker:{i}" for i in minority] + (quorum if side else [])
        second = rest + ([] if side else quorum)
        return {"fault": "partition", "groups": [first, second], "duration": duration}
    if kind == "latency":
        a, b = rng.sample(ids, 2)
        return {"fault": "latency", "link": f"broker:{a}->broker:{b}",
                "params": {"latency_ms": rng.choice([200, 500, 1500])}, "duration": duration}
    if kind == "controller_kill":
        action = rng.choice(["kill", "pause"])
        target = "controller" if either("controller", "one") == "controller" else "controller:any"
        return {"fault": action, "target": target, "duration": duration}
    if kind == "reassign":
        return {"action": "reassign", "topic": rng.choice(space.topics), "shuffle": True, "timeout": "60s"}
    if kind == "elect_preferred":
        return {"action": "elect_preferred", "topic": rng.choice(space.topics)}
    if kind == "quorum_partition":  # the quorum's leader (whichever voter leads then), or one voter, cut off
        if either("controller", "one") == "controller":
            return {"fault": "isolate", "target": "controller", "params": {"from": "voters"}, "duration": duration}
        lone = rng.choice(voters)
        return {"fault": "partition", "groups": [[f"controller:{lone}"],
                                                 [f"controller:{v}" for v in voters if v != lone]],
                "duration": duration}
    raise ValueError(f"no such fault kind in the space: {kind!r}")


def draw_schedule(rng: random.Random, space: FaultSpace, brokers: int, voters: Sequence[int] = (),
                  kraft: bool = False) -> list[Entry]:
    """A schedule: between `space.faults` faults, each starting in `space.window`, in start order. With
    `space.overlap`, each fault after the first may instead start in the second half of the one before it (a fault
    with a duration): Jepsen's nemeses compose concurrently, and many losses need a second fault while the first
    one's effect holds (a lone leader acknowledging writes, then killed), which independent starts rarely draw."""
    n = rng.randint(*space.faults)
    starts = sorted(round(rng.uniform(*space.window), 1) for _ in range(n))
    entries = [{"at": f"{at:g}s", **draw_fault(rng, space, brokers, voters, kraft)} for at in starts]
    if space.overlap > 0:
        for before, entry in itertools.pairwise(entries):
            length = seconds(before.get("duration", 0))
            if length > 0 and rng.random() < space.overlap:
                at = seconds(before["at"]) + rng.uniform(length / 2, length)
                entry["at"] = f"{round(min(at, space.window[1]), 1):g}s"
        entries = sorted(entries, key=lambda e: seconds(e["at"]))
    return entries if space.concurrent is None else at_most(entries, space.concurrent, space.window[1])


def at_most(schedule: Sequence[Entry], concurrent: int, latest: float) -> list[Entry]:
    """`schedule` with at most `concurrent` faults in effect at any moment: a fault that would start while that many
    are in effect, or run into that many, starts at the first moment it fits (one of them ended), or is left out
    when that is after `latest`. Operations (no duration) take no room. Pure: it draws nothing."""
    kept: list[tuple[float, float]] = []
    out: list[Entry] = []
    for entry in sorted((dict(e) for e in schedule), key=lambda e: seconds(e["at"])):
        length = seconds(entry.get("duration", 0))
        at = seconds(entry["at"])
        if length > 0:
            fits = [t for t in sorted({at, *(math.ceil(end * 10) / 10 for _, end in kept if end > at)})
                    if _most_in_effect(kept, t, t + length) < concurrent]
            if not fits or fits[0] > latest:
                continue
            at = fits[0]
            kept.append((at, at + length))
        entry["at"] = f"{at:g}s"
        out.append(entry)
    return sorted(out, key=lambda e: seconds(e["at"]))


def _most_in_effect(spans: Sequence[tuple[float, float]], start: float, end: float) -> int:
    """The most of `spans` (start, end) in effect at one moment of [start, end)."""
    moments = [start, *(s for s, _ in spans if start < s < end)]
    return max(sum(s <= t < e for s, e in spans) for t in moments)


def seconds(value: object) -> float:
    """An entry's `at` or `duration` in seconds (a number, or a duration text)."""
    return float(value) if isinstance(value, (int, float)) else parse_duration(str(value))


def last_end(schedule: Sequence[Entry]) -> float:
    """When the schedule's last entry ends, seconds into the chaos phase: a fault's start plus its duration, an
    operation's start."""
    return max((seconds(e.get("at", 0)) + seconds(e.get("duration", 0)) for e in schedule), default=0.0)
