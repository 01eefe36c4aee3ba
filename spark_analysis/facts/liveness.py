"""Node liveness on the history clock: brokers from their registration events, KRaft voters from
their quorum answers and the faults that took them away.

Owns `Liveness`: which brokers are up at time t, with a grace for the small skew between an
observer seeing a registration vanish and seeing its consequences (a new controller, a new
leader). A broker is up after `broker.up` and down after `broker.down`; in KRaft, `broker.fenced`
counts as down and `broker.unfenced` as up (`LIVENESS_TYPES`), because a fenced broker is not an
acceptable leader (Kafka's `ClusterControlManager.isActive`: registered, unfenced, not in controlled
shutdown). The KRaft observer's own `broker.up` already means registered and unfenced, so the two
event pairs agree; reading both keeps liveness right when only one of them is recorded. ZooKeeper
histories have no fencing events, and their liveness is unchanged.

Also `kraft_takeover`, when a migration's KRaft controller took `/controller`. Also which sources are
authoritative: `authoritative` (the ZooKeeper, else the KRaft metadata observer's events)
and `controller_events` (the `controller` events of the sources that carry epochs), which the partition, controller
and SLO checks read alike.

Also owns `VoterLiveness`, whether a KRaft controller (a Raft voter, which need not be a broker)
was live near a time: live if it answered the quorum observer within the grace (as leader, or as
follower: Kafka's non-leader voters answer DescribeQuorum with NOT_LEADER_OR_FOLLOWER, which is an
answer), taken down if a fault that stopped it (its effect: `down`) had been in force for the grace and
it did not answer, else unknown. Used by the controller, partition, quorum and SLO checks.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from spark_analysis.facts.faults import FaultIndex, FaultWindow

E = TypeVar("E", bound=Mapping[str, Any])
AUTHORITATIVE_SOURCES = ("zk", "kraft")
"""Observers whose events are the cluster's own record (ZooKeeper's znode watches; in KRaft the metadata observer's
answers, which carry leader epochs and the ELR), in order of preference over the AdminClient observer's polls,
which carry no epochs and answer from whichever broker's cache they reach: a broker cut off from ZooKeeper still
lists its peers (seen on Apache Kafka 3.9.2: `broker.up` of brokers 2 and 3 from the AdminClient 8 s before they
registered in ZooKeeper again)."""
LIVENESS_GRACE_S = 3.0
UP_TYPES = ("broker.up", "broker.unfenced")
DOWN_TYPES = ("broker.down", "broker.fenced")
LIVENESS_TYPES = UP_TYPES + DOWN_TYPES
"""The event types broker liveness reads (pass them all to `CheckContext.rows`)."""

BACKLOG_S = 5.0
"""How long a ZooKeeper-mode controller may still be answering one event (taking office, a broker gone) when it
writes: Apache Kafka's controller handles its events one at a time (`ControllerEventManager`'s single event thread),
so it acts on the liveness it read for that event until it reaches the next BrokerChange event. The ISR checks
allow a broker gone since to stay listed (`checks.partition.isr`), the election check a broker registered since to
be unknown and one lost since to be still live (`checks.partition.checks`). A new controller's failover counts from
its first write, not from its taking office: it reads ZooKeeper first, which a loaded machine slows (3.9.2, weak-isr
beside a migration run: controller 3 took office at 24.38 s and first wrote at 29.15 s; its failover's election at
29.88 s did not know broker 2, registered at 24.93 s; recorded
zk-3.9.2-slow-failover-election-before-a-registration)."""


def first_writes(states: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """Controller epoch -> when the ZooKeeper observer first saw a partition state written under it."""
    out: dict[int, float] = {}
    for e in states:
        epoch = e.get("controller_epoch")
        if e.get("src") == "zk" and epoch is not None:
            t = float(e.get("t") or 0.0)
            out[int(epoch)] = min(t, out.get(int(epoch), t))
    return out


def took_office_before(controllers: Sequence[Mapping[str, Any]], t: float,
                       writes: Mapping[int, float] | None = None) -> float | None:
    """When the ZooKeeper-mode controller in office at t took it (its `controller` event from the ZooKeeper
    observer, among `controllers`), if that was at most `BACKLOG_S` before t, or its first write (`writes`, from
    `first_writes`: its failover begins writing only once it has read ZooKeeper) was; else None."""
    starts = [(float(e.get("t") or 0.0), e.get("epoch")) for e in controllers
              if e.get("src") == "zk" and e.get("broker") is not None and int(e["broker"]) >= 0
              and float(e.get("t") or 0.0) <= t]
    if not starts:
        return None
    latest, epoch = max(starts, key=lambda s: s[0])
    first = (writes or {}).get(int(epoch)) if epoch is not None else None
    busy_from = first if first is not None and latest <= first <= t else latest
    return latest if t - busy_from <= BACKLOG_S else None


def authoritative(events: list[E]) -> list[E]:
    """The events of the first AUTHORITATIVE_SOURCES source that reported any, else all of them."""
    for src in AUTHORITATIVE_SOURCES:
        chosen = [e for e in events if e.get("src") == src]
        if chosen:
            return chosen
    return events


def controller_events(events: list[E]) -> list[E]:
    """The `controller` events of the sources that carry epochs (zk, quorum), with their broker -1
    events; all events when no source carries an epoch."""
    sources = {e.get("src") for e in events if e.get("epoch") is not None}
    return [e for e in events if e.get("src") in sources] or events


def kraft_takeover(controllers: Sequence[Mapping[str, Any]], kraft: frozenset[int]) -> Mapping[str, Any] | None:
    """In a ZooKeeper-to-KRaft migration, the ZooKeeper observer's first `controller` event naming one of the `kraft`
    controllers: the moment the KRaft controller took `/controller`, ending the ZooKeeper phase (rule M4); None when
    none did."""
    return next((e for e in controllers if e.get("src") == "zk" and e.get("broker") is not None
                 and int(e["broker"]) in kraft), None)


@dataclass(frozen=True, slots=True)
class Liveness:
    """Per broker, the sorted (t, up?) transitions observed."""

    transitions: Mapping[int, tuple[tuple[float, bool], ...]]

    @property
    def known(self) -> bool:
        return bool(self.transitions)

    def state_at(self, broker: int, t: float) -> bool | None:
        """Up/down at t by the last transition at or before t; None if nothing seen yet."""
        trans = self.transitions.get(broker)
        if not trans:
            return None
        times = [x[0] for x in trans]
        i = bisect.bisect_right(times, t) - 1
        return trans[i][1] if i >= 0 else None

    def live_at(self, t: float) -> set[int]:
        return {b for b in self.transitions if self.state_at(b, t)}

    def ever_up_near(self, broker: int, t: float, grace: float = LIVENESS_GRACE_S) -> bool:
        """Whether `broker` was up at some moment of [t - grace, t + grace]."""
        trans = self.transitions.get(broker, ())
        if self.state_at(broker, t - grace):
            return True
        return any(up for (tt, up) in trans if t - grace <= tt <= t + grace)

    def goes_down_within(self, broker: int, t0: float, t1: float) -> bool:
        return any(not up and t0 <= tt <= t1 for (tt, up) in self.transitions.get(broker, ()))

    def down_since(self, broker: int, t: float) -> float | None:
        """When `broker` last went down at or before t (None if up at t or never seen down)."""
        trans = self.transitions.get(broker, ())
        last = None
        for tt, up in trans:
            if tt > t:
                break
            last = None if up else tt
        return last


def build_liveness(events: Sequence[Mapping[str, Any]]) -> Liveness:
    """Liveness from events of `LIVENESS_TYPES` (others are ignored); ties keep file order."""
    trans: dict[int, list[tuple[float, bool]]] = {}
    for ev in events:
        broker = ev.get("broker")
        kind = ev.get("type")
        if broker is None or kind not in LIVENESS_TYPES:
            continue
        trans.setdefault(int(broker), []).append((float(ev.get("t") or 0.0), kind in UP_TYPES))
    return Liveness({b: tuple(sorted(v, key=lambda x: x[0])) for b, v in trans.items()})


ANSWER_ROLES = frozenset({"leader", "follower"})
"""`quorum.state` roles of a voter that answered (`unknown`: it answered with another error)."""


def quorum_answer(ev: Mapping[str, Any]) -> bool:
    """Whether a `quorum.state` event is a voter's answer: it names the voter and its role is leader or
    follower (a follower's answer carries NOT_LEADER_OR_FOLLOWER); without a role, when it has no error."""
    if ev.get("voter") is None:
        return False
    role = ev.get("role")
    return role in ANSWER_ROLES if role is not None else not ev.get("error")


@dataclass(frozen=True, slots=True)
class VoterLiveness:
    """When each voter answered the quorum observer, and the faults that stopped nodes."""

    answers: Mapping[int, tuple[float, ...]]
    losses: tuple[FaultWindow, ...]

    def answered_near(self, voter: int, t: float, grace: float = LIVENESS_GRACE_S) -> bool:
        times = self.answers.get(voter, ())
        i = bisect.bisect_left(times, t - grace)
        return i < len(times) and times[i] <= t + grace

    def taken_down(self, voter: int, t: float, grace: float = LIVENESS_GRACE_S) -> FaultWindow | None:
        """A fault that stopped `voter` (an isolated voter is alive, only cut off), started at least `grace`
        before t and had not ended by t."""
        for window in self.losses:
            if (window.start <= t - grace and (window.end is None or window.end >= t)
                    and voter in window.effect.stopped()):
                return window
        return None

    def live_near(self, voter: int, t: float, grace: float = LIVENESS_GRACE_S) -> bool | None:
        """True: it answered within `grace` of t; False: a fault had taken it down (and it did not
        answer); None: neither (a follower that answers without change emits nothing)."""
        if self.answered_near(voter, t, grace):
            return True
        return False if self.taken_down(voter, t, grace) is not None else None


def build_voter_liveness(states: Sequence[Mapping[str, Any]], faults: FaultIndex) -> VoterLiveness:
    """VoterLiveness from `quorum.state` events and the run's fault windows."""
    answers: dict[int, list[float]] = {}
    for ev in states:
        if quorum_answer(ev):
            answers.setdefault(int(ev["voter"]), []).append(float(ev.get("t") or 0.0))
    losses = tuple(w for w in faults.windows if w.effect.stopped())
    return VoterLiveness({v: tuple(sorted(ts)) for v, ts in answers.items()}, losses)
