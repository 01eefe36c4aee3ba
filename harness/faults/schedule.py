"""The schedule: pure and deterministic given the experiment and its seed.

`plan(exp)` draws each fault's jitter and resolves `random-broker` (and KRaft's `controller:any`) from a RNG seeded by
experiment's seed (and nothing else), and returns the faults in firing order. Times are seconds
from the start of the chaos phase (from the step's start for a fault timed `during` one). Targets that depend on
the cluster's state (`controller`, `leader:…`, `coordinator:…`) stay symbolic: they resolve when the fault fires.
A fault timed `during` a migration step counts its time from that step's start instead, which only the run knows:
`StepTimed` holds such faults until the step begins and then gives their actions on the chaos clock.
`plan_operations(exp)` gives the operations (`action:` entries) in starting order, a shuffled
reassignment drawn from its own RNG (seed and entry index), so adding an operation never changes
the faults' draws.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from harness.experiment.schema import Experiment, FaultSpec, OperationSpec
from harness.faults.targets import LinkTarget, Target


@dataclass(frozen=True, slots=True)
class PlannedFault:
    spec: FaultSpec
    start: float
    end: float | None
    """None: the fault lasts until the heal phase."""
    target: Target | None
    link: LinkTarget | None
    step: int = 0
    """0 for a scheduled fault; k for the k-th step of the operation `spec.index` (a rolling restart's stops)."""

    @property
    def index(self) -> int:
        return self.spec.index

    @property
    def fault_id(self) -> int | str:
        """The history's `fault_id`: the schedule index, or `<op index>.<step>` for an operation's step."""
        return f"{self.spec.index}.{self.step}" if self.step else self.spec.index

    def describe(self) -> str:
        what = self.target or self.link or " | ".join(",".join(map(str, g)) for g in self.spec.groups)
        return f"#{self.fault_id} {self.spec.kind} {what}"


@dataclass(frozen=True, slots=True)
class Action:
    at: float
    what: Literal["inject", "heal"]
    fault: PlannedFault


def _rng(seed: int) -> random.Random:
    return random.Random(f"kafka-chaos/schedule/{seed}")


def _concrete(t: Target | None, rng: random.Random, brokers: int, voters: tuple[int, ...] = ()) -> Target | None:
    if t is not None and t.kind == "random-broker":
        return Target("broker", rng.randint(1, brokers))
    if t is not None and t.kind == "any-controller":
        return Target("controller", rng.choice(voters))
    return t


def plan(exp: Experiment) -> tuple[PlannedFault, ...]:
    """Every fault with its drawn start time and concrete random targets, in firing order."""
    rng = _rng(exp.seed)
    c = exp.cluster
    voters = c.voter_ids()
    out: list[PlannedFault] = []
    for spec in sorted(exp.schedule, key=lambda s: s.index):
        start = spec.at + (rng.uniform(0.0, spec.jitter) if spec.jitter > 0 else 0.0)
        target = _concrete(spec.target, rng, c.brokers, voters)
        link = None
        if spec.link is not None:
            src = _concrete(spec.link.src, rng, c.brokers, voters)
            dst = _concrete(spec.link.dst, rng, c.brokers, voters)
            assert dst is not None
            link = LinkTarget(src, dst)
        end = None if spec.duration is None else start + spec.duration
        out.append(PlannedFault(spec, round(start, 6), None if end is None else round(end, 6), target, link))
    return tuple(sorted(out, key=lambda f: (f.start, f.index)))


def actions(faults: tuple[PlannedFault, ...]) -> tuple[Action, ...]:
    """Injections and heals in time order; at equal times heals come first (free a target before reuse)."""
    items = [Action(f.start, "inject", f) for f in faults]
    items += [Action(f.end, "heal", f) for f in faults if f.end is not None]
    return ordered(items)


def ordered(items: Iterable[Action]) -> tuple[Action, ...]:
    """`items` in firing order: by time, heals first at equal times, then by schedule index."""
    return tuple(sorted(items, key=lambda a: (a.at, a.what != "heal", a.fault.index)))


class StepTimed:
    """The planned faults timed `during` a migration step, held until the step begins (`ready`); what is left when
    the chaos phase ends never began (`waiting`). Pure: the run says when each step began."""

    def __init__(self, faults: Iterable[PlannedFault]) -> None:
        self.waiting = [f for f in faults if f.spec.during is not None]

    def ready(self, began: Mapping[str, float]) -> tuple[Action, ...]:
        """The actions of the faults whose step has begun (`began`: step -> seconds since the chaos phase's start),
        on the chaos clock; they are held no more."""
        now = [replace(f, start=round(f.start + at, 6), end=None if f.end is None else round(f.end + at, 6))
               for f in self.waiting if (at := began.get(f.spec.during or "")) is not None]
        self.waiting = [f for f in self.waiting if f.spec.during not in began]
        return actions(tuple(now))


@dataclass(frozen=True, slots=True)
class PlannedOperation:
    spec: OperationSpec
    start: float
    partitions: tuple[int, ...]
    """The partitions it acts on (every partition of the topic when the entry names none); empty: every
    partition of every topic (elect_preferred without a topic). add_partitions: the partitions it creates
    (from the count the topic has by then, as declared and grown by earlier add_partitions)."""
    replicas: tuple[tuple[int, tuple[int, ...]], ...]
    """reassign: the new replica list per partition (as written, or drawn for `shuffle`)."""
    brokers: tuple[int, ...] = ()
    """rolling_restart, upgrade, finalize_upgrade, migrate_to_kraft: the brokers in restart order (as written, or
    every broker in id order; none for a KRaft finalize_upgrade, which restarts nothing)."""
    controllers: tuple[int, ...] = ()
    """upgrade in KRaft with dedicated controllers: the controllers, rolled before the brokers. migrate_to_kraft:
    the KRaft quorum it starts and, last, rolls out of the migration."""

    @property
    def index(self) -> int:
        return self.spec.index

    @property
    def bound_s(self) -> float:
        """The longest it may run: its timeout, once per node for a rolling restart or upgrade (a migration: also
        once for starting its controllers and once for the copy)."""
        extra = 2 if self.spec.action == "migrate_to_kraft" else 0
        return self.spec.timeout * (max(1, len(self.nodes)) + extra)

    @property
    def nodes(self) -> tuple[Target, ...]:
        """What it restarts, in order: the controllers, then the brokers. A migration restarts the brokers
        (`brokers`), the brokers again (`brokers_kraft`), then the controllers (`controllers_kraft`); its stop
        faults `<op>.<k>` are numbered along this order."""
        brokers = tuple(Target("broker", b) for b in self.brokers)
        controllers = tuple(Target("controller", c) for c in self.controllers)
        if self.spec.action == "migrate_to_kraft":
            return (*brokers, *brokers, *controllers)
        return (*controllers, *brokers)

    def restart_step(self, step: int) -> PlannedFault:
        """A rolling restart's (or upgrade's) `step`-th stop (1-based): a graceful stop of its node, fault
        `<index>.<step>`."""
        target = self.nodes[step - 1]
        return PlannedFault(FaultSpec(index=self.index, at=self.start, kind="stop", target=target), self.start,
                            None, target, None, step)

    def describe(self) -> str:
        if self.spec.action == "migrate_to_kraft":
            return self.spec.describe()
        if self.spec.rolls and self.controllers:
            brokers = f"brokers {', '.join(map(str, self.spec.brokers))}" if self.spec.brokers else "every broker"
            return f"#{self.index} {self.spec.action} the controllers, then {brokers} -> {self.spec.to}"
        if self.spec.rolls and not self.nodes:
            return f"#{self.index} {self.spec.action} metadata.version"
        if self.spec.action in ("scale_consumers", "restart_producer") or self.spec.rolls:
            return self.spec.describe()
        what = self.spec.topic or "every topic"
        if self.spec.count is not None:
            what += f" -> {self.spec.count} partitions"
        elif self.replicas:
            what += " " + " ".join(f"{p}->{list(r)}" for p, r in self.replicas)
        elif self.partitions:
            what += "/" + ",".join(map(str, self.partitions))
        return f"#{self.index} {self.spec.action} {what}"


def plan_operations(exp: Experiment) -> tuple[PlannedOperation, ...]:
    """Every operation with its partitions and (reassign) new replica lists, in starting order. A topic's
    partitions are those it has by then: declared, and grown by earlier `add_partitions`."""
    out: list[PlannedOperation] = []
    counts = {t.name: t.partitions for t in exp.topics}
    for spec in sorted(exp.operations, key=lambda s: (s.at, s.index)):
        if spec.action == "migrate_to_kraft":
            out.append(PlannedOperation(spec, spec.at, (), (), spec.brokers or tuple(range(1, exp.cluster.brokers + 1)),
                                        exp.cluster.voter_ids()))
            continue
        if spec.rolls:
            every = tuple(range(1, exp.cluster.brokers + 1))
            kraft = exp.cluster.kraft
            if spec.action == "finalize_upgrade" and kraft:  # a metadata.version bump: nothing restarts
                out.append(PlannedOperation(spec, spec.at, (), ()))
                continue
            dedicated = spec.action == "upgrade" and kraft and not exp.cluster.combined
            controllers = exp.cluster.voter_ids() if dedicated else ()
            out.append(PlannedOperation(spec, spec.at, (), (), spec.brokers or every, controllers))
            continue
        topic = exp.topic(spec.topic) if spec.topic is not None else None
        if spec.count is not None and spec.topic is not None:  # add_partitions: the partitions it creates
            before = counts.get(spec.topic, 0)
            counts[spec.topic] = max(before, spec.count)
            out.append(PlannedOperation(spec, spec.at, tuple(range(before, spec.count)), ()))
            continue
        parts = spec.partitions or (tuple(range(counts[topic.name])) if topic is not None else ())
        replicas = spec.replicas
        if spec.shuffle and topic is not None:
            rng = random.Random(f"kafka-chaos/operations/{exp.seed}/{spec.index}")
            ids = list(range(1, exp.cluster.brokers + 1))
            replicas = tuple((p, tuple(rng.sample(ids, topic.replication_factor))) for p in parts)
        if replicas:
            parts = tuple(p for p, _ in replicas)
        out.append(PlannedOperation(spec, spec.at, parts, replicas))
    return tuple(sorted(out, key=lambda o: (o.start, o.index)))
