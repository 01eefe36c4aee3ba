"""The pure logic of the reference broker's ISR, election and shutdown bug flags (`keep_dead_in_isr`,
`unclean_election`, `shutdown_without_moving_leaders`), next to what the honest controller decides
(Apache Kafka's ZooKeeper controller: onReplicasBecomeOffline, OfflinePartitionLeaderElectionStrategy)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from harness.broker import bugs, handlers_controller
from harness.broker.config import BrokerConfig
from harness.model.controller import (
    ClusterView,
    elect_offline_partitions,
    on_broker_failure,
    on_controller_failover,
    preferred_elections,
    reassignment_election,
)
from harness.model.partition_state import NO_LEADER, PartitionState

LED, FOLLOWED, ALONE, OTHER = ("t", 0), ("t", 1), ("t", 2), ("u", 0)


def _view(live: set[int], unclean: bool = False, unclean_topics: dict[str, bool] | None = None) -> ClusterView:
    """Broker 3 led t/0, followed t/1, was the only ISR member (and leader) of t/2; u/0 never had it."""
    assignments = {LED: (3, 1, 2), FOLLOWED: (1, 2, 3), ALONE: (3, 1), OTHER: (1, 2)}
    states = {LED: PartitionState(3, 4, (3, 1, 2), 1, 10), FOLLOWED: PartitionState(1, 2, (1, 3, 2), 1, 5),
              ALONE: PartitionState(3, 7, (3,), 1, 9), OTHER: PartitionState(1, 0, (1, 2), 1, 0)}
    return ClusterView(frozenset(live), assignments, states, frozenset(), unclean, unclean_topics or {})


def test_every_new_flag_is_known() -> None:
    for flag in ("keep_dead_in_isr", "unclean_election", "shutdown_without_moving_leaders"):
        assert flag in bugs.KNOWN_BUGS
    assert bugs.unknown_bugs(frozenset({"keep_dead_in_isr", "unclean_elections"})) == ["unclean_elections"]


def test_honest_broker_failure_takes_the_dead_broker_out_of_every_isr() -> None:
    """As Kafka's onReplicasBecomeOffline: an election without it where it led, its removal from the ISR
    where it followed, leader -1 (ISR kept) where it was the last ISR member."""
    view = _view({1, 2})
    after = on_broker_failure(view, [3], 2).final_states()
    assert (after[LED].leader, after[LED].isr) == (1, (1, 2))
    assert (after[FOLLOWED].leader, after[FOLLOWED].isr, after[FOLLOWED].leader_epoch) == (1, (1, 2), 3)
    assert (after[ALONE].leader, after[ALONE].isr) == (NO_LEADER, (3,))
    assert OTHER not in after


def test_keep_dead_in_isr_drops_only_the_followed_partitions_removals() -> None:
    view = _view({1, 2})
    honest = on_broker_failure(view, [3], 2)
    buggy = bugs.keep_dead_in_isr(honest, view)
    assert {ch.partition for ch in honest.changes} == {LED, FOLLOWED, ALONE}
    assert {ch.partition for ch in buggy.changes} == {LED, ALONE}
    assert buggy.final_states()[LED] == honest.final_states()[LED]
    assert buggy.final_states()[ALONE] == honest.final_states()[ALONE]
    assert buggy.offline == honest.offline


def test_keep_dead_in_isr_keeps_every_write_of_a_partition_it_led_when_two_brokers_die() -> None:
    """t/1 is led by 1 and followed by 3: both die; its election (strategy offline) and the removal of 3
    after it stay, since the partition's leader died."""
    view = _view({2})
    honest = on_broker_failure(view, [1, 3], 2)
    buggy = bugs.keep_dead_in_isr(honest, view)
    assert buggy.changes == honest.changes


def test_keep_dead_in_isr_at_failover_keeps_elections_and_new_partitions() -> None:
    """A new controller finding broker 3 unregistered: t/0 (led by 3) is still written twice (leader -1,
    then the election chained on it), a new partition is created, only t/1's removal of 3 is dropped."""
    new = ("n", 0)
    base = _view({1, 2})
    view = ClusterView(base.live, {**base.assignments, new: (2, 3)}, base.states)
    honest = on_controller_failover(view, 2)
    buggy = bugs.keep_dead_in_isr(honest, view)
    assert [ch for ch in honest.changes if ch.partition != FOLLOWED] == list(buggy.changes)
    assert [ch.partition for ch in buggy.changes].count(LED) == 2
    assert buggy.final_states()[new].isr == (2,)
    assert FOLLOWED in honest.final_states() and FOLLOWED not in buggy.final_states()


def test_unclean_election_elects_outside_the_isr_although_disabled() -> None:
    """t/2's only ISR member (3) is dead and 1 is live: Kafka with unclean election disabled leaves it
    leaderless; the bug elects 1 with ISR [1], as Kafka would only with unclean election enabled."""
    view = _with_states(_view({1, 2}), {ALONE: PartitionState(NO_LEADER, 8, (3,), 1, 10)})
    honest = elect_offline_partitions(view, 2)
    assert ALONE in honest.offline and ALONE not in honest.final_states()
    enabled = elect_offline_partitions(_with_unclean(view, True), 2).final_states()[ALONE]
    buggy_plan = elect_offline_partitions(bugs.unclean_election(view), 2)
    buggy = [ch for ch in buggy_plan.changes if ch.partition == ALONE]
    assert len(buggy) == 1 and buggy[0].unclean
    assert buggy[0].after == enabled
    assert (enabled.leader, enabled.isr, enabled.leader_epoch) == (1, (1,), 9)
    tagged = bugs.mark_unclean(buggy, view)
    assert tagged[0].reason.endswith("[bug unclean_election]") and tagged[0].after == enabled
    assert bugs.mark_unclean(buggy, _with_unclean(view, True)) == buggy  # allowed there: not the bug


def test_unclean_election_overrides_a_topic_that_disables_it_and_leaves_clean_elections_alone() -> None:
    view = _view({1, 2}, unclean=True, unclean_topics={"t": False})
    bugged = bugs.unclean_election(view)
    assert bugged.unclean_for("t") and bugged.unclean_for("u")
    honest = on_broker_failure(view, [3], 2).final_states()
    buggy = on_broker_failure(bugged, [3], 2).final_states()
    assert {tp: honest[tp] for tp in (LED, FOLLOWED)} == {tp: buggy[tp] for tp in (LED, FOLLOWED)}
    assert honest[ALONE].leader == NO_LEADER and (buggy[ALONE].leader, buggy[ALONE].isr) == (1, (1,))


def test_failover_with_the_only_isr_member_dead() -> None:
    """A new controller (Kafka's onControllerFailover): the dead last ISR member stays in the ISR with
    leader -1; only with unclean election (or the bug) the first live AR replica leads, ISR [it]."""
    view = _view({1, 2})
    honest = on_controller_failover(view, 2).final_states()[ALONE]
    assert (honest.leader, honest.isr) == (NO_LEADER, (3,))
    buggy = on_controller_failover(bugs.unclean_election(view), 2).final_states()[ALONE]
    assert (buggy.leader, buggy.isr) == (1, (1,))


def _with_states(view: ClusterView, states: dict[tuple[str, int], PartitionState]) -> ClusterView:
    return ClusterView(view.live, view.assignments, {**view.states, **states}, view.shutting_down, view.unclean,
                       view.unclean_topics)


def _with_unclean(view: ClusterView, unclean: bool) -> ClusterView:
    return ClusterView(view.live, view.assignments, view.states, view.shutting_down, unclean, view.unclean_topics)


@pytest.mark.parametrize("flags", [frozenset(), frozenset({"shutdown_without_moving_leaders"})])
def test_shutdown_without_moving_leaders_skips_the_controlled_shutdown_request(
        flags: frozenset[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Honest: the broker asks the controller (here: none reachable, one attempt). With the flag it asks
    nothing and returns at once."""
    asked: list[int] = []

    def no_controller(b: object) -> tuple[int, str, int] | None:
        asked.append(1)
        return None

    monkeypatch.setattr(handlers_controller, "_controller_endpoint", no_controller)
    config = BrokerConfig(broker_id=1, reference_bugs=flags, controlled_shutdown_max_retries=0,
                          controlled_shutdown_retry_backoff_ms=0)
    broker = SimpleNamespace(config=config, broker_id=1, zk_client=lambda: object())
    assert asyncio.run(handlers_controller.controlled_shutdown(broker)) is False  # type: ignore[arg-type]
    assert asked == ([] if flags else [1])


def _moving_view() -> ClusterView:
    """mv/0 led by broker 1 with ISR [1] (broker 3 out of it), AR [3, 1]: all three brokers live."""
    tp = ("mv", 0)
    return ClusterView(frozenset({1, 2, 3}), {tp: (3, 1)}, {tp: PartitionState(1, 4, (1,), 2, 7)})


def test_reassign_ignores_isr_makes_the_new_lists_first_live_replica_leader_outside_the_isr() -> None:
    view = _moving_view()
    (ch,) = bugs.reassign_ignores_isr(view, ("mv", 0), (3, 1), controller_epoch=2).changes
    assert (ch.after.leader, ch.after.isr, ch.after.leader_epoch, ch.strategy) == (3, (1,), 5, "reassign")
    honest = reassignment_election(view, ("mv", 0), (3, 1), 2)
    assert honest is None  # Kafka: the leader is in the new list, nothing moves
    assert bugs.reassign_ignores_isr(view, ("mv", 0), (1, 3), controller_epoch=2).changes == ()


def test_preferred_outside_isr_elects_a_live_ar0_the_honest_election_left_alone() -> None:
    view = _moving_view()
    honest = preferred_elections(view, 2, [("mv", 0)])
    assert honest.changes == () and honest.offline == (("mv", 0),)
    bugged = bugs.preferred_outside_isr(view, 2, honest)
    assert [(c.partition, c.after.leader, c.after.isr) for c in bugged.changes] == [(("mv", 0), 3, (1,))]
    assert bugged.offline == ()
    dead = ClusterView(frozenset({1, 2}), view.assignments, view.states)
    assert bugs.preferred_outside_isr(dead, 2, preferred_elections(dead, 2, [("mv", 0)])).changes == ()
