"""Replication on the leader (KAFKA-BEHAVIOUR.md §3): follower catch-up, ISR shrink/expand, HW, acks.

Pure functions a partition leader calls with its facts and the current time (milliseconds, an
argument; nothing here reads a clock):

- `on_follower_fetch`: a follower's fetch updates its LEO and `last_caught_up_ms` (Kafka's
  `Replica.updateFetchState`: caught up at this fetch if it asked for the leader's LEO; caught
  up at the previous fetch if it asked for the leader LEO seen then).
- `is_caught_up` / `isr_to_shrink`: a follower leaves the ISR when its LEO is behind the
  leader's AND it last caught up more than `replica.lag.time.max.ms` ago.
- `isr_to_expand`: a live non-ISR replica joins once its LEO reached the HW (and, when known,
  the start offset of the leader's current epoch).
- `high_watermark`: min LEO over the ISR, never moving backwards.
- `produce_precheck` / `acks_all_status`: acks=all fails with NOT_ENOUGH_REPLICAS when the ISR
  is smaller than `min.insync.replicas`; it is acknowledged once the HW passed the record.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum

from harness.errors import HarnessError

DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000
"""Kafka >= 2.5 default of replica.lag.time.max.ms (10 000 before). Read the cluster's value."""


class IsrError(HarnessError):
    """Inconsistent replication facts (e.g. a leader that is not in its own ISR)."""


@dataclass(frozen=True, slots=True)
class FollowerState:
    """What the leader knows of one follower: its LEO and when it last was caught up.

    `last_fetch_leader_leo` / `last_fetch_ms` remember the leader LEO and time of the previous
    fetch, as Kafka does, so a follower that reached the old LEO counts as caught up then.
    """

    broker: int
    leo: int = 0
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = 0
    last_fetch_ms: int = 0


def on_follower_fetch(state: FollowerState, fetch_offset: int, leader_leo: int, now_ms: int) -> FollowerState:
    """The follower fetched from `fetch_offset` at `now_ms` while the leader's LEO was `leader_leo`."""
    if fetch_offset >= leader_leo:
        caught_up = max(state.last_caught_up_ms, now_ms)
    elif fetch_offset >= state.last_fetch_leader_leo:
        caught_up = max(state.last_caught_up_ms, state.last_fetch_ms)
    else:
        caught_up = state.last_caught_up_ms
    return replace(
        state,
        leo=fetch_offset,
        last_caught_up_ms=caught_up,
        last_fetch_leader_leo=leader_leo,
        last_fetch_ms=now_ms,
    )


def is_caught_up(state: FollowerState, leader_leo: int, now_ms: int, lag_time_max_ms: int) -> bool:
    """Kafka's `isCaughtUp`: LEO equals the leader's, or caught up within the last `lag_time_max_ms`."""
    return state.leo == leader_leo or now_ms - state.last_caught_up_ms <= lag_time_max_ms


def isr_to_shrink(
    leader: int,
    isr: Iterable[int],
    followers: Mapping[int, FollowerState],
    leader_leo: int,
    now_ms: int,
    lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
) -> frozenset[int]:
    """The ISR followers to remove now (out of sync). A follower with no known state is out of sync."""
    out: set[int] = set()
    for replica in isr:
        if replica == leader:
            continue
        st = followers.get(replica)
        if st is None or not is_caught_up(st, leader_leo, now_ms, lag_time_max_ms):
            out.add(replica)
    return frozenset(out)


def isr_to_expand(
    assigned: Iterable[int],
    isr: Iterable[int],
    followers: Mapping[int, FollowerState],
    live: Collection[int],
    high_watermark: int,
    leader_epoch_start_offset: int | None = None,
) -> frozenset[int]:
    """Live assigned replicas outside the ISR whose LEO reached the HW (and the epoch start offset)."""
    in_isr = frozenset(isr)
    add: set[int] = set()
    for replica in assigned:
        st = followers.get(replica)
        if replica in in_isr or replica not in live or st is None:
            continue
        if st.leo >= high_watermark and (leader_epoch_start_offset is None or st.leo >= leader_epoch_start_offset):
            add.add(replica)
    return frozenset(add)


def next_isr(
    leader: int,
    assigned: Iterable[int],
    isr: Iterable[int],
    followers: Mapping[int, FollowerState],
    live: Collection[int],
    leader_leo: int,
    high_watermark: int,
    now_ms: int,
    lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
) -> tuple[int, ...]:
    """The ISR after one shrink check and one expand check, in AR order (leader always kept)."""
    current = tuple(isr)
    if leader not in current:
        raise IsrError(f"isr: leader {leader} is not in its own ISR {list(current)}")
    ar = tuple(assigned)
    drop = isr_to_shrink(leader, current, followers, leader_leo, now_ms, lag_time_max_ms)
    add = isr_to_expand(ar, current, followers, live, high_watermark)
    members = (set(current) - drop) | add
    ordered = [r for r in ar if r in members] + sorted(r for r in members if r not in ar)
    return tuple(ordered)


def high_watermark(isr: Iterable[int], leos: Mapping[int, int], current_hw: int = 0) -> int:
    """min LEO over the ISR, never below `current_hw` (the HW does not move backwards on a leader)."""
    values = [leos[r] for r in isr if r in leos]
    missing = [r for r in isr if r not in leos]
    if missing:
        raise IsrError(f"high_watermark: no LEO known for ISR member(s) {sorted(missing)} (LEOs {dict(leos)})")
    if not values:
        return current_hw
    return max(current_hw, min(values))


class ProduceError(Enum):
    """Kafka error codes a produce can end with on the replication path."""

    NONE = 0
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20


def produce_precheck(acks: int, isr_size: int, min_insync_replicas: int) -> ProduceError:
    """Before appending: acks=all (-1) with ISR smaller than min.insync.replicas is rejected."""
    if acks not in (-1, 0, 1):
        raise HarnessError(f"produce_precheck: acks must be -1 (all), 0 or 1, got {acks!r}")
    if acks == -1 and isr_size < min_insync_replicas:
        return ProduceError.NOT_ENOUGH_REPLICAS
    return ProduceError.NONE


@dataclass(frozen=True, slots=True)
class AckStatus:
    """Whether a produce waiting on replication is done, and with which error."""

    done: bool
    error: ProduceError = ProduceError.NONE


def acks_all_status(required_offset: int, hw: int, isr_size: int, min_insync_replicas: int) -> AckStatus:
    """acks=all: done once HW >= `required_offset` (last offset + 1); an ISR that shrank below
    min.insync.replicas by then answers NOT_ENOUGH_REPLICAS_AFTER_APPEND (Kafka's
    `checkEnoughReplicasReachOffset`)."""
    if hw < required_offset:
        return AckStatus(False)
    if isr_size < min_insync_replicas:
        return AckStatus(True, ProduceError.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    return AckStatus(True)
