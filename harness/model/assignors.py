"""Consumer partition assignment strategies (KAFKA-BEHAVIOUR.md §5) and the properties verifiers check.

Assignors (each returns ``{member: sorted [(topic, partition), ...]}`` with every member present):

- `range_assign`: librdkafka's range assignor (same as Java's without racks). Per topic, the
  subscribed members sorted by member id (byte-wise, as librdkafka's `rd_kafkap_str_cmp`),
  partitions 0..P-1; n = P // C, m = P % C; the first m members get n+1 consecutive partitions.
- `roundrobin_assign`: librdkafka 2.x's roundrobin assignor. Topics sorted by name, all members
  sorted by id; for each topic, each partition in order goes to the next member (cyclically over
  ALL members, the cursor carried across topics) that subscribes to the topic.
- `sticky_assign`: a deterministic sticky assignor with the two goals of the sticky /
  cooperative-sticky protocols: (1) balanced, (2) subject to (1) keep previous owners. It is NOT
  librdkafka's exact algorithm (whose output a verifier checks by property, not by equality).

Property checks for verifiers (pure, return data rather than raising):

- `assignment_problems(assignment, partitions, subscriptions)`: incompleteness, duplicates,
  unknown partitions, partitions given to a non-subscriber (empty list: a valid assignment).
- `is_balanced(assignment, subscriptions)`: Kafka's sticky-balance definition: counts differ by
  at most one, or else no partition can move to an eligible member with at least two fewer.
- `retained_count(previous, current)`, `max_retention(...)`: how many partitions kept their
  previous owner, and the most any balanced assignment could keep (equal subscriptions).
- `sticky_violations(previous, current, subscriptions)`: moves a sticky assignor must not make.
- `cooperative_revoking(previous, current)`: the partitions a cooperative rebalance's first round takes
  from members that stay (KIP-429: left unassigned until the follow-up rebalance).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.errors import HarnessError

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]
Subscriptions = Mapping[str, Iterable[str]]
"""member -> topics it subscribes to; a member missing from the mapping subscribes to every topic."""
Ownership = Mapping[str, Iterable[TopicPartition]]
"""member -> partitions it owns (a previous or observed assignment)."""


class AssignorError(HarnessError):
    """An assignor was given inconsistent input (duplicate members, negative partition count)."""


def _member_key(member: str) -> bytes:
    # librdkafka compares member ids with memcmp then length: byte-wise UTF-8 order.
    return member.encode("utf-8")


def _normalise(
    members: Sequence[str], partitions: Mapping[str, int], subscriptions: Subscriptions | None
) -> tuple[list[str], dict[str, frozenset[str]]]:
    if len(set(members)) != len(members):
        dupes = sorted({m for m in members if list(members).count(m) > 1})
        raise AssignorError(f"assignor: duplicate member ids {dupes!r}")
    for topic, count in partitions.items():
        if not isinstance(count, int) or count < 0:
            raise AssignorError(
                f"assignor: partition count of topic {topic!r} must be an int >= 0, got {count!r}"
            )
    ordered = sorted(members, key=_member_key)
    subs: dict[str, frozenset[str]] = {}
    for m in ordered:
        wanted = partitions.keys() if subscriptions is None or m not in subscriptions else subscriptions[m]
        subs[m] = frozenset(t for t in wanted if t in partitions)
    return ordered, subs


def _finish(result: Mapping[str, list[TopicPartition]]) -> Assignment:
    return {m: sorted(tps) for m, tps in result.items()}


def range_assign(
    members: Sequence[str], partitions: Mapping[str, int], subscriptions: Subscriptions | None = None
) -> Assignment:
    """librdkafka's ``range`` assignment; `subscriptions` defaults to every topic for every member."""
    ordered, subs = _normalise(members, partitions, subscriptions)
    result: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
    for topic in sorted(partitions):
        consumers = [m for m in ordered if topic in subs[m]]
        if not consumers:
            continue
        count = partitions[topic]
        per, extra = divmod(count, len(consumers))
        for i, member in enumerate(consumers):
            start = per * i + min(i, extra)
            length = per + (1 if i < extra else 0)
            result[member].extend((topic, p) for p in range(start, start + length))
    return _finish(result)


def roundrobin_assign(
    members: Sequence[str], partitions: Mapping[str, int], subscriptions: Subscriptions | None = None
) -> Assignment:
    """librdkafka's ``roundrobin`` assignment; `subscriptions` defaults to every topic for every member."""
    ordered, subs = _normalise(members, partitions, subscriptions)
    result: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
    cursor = -1
    for topic in sorted(partitions, key=lambda t: t.encode("utf-8")):
        if not any(topic in subs[m] for m in ordered):
            continue  # not an eligible topic: nobody subscribes
        for p in range(partitions[topic]):
            while True:
                cursor = (cursor + 1) % len(ordered)
                if topic in subs[ordered[cursor]]:
                    break
            result[ordered[cursor]].append((topic, p))
    return _finish(result)


def _quotas(ordered: list[str], prev_counts: Mapping[str, int], total: int) -> dict[str, int]:
    """Balanced target counts; the ceil slots go to the members that previously owned the most."""
    if not ordered:
        return {}
    floor, extra = divmod(total, len(ordered))
    by_prev = sorted(ordered, key=lambda m: (-prev_counts.get(m, 0), _member_key(m)))
    return {m: floor + (1 if i < extra else 0) for i, m in enumerate(by_prev)}


def resolve_previous(
    members: Sequence[str],
    partitions: Mapping[str, int],
    subscriptions: Subscriptions | None,
    previous: Ownership | None,
) -> dict[str, list[TopicPartition]]:
    """The previous ownership that still counts: current members, existing partitions, still subscribed.

    A partition claimed by several members (stale data) counts for the smallest member id only.
    """
    ordered, subs = _normalise(members, partitions, subscriptions)
    owner: dict[TopicPartition, str] = {}
    for m in ordered:
        for topic, p in (previous or {}).get(m, ()):
            if topic in subs[m] and 0 <= p < partitions[topic] and (topic, p) not in owner:
                owner[(topic, p)] = m
    out: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
    for tp, m in sorted(owner.items()):
        out[m].append(tp)
    return out


def sticky_assign(
    members: Sequence[str],
    partitions: Mapping[str, int],
    subscriptions: Subscriptions | None = None,
    previous: Ownership | None = None,
) -> Assignment:
    """A balanced assignment that keeps as many `previous` owners as balance allows; deterministic.

    With equal subscriptions the result has counts differing by at most one and retains exactly
    `max_retention` partitions. With unequal subscriptions it is balanced in `is_balanced`'s sense.
    """
    ordered, subs = _normalise(members, partitions, subscriptions)
    result: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
    if not ordered:
        return result
    eligible: dict[TopicPartition, list[str]] = {}
    for topic in sorted(partitions):
        holders = [m for m in ordered if topic in subs[m]]
        if holders:
            for p in range(partitions[topic]):
                eligible[(topic, p)] = holders
    kept = resolve_previous(ordered, partitions, subs, previous)
    quota = _quotas(ordered, {m: len(v) for m, v in kept.items()}, len(eligible))
    owner: dict[TopicPartition, str] = {}
    for m in ordered:
        for tp in kept[m][: quota[m]]:
            owner[tp] = m
            result[m].append(tp)
    # Fill: most constrained partitions first, each to its least-loaded eligible member.
    free = sorted((tp for tp in eligible if tp not in owner), key=lambda tp: (len(eligible[tp]), tp))
    for tp in free:
        m = min(eligible[tp], key=lambda x: (len(result[x]), _member_key(x)))
        owner[tp] = m
        result[m].append(tp)
    _rebalance(result, owner, eligible, kept)
    return _finish(result)


def _rebalance(
    result: dict[str, list[TopicPartition]],
    owner: dict[TopicPartition, str],
    eligible: Mapping[TopicPartition, list[str]],
    kept: Mapping[str, list[TopicPartition]],
) -> None:
    """Move partitions to eligible members with >= 2 fewer until none can move (sum of squares drops)."""
    while True:
        moved = False
        for src in sorted(result, key=lambda m: (-len(result[m]), _member_key(m))):
            prev = set(kept.get(src, ()))
            for tp in sorted(result[src], key=lambda t: (t in prev, t)):
                targets = [m for m in eligible[tp] if len(result[m]) <= len(result[src]) - 2]
                if targets:
                    dst = min(targets, key=lambda x: (len(result[x]), _member_key(x)))
                    result[src].remove(tp)
                    result[dst].append(tp)
                    owner[tp] = dst
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


# ----------------------------------------------------------------------------------------------
# Property checks


@dataclass(frozen=True, slots=True)
class StickyViolation:
    """A move a sticky assignor should not have made.

    kind ``"move_to_larger"``: `partition` moved from `from_member` to `to_member`, which now owns
    more partitions than `from_member` (moving it back keeps balance). kind ``"swap"``:
    `from_member` lost `partition` to `to_member` yet got `other` (a partition it did not own
    before and `to_member` may own), so swapping the two keeps counts and retains more.
    """

    kind: str
    partition: TopicPartition
    from_member: str
    to_member: str
    other: TopicPartition | None = None


def _owners(assignment: Ownership) -> dict[TopicPartition, list[str]]:
    owners: dict[TopicPartition, list[str]] = {}
    for m, tps in assignment.items():
        for tp in tps:
            owners.setdefault((tp[0], int(tp[1])), []).append(m)
    return owners


def _subs_of(
    assignment: Mapping[str, object], partitions_topics: Iterable[str], subscriptions: Subscriptions | None
) -> dict[str, frozenset[str]]:
    topics = frozenset(partitions_topics)
    if subscriptions is None:
        return {m: topics for m in assignment}
    return {m: frozenset(subscriptions.get(m, topics)) for m in assignment}


def cooperative_revoking(previous: Ownership, current: Ownership) -> frozenset[TopicPartition]:
    """Partitions that a member of `current` owned in `previous` and no member of `current` owns now: in
    the first round of a cooperative rebalance (KIP-429) the assignor takes them from their owner and
    leaves them unassigned; the follow-up rebalance, once the owner has revoked them, assigns them.
    (A departed member's partitions are not among them: nobody must revoke those first.)"""
    owned_now = {(tp[0], int(tp[1])) for tps in current.values() for tp in tps}
    return frozenset((tp[0], int(tp[1])) for m, tps in previous.items() if m in current for tp in tps
                     if (tp[0], int(tp[1])) not in owned_now)


def assignment_problems(
    assignment: Ownership,
    partitions: Mapping[str, int],
    subscriptions: Subscriptions | None = None,
    may_be_unassigned: frozenset[TopicPartition] = frozenset(),
) -> list[str]:
    """Everything that makes `assignment` invalid (complete + exclusive + within subscriptions);
    `may_be_unassigned` (a cooperative first round's `cooperative_revoking`) need not be owned."""
    problems: list[str] = []
    subs = _subs_of(assignment, partitions, subscriptions)
    owners = _owners(assignment)
    for tp, ms in sorted(owners.items()):
        if len(ms) > 1:
            problems.append(f"{tp[0]}/{tp[1]} owned by {len(ms)} members {sorted(ms)!r}")
        if tp[0] not in partitions or not 0 <= tp[1] < partitions[tp[0]]:
            problems.append(f"{tp[0]}/{tp[1]} does not exist (owned by {sorted(ms)!r})")
        for m in ms:
            if tp[0] not in subs[m]:
                problems.append(f"{tp[0]}/{tp[1]} given to {m!r}, which does not subscribe to {tp[0]!r}")
    for topic in sorted(partitions):
        if any(topic in s for s in subs.values()):
            for p in range(partitions[topic]):
                if (topic, p) not in owners and (topic, p) not in may_be_unassigned:
                    problems.append(f"{topic}/{p} is subscribed but unassigned")
    return problems


def is_balanced(
    assignment: Ownership, subscriptions: Subscriptions | None = None
) -> bool:
    """Kafka's sticky balance: max-min <= 1, or no partition can go to an eligible member with >= 2 fewer.

    `subscriptions` None means every member may own every topic in the assignment.
    """
    counts = {m: len(list(tps)) for m, tps in assignment.items()}
    if not counts or max(counts.values()) - min(counts.values()) <= 1:
        return True
    topics = {tp[0] for tps in assignment.values() for tp in tps}
    subs = _subs_of(assignment, topics, subscriptions)
    for src, tps in assignment.items():
        for topic, _p in tps:
            for dst in assignment:
                if topic in subs[dst] and counts[dst] <= counts[src] - 2:
                    return False
    return True


def retained_count(
    previous: Ownership, current: Ownership
) -> int:
    """How many partitions are owned by the same member in `previous` and `current`."""
    return sum(len(set(map(tuple, previous.get(m, ()))) & set(map(tuple, tps))) for m, tps in current.items())


def max_retention(
    members: Sequence[str],
    partitions: Mapping[str, int],
    previous: Ownership | None,
) -> int:
    """The most partitions any balanced assignment can leave with their previous owner.

    Defined for equal subscriptions (every member subscribes to every topic in `partitions`):
    sum over members of min(previous count, target count), the larger targets going to the
    members that owned the most. Previous claims are first resolved as in `resolve_previous`.
    """
    ordered, _ = _normalise(members, partitions, None)
    kept = resolve_previous(ordered, partitions, None, previous)
    counts = {m: len(v) for m, v in kept.items()}
    quota = _quotas(ordered, counts, sum(partitions.values()))
    return sum(min(counts[m], quota[m]) for m in ordered)


def sticky_violations(
    previous: Ownership,
    current: Ownership,
    subscriptions: Subscriptions | None = None,
) -> list[StickyViolation]:
    """Local stickiness breaches of `current` against `previous` (see `StickyViolation`).

    Only previous owners still present in `current` and still subscribed are considered. An empty
    list does not prove global optimality; compare `retained_count` with `max_retention` for that.
    """
    topics = {tp[0] for tps in current.values() for tp in tps}
    subs = _subs_of(current, topics, subscriptions)
    counts = {m: len(list(tps)) for m, tps in current.items()}
    cur_owner = {tp: ms[0] for tp, ms in _owners(current).items()}
    prev_sets = {m: {(t, int(p)) for t, p in tps} for m, tps in previous.items()}
    cur_sets = {m: {(t, int(p)) for t, p in tps} for m, tps in current.items()}
    out: list[StickyViolation] = []
    for src in sorted(prev_sets, key=_member_key):
        if src not in current:
            continue
        for tp in sorted(prev_sets[src]):
            dst = cur_owner.get(tp)
            if dst is None or dst == src or tp[0] not in subs[src]:
                continue
            if counts[dst] > counts[src]:
                out.append(StickyViolation("move_to_larger", tp, src, dst))
                continue
            for other in sorted(cur_sets[src] - prev_sets[src]):
                if other[0] in subs[dst] and other not in prev_sets.get(src, set()):
                    out.append(StickyViolation("swap", tp, src, dst, other))
                    break
    return out
