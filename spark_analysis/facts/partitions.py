"""The partition states the authoritative observer recorded, and the leader elections they show.

Owns `partition_timeline` (per partition, the `partition.state` events of the authoritative source
(`liveness.authoritative`) that carry an ISR, in the observer's order, with the registrations that say when a broker
went and came back: file order where the states and registrations come from one observer, the history clock
otherwise), where an elected leader came from in the state before it (`eligibility`: the ISR, the ELR, the last known
leader, or outside; `joined_unobserved`: a replica outside the old ISR that may have joined it unobserved), and
`leader_elections`: how many leader changes the states show and the unclean ones among them. The partition checks
judge these (`checks.partition.isr`, `checks.partition.checks`), and the permits rule reads the unclean elections
(`checks.shared.permits.unclean_partitions`): a fact of the history, below both.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

from spark_analysis.facts.context import CheckContext, Row, once_per_verify
from spark_analysis.facts.liveness import DOWN_TYPES, LIVENESS_TYPES, UP_TYPES, Liveness, authoritative, build_liveness

Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionTimeline:
    """The authoritative partition states per partition and the registrations, in the observer's order."""

    states: dict[Partition, list[Row]]
    downs: list[Row]
    ups: list[Row]
    same_source: bool

    def order(self, ev: Row) -> tuple[float, int]:
        return (0.0, int(ev.get("seq") or 0)) if self.same_source else (float(ev.get("t") or 0.0),
                                                                          int(ev.get("seq") or 0))

    def precedes(self, a: Row, b: Row) -> bool:
        """Whether `a` was written before `b`: by ZooKeeper's zxids where both carry one (a state's modification,
        a registration's creation), else by `order`. The ZooKeeper observer stamps a state with the watch that made
        it read it, and reads it later, so the data may be a write made after a registration stamped later (seen on
        Apache Kafka 3.9.2: a leader put broker 3 back in the ISR once the controller knew it registered again,
        read with a stamp 0.37 s before the registration's)."""
        za, zb = a.get("zxid"), b.get("zxid")
        if za is not None and zb is not None:
            return int(za) < int(zb)
        return self.order(a) < self.order(b)

    def before(self, ev: Row, states: list[Row]) -> Row | None:
        """The last state of `states` before `ev`."""
        last = None
        for st in states:
            if self.order(st) >= self.order(ev):
                break
            last = st
        return last

    def after(self, ev: Row, states: list[Row], until: Row | None) -> list[Row]:
        """The states after `ev` and before `until` (None: to the end)."""
        return [st for st in states if self.order(st) > self.order(ev)
                and (until is None or self.precedes(st, until))]

    def next_up(self, down: Row) -> Row | None:
        for up in self.ups:
            if up.get("broker") == down.get("broker") and self.order(up) > self.order(down):
                return up
        return None


def partition_timeline(ctx: CheckContext) -> PartitionTimeline:
    states = authoritative(ctx.rows("partition.state"))
    sources = {e.get("src") for e in states}
    registrations = ctx.rows(*LIVENESS_TYPES)
    mine = [e for e in registrations if e.get("src") in sources]
    same = bool(mine) and len(sources) == 1
    chosen = mine if same else registrations
    by_tp: dict[Partition, list[Row]] = defaultdict(list)
    for st in states:
        if st.get("topic") is not None and st.get("partition") is not None and st.get("isr") is not None:
            by_tp[(str(st["topic"]), int(st["partition"]))].append(st)
    tl = PartitionTimeline(dict(by_tp), [], [], same)
    for group in by_tp.values():
        group.sort(key=tl.order)
    downs = sorted((e for e in chosen if e.get("type") in DOWN_TYPES and e.get("broker") is not None), key=tl.order)
    ups = sorted((e for e in chosen if e.get("type") in UP_TYPES and e.get("broker") is not None), key=tl.order)
    return PartitionTimeline(tl.states, _first_downs(downs, ups, tl), ups, same)


def _first_downs(downs: list[Row], ups: list[Row], tl: PartitionTimeline) -> list[Row]:
    """Each broker's going-away events, without repeats (fenced then unregistered count once)."""
    out: list[Row] = []
    events = sorted([*downs, *ups], key=tl.order)
    down_now: set[int] = set()
    for ev in events:
        broker = int(ev["broker"])
        if ev.get("type") in DOWN_TYPES:
            if broker not in down_now:
                out.append(ev)
            down_now.add(broker)
        else:
            down_now.discard(broker)
    return out


def caught_up(prev: Row, ev: Row) -> list[int]:
    """Replicas outside the old ISR that are in the new one, when states were missed in between (the leader
    epoch rose by more than one): a replica a reassignment added may have caught up and joined the ISR
    before the election, unobserved (the ZooKeeper observer's one-shot watch saw epoch 1 with ISR [3, 2],
    then epoch 3 with leader 1, ISR [1, 2], for a move of [3, 2] to [1, 2] on the reference broker). Only
    replicas of the partition, and only when the new ISR keeps a member of the old one, as
    `checks.partition.checks._rejoined`.
    Also when the leader epoch rose by one but the new ISR holds the whole old one and the new leader: an ISR
    expansion does not bump the leader epoch, so an unobserved one may have come first (seen on Apache Kafka:
    leader 2, ISR [2, 1], then leader 3, ISR [2, 1, 3] one epoch later, broker 3 back from a kill); an unclean
    election writes the ISR [new leader] alone."""
    old, new = set(prev.get("isr") or []), [int(b) for b in ev.get("isr") or []]
    e0, e1 = prev.get("leader_epoch"), ev.get("leader_epoch")
    if not old & set(new) or e0 is None or e1 is None:
        return []
    expanded = old <= set(new) and ev.get("leader") in new
    if int(e1) - int(e0) < 2 and not expanded:
        return []
    replicas = {int(b) for b in (prev.get("replicas") or [])}
    return [b for b in new if b not in old and b in replicas]


def rejoined(prev: Row, ev: Row, live: Liveness) -> list[int]:
    """Members of the new ISR that came back (up / unfenced) after the state before it was observed: their
    rejoining the ISR may have been written and superseded between two observations (a KRaft metadata poll
    under load saw leader 2 with ISR [2, 3], then leader 1 with ISR [1, 3] after broker 2's controlled
    shutdown, never the [1, 2, 3] in between; the ZooKeeper observer's one-shot watch the same in a rolling
    upgrade on Apache Kafka 3.7.0 -> 3.9.2: leader 2, ISR [2, 3], then leader 1, ISR [3, 1] one epoch later,
    broker 1 back from its restart). Only when the new ISR keeps a member of the old one: an unclean election
    writes the new leader alone, and that stays judged against the observed ISR."""
    old, new = set(prev.get("isr") or []), [int(b) for b in ev.get("isr") or []]
    if not old & set(new):
        return []
    t0, t1 = float(prev.get("t") or 0.0), float(ev.get("t") or 0.0)
    return [b for b in new if b not in old and any(up and t0 < tt <= t1 for tt, up in live.transitions.get(b, ()))]


def joined_unobserved(prev: Row, ev: Row, live: Liveness) -> list[int]:
    """The one rule for "this replica may have joined the ISR between two observed states": `caught_up` (the
    leader epoch skipped one, or the ISR only grew) or `rejoined` (its broker came back in between). Both the
    unclean-election count (`leader_elections`) and the election model (`checks.partition.checks`) read it."""
    return sorted({*caught_up(prev, ev), *rejoined(prev, ev, live)})


def last_known_leader(prev: Row, ev: Row, live: Liveness) -> int | None:
    """The last known leader KRaft may elect in `ev` when the ISR and the ELR are empty
    (`PartitionChangeBuilder.canElectLastKnownLeader`). The ELR may be empty only in `ev`'s own change: a fenced
    ELR member that registers again after an unclean shutdown leaves the ELR and the ISR
    (`ReplicationControlManager.handleBrokerUncleanShutdown`), and the same change elects the last known leader
    (seen on 4.4.0, power loss of all three brokers: ISR [], ELR [3], last known [2], then broker 3 registered
    again and one record wrote leader 2, ISR [2], ELR []). So a member that left the ELR in `ev` must have been
    gone (fenced, `live`) then: an unfenced one would have been elected from the ELR."""
    elr, last = prev.get("elr"), prev.get("last_known_elr")
    if elr is None or last is None or prev.get("isr") or len(last) != 1:
        return None
    if set(elr) & {*(ev.get("elr") or []), *(ev.get("isr") or [])} - {int(last[0])}:
        return None  # an ELR member is still in the ELR or the ISR: the ELR was not empty at the election
    if any(live.state_at(int(b), float(ev.get("t") or 0.0)) for b in elr):
        return None  # a live ELR member: KRaft elects from the ELR before the last known leader
    return int(last[0])


def eligibility(prev: Row, ev: Row, live: Liveness) -> str:
    """Where `ev`'s elected leader came from in the state before it: isr, elr, last_known_leader or outside."""
    leader = int(ev["leader"])
    if leader in (prev.get("isr") or []):
        return "isr"
    if leader in (prev.get("elr") or []):
        return "elr"
    return "last_known_leader" if leader == last_known_leader(prev, ev, live) else "outside"


@dataclass(frozen=True, slots=True)
class UncleanElection:
    """A leader elected from outside the last ISR (and, in KRaft, the ELR and the last known leader)."""

    topic: str
    partition: int
    prev: Row
    ev: Row

    @property
    def leader(self) -> int:
        return int(self.ev["leader"])

    @property
    def t(self) -> float:
        return float(self.ev.get("t") or 0.0)


@once_per_verify
def leader_elections(ctx: CheckContext) -> tuple[int, list[UncleanElection]]:
    """How many leader changes the authoritative states show, and the unclean ones among them. A replica that
    may have joined the ISR between two observed states (`joined_unobserved`) is not outside it."""
    elections = 0
    unclean: list[UncleanElection] = []
    registrations = authoritative(ctx.rows(*LIVENESS_TYPES))
    live = build_liveness(registrations)
    for (topic, part), states in partition_timeline(ctx).states.items():
        for prev, ev in itertools.pairwise(states):
            leader = ev.get("leader")
            if leader is None or leader < 0 or leader == prev.get("leader"):
                continue
            elections += 1
            if eligibility(prev, ev, live) == "outside" and int(leader) not in joined_unobserved(prev, ev, live):
                unclean.append(UncleanElection(topic, part, prev, ev))
    return elections, unclean
