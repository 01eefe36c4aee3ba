"""Controller election over the abstract ZooKeeper, and the controller's partition decisions (§1, §2)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model.controller import (
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    ClusterView,
    ControllerElection,
    accepts_controller_epoch,
    auto_rebalance_targets,
    broker_registration_data,
    current_controller,
    elect_controller,
    failover_watch_ops,
    on_broker_failure,
    on_broker_startup,
    on_controlled_shutdown,
    on_controller_failover,
    preferred_elections,
    reassignment_election,
    registration_op,
)
from harness.model.election import elect_leader
from harness.model.partition_state import NO_LEADER, PartitionState, state_path
from harness.model.zkmodel import Create, GetData, WatchKind, ZkCode, ZkModel, ZkWorld


def _world() -> ZkWorld:
    parents = [f"/brokers/topics/t/partitions/{p}" for p in range(4)]
    return ZkWorld(ZkModel().with_persistent("/brokers/ids", *parents))


def test_first_broker_wins_and_writes_epoch_1_others_lose_and_watch() -> None:
    w = _world()
    s1, s2 = w.open_session(), w.open_session()
    won = elect_controller(s1, 1, now_ms=1000)
    assert won == ControllerElection(1, True, 1, epoch=1, epoch_zk_version=1)
    assert json.loads(w.model.nodes[CONTROLLER_PATH].data) == {"version": 1, "brokerid": 1, "timestamp": "1000"}
    assert w.model.nodes[CONTROLLER_PATH].ephemeral_owner == s1.session_id
    assert w.model.nodes[CONTROLLER_EPOCH_PATH].data == b"1"
    assert elect_controller(s2, 2, 1001) == ControllerElection(2, False, 1)


def test_controller_session_expiry_triggers_reelection_with_bumped_epoch() -> None:
    w = _world()
    s1, s2, s3 = w.open_session(), w.open_session(), w.open_session()
    elect_controller(s1, 1, 0)
    elect_controller(s2, 2, 0)
    elect_controller(s3, 3, 0)
    w.take_events()
    s1.expire()
    fired = w.take_events()
    assert {e.session for e in fired if e.path == CONTROLLER_PATH and e.kind is WatchKind.NODE_DELETED} == {
        s2.session_id, s3.session_id}
    assert current_controller(s2) == -1
    assert elect_controller(s3, 3, 5).epoch == 2
    assert elect_controller(s2, 2, 5) == ControllerElection(2, False, 3)


def test_race_between_read_and_claim_loses_with_node_exists_or_bad_version() -> None:
    w = _world()
    s2, s3 = w.open_session(), w.open_session()
    s2.execute(Create(CONTROLLER_EPOCH_PATH, b"7"))
    # Both read epoch 7 at version 0, then race.
    assert s2.execute(registration_op(2, 1, 7, 0)).ok
    lost = s3.execute(registration_op(3, 1, 7, 0))
    assert lost.code is ZkCode.NODE_EXISTS and w.model.nodes[CONTROLLER_EPOCH_PATH].data == b"8"
    # Broker 2 dies before 3 retries with its stale epoch version: the epoch check fences it.
    s2.expire()
    stale = s3.execute(registration_op(3, 2, 7, 0))
    assert stale.code is ZkCode.BAD_VERSION and CONTROLLER_PATH not in w.model.nodes
    assert elect_controller(s3, 3, 3).epoch == 9


def test_epoch_never_decreases_over_many_failovers() -> None:
    w = _world()
    epochs = []
    for round_ in range(5):
        s = w.open_session()
        res = elect_controller(s, round_ % 3, round_)
        assert res.won
        epochs.append(res.epoch)
        s.expire()
    assert epochs == [1, 2, 3, 4, 5]


def test_zombie_controller_write_is_fenced_by_epoch_znode_version() -> None:
    w = _world()
    s1, s2 = w.open_session(), w.open_session()
    first = elect_controller(s1, 1, 0)
    tp = ("t", 0)
    view = ClusterView(frozenset({1, 2}), {tp: (1, 2)})
    create = on_controller_failover(view, first.epoch or 0).changes[0]
    assert s1.execute(create.zk_op(first.epoch_zk_version)).ok
    # Broker 1 loses its session (a pause), broker 2 takes over, broker 1 still believes it leads.
    s1.expire()
    second = elect_controller(s2, 2, 1)
    assert second.epoch == 2
    state = PartitionState.from_json(w.model.nodes[state_path(*tp)].data, w.model.nodes[state_path(*tp)].version)
    zombie = ClusterView(frozenset({2}), {tp: (1, 2)}, {tp: state})
    change = on_broker_failure(zombie, {1}, first.epoch or 0).changes[0]
    s1b = w.open_session()  # a reconnected zombie
    assert s1b.execute(change.zk_op(first.epoch_zk_version)).code is ZkCode.BAD_VERSION
    assert s2.execute(change.zk_op(second.epoch_zk_version)).ok
    assert not accepts_controller_epoch(known_epoch=2, request_epoch=1)
    assert accepts_controller_epoch(2, 2) and accepts_controller_epoch(2, 3)


def test_failover_drops_offline_replicas_from_every_isr_then_elects_new_and_offline_partitions() -> None:
    """Kafka's onControllerFailover: ReplicaStateMachine.startup (dead replicas -> OfflineReplica, out of every
    ISR, leader -1 where they led, last member kept, leader_epoch + 1), then PartitionStateMachine.startup."""
    view = ClusterView(
        live=frozenset({2, 3}),
        assignments={("t", 0): (1, 2, 3), ("t", 1): (2, 3, 1), ("t", 2): (1, 2), ("u", 0): (1,), ("v", 0): (1, 3),
                     ("w", 0): (2, 3)},
        states={
            ("t", 1): PartitionState(2, 4, (2, 3, 1), 1, 6),   # online, dead 1 follows: out of the ISR
            ("t", 2): PartitionState(1, 2, (1,), 1, 3),        # offline, only dead 1 in ISR: stays offline
            ("u", 0): PartitionState(1, 0, (1,), 1, 0),        # RF=1, dead
            ("v", 0): PartitionState(1, 0, (1,), 1, 0),        # unclean allowed for topic v
            ("w", 0): PartitionState(2, 0, (2, 3), 1, 0),      # no dead replica: untouched
        },
        unclean_topics={"v": True},
    )
    plan = on_controller_failover(view, controller_epoch=2)
    got: dict[tuple[str, int], list[PartitionState]] = {}
    for ch in plan.changes:
        got.setdefault(ch.partition, []).append(ch.after)
    assert got[("t", 0)] == [PartitionState(2, 0, (2, 3), 2, 0)]
    assert [ch.before is None for ch in plan.changes if ch.partition == ("t", 0)] == [True]
    assert got[("t", 1)] == [PartitionState(2, 5, (2, 3), 2, 7)], "followed: leader kept, epoch + 1"
    assert got[("t", 2)] == [PartitionState(NO_LEADER, 3, (1,), 2, 4)], "last ISR member kept, no leader"
    assert got[("u", 0)] == [PartitionState(NO_LEADER, 1, (1,), 2, 1)]
    assert got[("v", 0)] == [PartitionState(NO_LEADER, 1, (1,), 2, 1), PartitionState(3, 2, (3,), 2, 2)]
    assert [ch.unclean for ch in plan.changes if ch.partition == ("v", 0)] == [False, True]
    assert set(plan.offline) == {("t", 2), ("u", 0)}
    assert ("w", 0) not in got


def test_failover_after_losing_a_leader_writes_no_leader_then_the_offline_election() -> None:
    """A partition the lost broker led: ISR removal (leader -1, epoch + 1), then the offline election (epoch + 2),
    unlike the BrokerChange path (on_broker_failure), which elects first and so writes once."""
    tp = ("t", 0)
    view = ClusterView(frozenset({2, 3}), {tp: (1, 2, 3)}, {tp: PartitionState(1, 7, (1, 2, 3), 1, 9)})
    failover = on_controller_failover(view, controller_epoch=2)
    assert [ch.after for ch in failover.changes] == [PartitionState(NO_LEADER, 8, (2, 3), 2, 10),
                                                     PartitionState(2, 9, (2, 3), 2, 11)]
    assert [ch.before for ch in failover.changes] == [view.states[tp], failover.changes[0].after]
    change = on_broker_failure(view, {1}, controller_epoch=2)
    assert [ch.after for ch in change.changes] == [PartitionState(2, 8, (2, 3), 2, 10)]


def test_broker_failure_reelects_led_partitions_and_shrinks_followed_isrs() -> None:
    states = {
        ("t", 0): PartitionState(1, 5, (1, 2, 3), 1, 10),
        ("t", 1): PartitionState(2, 3, (2, 1), 1, 4),
        ("t", 2): PartitionState(1, 0, (1,), 1, 0),
        ("t", 3): PartitionState(3, 0, (3, 2), 1, 0),
    }
    view = ClusterView(frozenset({2, 3}), {("t", 0): (1, 2, 3), ("t", 1): (2, 1), ("t", 2): (1, 2),
                                          ("t", 3): (3, 2)}, states)
    plan = on_broker_failure(view, {1}, controller_epoch=3)
    final = plan.final_states()
    assert final[("t", 0)] == PartitionState(2, 6, (2, 3), 3, 11)
    assert final[("t", 1)] == PartitionState(2, 4, (2,), 3, 5), "follower removal bumps leader_epoch too"
    assert final[("t", 2)] == PartitionState(NO_LEADER, 1, (1,), 3, 1), "no live ISR: leader -1, ISR kept"
    assert ("t", 3) not in final
    assert plan.offline == (("t", 2),)
    # Broker 1 returns: the offline partition elects it again (it is the last ISR member).
    back = view.with_states(plan.changes)
    back = ClusterView(frozenset({1, 2, 3}), back.assignments, back.states)
    again = on_broker_startup(back, controller_epoch=3)
    assert again.final_states()[("t", 2)] == PartitionState(1, 2, (1,), 3, 2)


def test_controlled_shutdown_moves_leadership_and_drops_from_isr() -> None:
    states = {
        ("t", 0): PartitionState(1, 0, (1, 2, 3), 1, 0),
        ("t", 1): PartitionState(2, 0, (2, 1, 3), 1, 0),
        ("t", 2): PartitionState(1, 0, (1,), 1, 0),          # RF 1: not acted on
        ("t", 3): PartitionState(1, 0, (1,), 1, 0),          # RF 2 but ISR only 1: cannot move
    }
    view = ClusterView(frozenset({1, 2, 3}), {("t", 0): (1, 2, 3), ("t", 1): (2, 1, 3), ("t", 2): (1,),
                                              ("t", 3): (1, 2)}, states)
    plan = on_controlled_shutdown(view, broker=1, controller_epoch=4)
    final = plan.final_states()
    assert final[("t", 0)] == PartitionState(2, 1, (2, 3), 4, 1)
    assert final[("t", 1)] == PartitionState(2, 1, (2, 3), 4, 1)
    assert ("t", 2) not in final and plan.still_led == (("t", 3),)


def test_preferred_and_auto_rebalance() -> None:
    states = {("t", p): PartitionState(2, 1, (1, 2), 1, 0) for p in range(4)}
    states[("t", 3)] = PartitionState(2, 1, (2,), 1, 0)
    view = ClusterView(frozenset({1, 2}), {("t", p): (1, 2) for p in range(4)}, states)
    assert auto_rebalance_targets(view, imbalance_percentage=10) == (("t", 0), ("t", 1), ("t", 2))
    plan = preferred_elections(view, 2)
    assert [ch.after.leader for ch in plan.changes] == [1, 1, 1] and plan.offline == (("t", 3),)
    assert all(ch.after.leader_epoch == 2 and ch.after.isr == (1, 2) for ch in plan.changes)


def test_reassignment_moves_leader_only_when_outside_new_ar() -> None:
    view = ClusterView(frozenset({1, 2, 3, 4}), {("t", 0): (1, 2)}, {("t", 0): PartitionState(1, 0, (1, 2, 4), 1, 0)})
    assert reassignment_election(view, ("t", 0), (2, 1), 1) is None
    change = reassignment_election(view, ("t", 0), (3, 4, 2), 1)
    assert change is not None and change.after.leader == 4 and change.strategy == "reassign"


def test_state_change_ops_write_exactly_the_predicted_state_to_zookeeper() -> None:
    w = _world()
    s = w.open_session()
    ctl = elect_controller(s, 1, 0)
    tps = {("t", p): (1, 2, 3) for p in range(3)}
    plan = on_controller_failover(ClusterView(frozenset({1, 2, 3}), tps), ctl.epoch or 0)
    for ch in plan.changes:
        assert s.execute(ch.zk_op(ctl.epoch_zk_version)).ok
    plan2 = on_broker_failure(ClusterView(frozenset({2, 3}), tps, plan.final_states()), {1}, ctl.epoch or 0)
    for ch in plan2.changes:
        assert s.execute(ch.zk_op(ctl.epoch_zk_version)).ok
    for tp, want in plan2.final_states().items():
        res = s.execute(GetData(state_path(*tp)))
        assert PartitionState.from_json(res.data or b"", res.version or 0) == want


def test_new_controller_watches_broker_and_topic_changes() -> None:
    w = ZkWorld(ZkModel().with_persistent("/brokers/ids", "/brokers/topics", "/admin/delete_topics",
                                          "/isr_change_notification"))
    ctl, other = w.open_session(), w.open_session()
    assert all(r.ok or r.code is ZkCode.NO_NODE for r in map(ctl.execute, failover_watch_ops()))
    other.execute(Create("/brokers/ids/7", b"{}", ephemeral=True))
    other.execute(Create("/admin/reassign_partitions", b"{}"))
    assert {(e.path, e.kind) for e in w.take_events(ctl.session_id)} == {
        ("/brokers/ids", WatchKind.NODE_CHILDREN_CHANGED), ("/admin/reassign_partitions", WatchKind.NODE_CREATED)}


def test_broker_registration_json_has_kafka_fields() -> None:
    doc = json.loads(broker_registration_data(3, {"PLAINTEXT": ("127.0.0.1", 9093)}, 77))
    assert doc["endpoints"] == ["PLAINTEXT://127.0.0.1:9093"] and doc["host"] == "127.0.0.1"
    assert doc["port"] == 9093 and doc["version"] == 5 and doc["timestamp"] == "77"
    assert doc["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[ClusterView, frozenset[int]]:
    brokers = list(range(1, draw(st.integers(1, 5)) + 1))
    assignments: dict[tuple[str, int], tuple[int, ...]] = {}
    states: dict[tuple[str, int], PartitionState] = {}
    for p in range(draw(st.integers(1, 8))):
        ar = tuple(draw(st.permutations(brokers))[: draw(st.integers(1, len(brokers)))])
        isr = tuple(r for r in ar if draw(st.booleans())) or ar[:1]
        leader = draw(st.sampled_from([*isr, NO_LEADER]))
        assignments[("t", p)] = ar
        states[("t", p)] = PartitionState(leader, draw(st.integers(0, 5)), isr, 1, draw(st.integers(0, 9)))
    dead = frozenset(draw(st.sets(st.sampled_from(brokers))))
    unclean = draw(st.booleans())
    return ClusterView(frozenset(brokers) - dead, assignments, states, unclean=unclean), dead


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_broker_failure_plan_obeys_invariants_3_4_5(case: tuple[ClusterView, frozenset[int]]) -> None:
    """Every elected leader is live, in the ISR unless unclean, the one elect_leader prescribes; epochs rise."""
    view, dead = case
    plan = on_broker_failure(view, dead, controller_epoch=2)
    for ch in plan.changes:
        assert ch.before is not None
        assert ch.after.leader_epoch == ch.before.leader_epoch + 1
        assert ch.after.zk_version == ch.before.zk_version + 1
        assert ch.after.controller_epoch == 2
        if ch.strategy is not None:
            assert ch.after.leader in view.live
            assert ch.unclean or ch.after.leader in ch.before.isr
            assert ch.after.leader == elect_leader("offline", view.assignments[ch.partition], ch.before.isr,
                                                   view.live, unclean=view.unclean)
    for tp, state in plan.final_states().items():
        assert not (set(state.isr) & dead) or state.isr == view.states[tp].isr[:1] or len(state.isr) == 1
        if state.leader != NO_LEADER:
            assert state.leader in state.isr


@settings(max_examples=100, deadline=None)
@given(clusters())
def test_failover_plan_leaves_no_lost_broker_in_an_isr_it_shares(case: tuple[ClusterView, frozenset[int]]) -> None:
    """After a failover plan a lost broker stays only in single-member ISRs; every leader is live or -1;
    every write's before is the state the previous write of that partition left (or the one read)."""
    view, dead = case
    plan = on_controller_failover(view, controller_epoch=2)
    last = dict(view.states)
    for ch in plan.changes:
        assert ch.before == last.get(ch.partition)
        assert ch.after.leader_epoch == (ch.before.leader_epoch + 1 if ch.before else 0)
        last[ch.partition] = ch.after
    for tp, state in last.items():
        assert len(state.isr) == 1 or not set(state.isr) & dead, (tp, view.states.get(tp), state)
        assert state.leader == NO_LEADER or state.leader in view.live
