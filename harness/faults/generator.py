"""Schedules nobody wrote: multi-fault schedules drawn from a fault space, pure and deterministic given a seed.

Owns `FaultSpace` (which fault kinds, how many faults at once, their durations, the window they fall in) and
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


def _s(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


def draw_fault(rng: random.Random, space: FaultSpace, brokers: int, voters: Sequence[int], kraft: bool) -> Entry:
    """One fault or operation entry (without `at`)."""
    kind = rng.choice(space.kinds)
    duration = _s(rng.uniform(*space.durations))
    ids = list(range(1, brokers + 1))

    def broker() -> str:
        return rng.choice([f"broker:{rng.choice(ids)}", "controller" if not kraft else f"broker:{rng.choice(ids)}",
                           f"leader:{rng.choice(space.topics)}/{rng.randrange(space.partitions)}",
                           f"coordinator:{rng.choice(space.groups)}"])

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
        side = rng.random() < 0.5  # ZooKeeper (or the quorum) with the minority or with the majority
        first = [f"broker:{i}" for i in minority] + (quorum if side else [])
        second = rest + ([] if side else quorum)
        return {"fault": "partition", "groups": [first, second], "duration": duration}
    if kind == "latency":
        a, b = rng.sample(ids, 2)
        return {"fault": "latency", "link": f"broker:{a}->broker:{b}",
                "params": {"latency_ms": rng.choice([200, 500, 1500])}, "duration": duration}
    if kind == "controller_kill":
        return {"fault": rng.choice(["kill", "pause"]), "target": rng.choice(["controller", "controller:any"]),
                "duration": duration}
    if kind == "reassign":
        return {"action": "reassign", "topic": rng.choice(space.topics), "shuffle": True, "timeout": "60s"}
    if kind == "elect_preferred":
        return {"action": "elect_preferred", "topic": rng.choice(space.topics)}
    if kind == "quorum_partition":  # the quorum's leader (whichever voter leads then), or one voter, cut off
        if rng.choice(("leader", "one")) == "leader":
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
    if space.overlap <= 0:
        return entries
    for before, entry in itertools.pairwise(entries):
        length = seconds(before.get("duration", 0))
        if length > 0 and rng.random() < space.overlap:
            at = seconds(before["at"]) + rng.uniform(length / 2, length)
            entry["at"] = f"{round(min(at, space.window[1]), 1):g}s"
    return sorted(entries, key=lambda e: seconds(e["at"]))


def seconds(value: object) -> float:
    """An entry's `at` or `duration` in seconds (a number, or a duration text)."""
    return float(value) if isinstance(value, (int, float)) else parse_duration(str(value))


def last_end(schedule: Sequence[Entry]) -> float:
    """When the schedule's last entry ends, seconds into the chaos phase: a fault's start plus its duration, an
    operation's start."""
    return max((seconds(e.get("at", 0)) + seconds(e.get("duration", 0)) for e in schedule), default=0.0)
