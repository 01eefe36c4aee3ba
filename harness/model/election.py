"""Partition leader election strategies of ZooKeeper-mode Kafka (KAFKA-BEHAVIOUR.md §2).

Owns `elect_leader` (which broker the controller must pick), and for invariant 4 `infer_strategy` /
`check_election` (prescribed vs. observed leader from history-shaped facts). All are pure; they take
observed facts (AR order, ISR, live brokers, brokers shutting down) so the verifiers can call them on the
state seen just before an election (invariant 4).

The rules, as in Kafka's `PartitionLeaderElectionAlgorithms`:

- ``offline``: first replica in AR order that is live AND in the ISR; if none and unclean election
  is enabled, the first live replica in AR order; else no leader.
- ``reassign``: first replica of the NEW AR that is live and in the current ISR (never unclean).
- ``preferred``: AR[0] if it is live and in the ISR, else no leader (the current leader stays).
- ``controlled_shutdown``: first replica in AR order that is live, in the ISR and not shutting down.
- ``new``: a partition's first leader (a new topic, or partitions added to one): the first live replica
  in AR order; the ISR is every live AR replica (`PartitionStateMachine.initializeLeaderAndIsrForPartitions`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, cast, get_args

from harness.errors import HarnessError

Strategy = Literal["offline", "reassign", "preferred", "controlled_shutdown", "new"]
"""The election strategies of §2, and a new partition's first leader."""

STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)

NO_LEADER = -1
"""The leader id Kafka writes in the partition state when a partition has no leader."""


class UnknownStrategyError(HarnessError):
    """`elect_leader` was asked for a strategy that is not one of `STRATEGIES`."""

    def __init__(self, strategy: object) -> None:
        self.strategy = strategy
        super().__init__(
            f"election strategy: unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
        )


def _check_strategy(strategy: object) -> Strategy:
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise UnknownStrategyError(strategy)
    return cast(Strategy, strategy)


def elect_leader(
    strategy: Strategy | str,
    assigned: Sequence[int],
    isr: Collection[int],
    live: Collection[int],
    shutting_down: Collection[int] = frozenset(),
    unclean: bool = False,
) -> int | None:
    """The leader `strategy` prescribes, or None when no replica qualifies (partition offline).

    `assigned` is the AR list in its znode order (for ``reassign``: the NEW AR); `isr`, `live` and
    `shutting_down` are broker ids. `unclean` (unclean.leader.election.enable for the topic) only
    affects ``offline``. Raises `UnknownStrategyError` for any other strategy name.
    """
    strat = _check_strategy(strategy)
    isr_set = frozenset(isr)
    live_set = frozenset(live)
    if strat == "preferred":
        if assigned and assigned[0] in live_set and assigned[0] in isr_set:
            return assigned[0]
        return None
    if strat == "new":
        return next((r for r in assigned if r in live_set), None)
    down = frozenset(shutting_down) if strat == "controlled_shutdown" else frozenset()
    for replica in assigned:
        if replica in live_set and replica in isr_set and replica not in down:
            return replica
    if strat == "offline" and unclean:
        for replica in assigned:
            if replica in live_set:
                return replica
    return None


def infer_strategy(
    old_leader: int | None,
    live: Collection[int],
    shutting_down: Collection[int] = frozenset(),
    reassigned: bool = False,
) -> Strategy:
    """The strategy a controller used for a leader change, judged from the facts just before it.

    Reassignment in progress -> ``reassign``; the old leader was shutting down (controlled
    shutdown) -> ``controlled_shutdown``; no leader or the old leader not live -> ``offline``;
    otherwise the old leader was fine, so the move was a ``preferred`` replica election.
    """
    if reassigned:
        return "reassign"
    if old_leader is not None and old_leader in frozenset(shutting_down):
        return "controlled_shutdown"
    if old_leader is None or old_leader == NO_LEADER or old_leader not in frozenset(live):
        return "offline"
    return "preferred"


@dataclass(frozen=True, slots=True)
class ElectionCheck:
    """Invariant 4 for one observed election: what the strategy prescribes vs. what was elected."""

    strategy: Strategy
    expected: int | None
    observed: int | None

    @property
    def ok(self) -> bool:
        return self.expected == self.observed


def check_election(
    observed_leader: int | None,
    old_leader: int | None,
    assigned: Sequence[int],
    isr_before: Collection[int],
    live: Collection[int],
    shutting_down: Collection[int] = frozenset(),
    unclean: bool = False,
    strategy: Strategy | str | None = None,
    new_assigned: Sequence[int] | None = None,
) -> ElectionCheck:
    """Compare an observed new leader (-1 or None: none) with the prescribed one (history-row friendly).

    `strategy` defaults to `infer_strategy`; pass `new_assigned` for a reassignment (the new AR).
    """
    strat = _check_strategy(strategy) if strategy is not None else infer_strategy(
        old_leader, live, shutting_down, reassigned=new_assigned is not None
    )
    ar = new_assigned if strat == "reassign" and new_assigned is not None else assigned
    expected = elect_leader(strat, ar, isr_before, live, shutting_down, unclean)
    observed = None if observed_leader is None or observed_leader == NO_LEADER else observed_leader
    return ElectionCheck(strat, expected, observed)
