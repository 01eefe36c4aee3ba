"""Partition state znode value, its transitions and Kafka's partition state machine (§2)."""

from __future__ import annotations

import json

import pytest

from harness.model.partition_state import (
    NO_LEADER,
    PartitionPhase,
    PartitionState,
    PartitionStateError,
    check_transition,
    phase_of,
    state_path,
)


def test_json_round_trip_matches_kafka_field_layout() -> None:
    st = PartitionState(leader=0, leader_epoch=3, isr=(0, 1), controller_epoch=12, zk_version=7)
    assert json.loads(st.to_json()) == {"controller_epoch": 12, "leader": 0, "version": 1,
                                        "leader_epoch": 3, "isr": [0, 1]}
    assert PartitionState.from_json(st.to_json(), zk_version=7) == st
    assert state_path("orders", 4) == "/brokers/topics/orders/partitions/4/state"


def test_from_json_names_path_and_data_on_garbage() -> None:
    with pytest.raises(PartitionStateError, match="/x/state"):
        PartitionState.from_json(b'{"leader": 1}', where="/x/state")


def test_with_leader_bumps_leader_epoch_and_zk_version_and_sets_controller_epoch() -> None:
    st = PartitionState(1, 4, (1, 2), 3, zk_version=9)
    nxt = st.with_leader(2, (2,), controller_epoch=5)
    assert (nxt.leader, nxt.leader_epoch, nxt.isr, nxt.controller_epoch, nxt.zk_version) == (2, 5, (2,), 5, 10)
    assert st.with_leader(None, (1,), 5).leader == NO_LEADER


def test_with_isr_keeps_leader_epoch() -> None:
    st = PartitionState(1, 4, (1, 2, 3), 3, zk_version=9)
    nxt = st.with_isr((1, 3))
    assert (nxt.leader, nxt.leader_epoch, nxt.isr, nxt.controller_epoch, nxt.zk_version) == (1, 4, (1, 3), 3, 10)


def test_without_replica_follows_kafka_remove_replicas_from_isr() -> None:
    st = PartitionState(1, 4, (1, 2), 3, zk_version=0)
    follower_gone = st.without_replica(2, 6)
    assert follower_gone == PartitionState(1, 5, (1,), 6, 1)
    leader_gone = st.without_replica(1, 6)
    assert leader_gone == PartitionState(NO_LEADER, 5, (2,), 6, 1)
    last = PartitionState(1, 4, (1,), 3).without_replica(1, 6)
    assert last is not None and last.isr == (1,) and last.leader == NO_LEADER, "last ISR member is kept"
    assert st.without_replica(9, 6) is None


@pytest.mark.parametrize(
    ("current", "target", "ok"),
    [
        (PartitionPhase.NON_EXISTENT, PartitionPhase.NEW, True),
        (PartitionPhase.NEW, PartitionPhase.ONLINE, True),
        (PartitionPhase.ONLINE, PartitionPhase.OFFLINE, True),
        (PartitionPhase.OFFLINE, PartitionPhase.ONLINE, True),
        (PartitionPhase.OFFLINE, PartitionPhase.NON_EXISTENT, True),
        (PartitionPhase.NON_EXISTENT, PartitionPhase.ONLINE, False),
        (PartitionPhase.ONLINE, PartitionPhase.NEW, False),
        (PartitionPhase.ONLINE, PartitionPhase.NON_EXISTENT, False),
    ],
)
def test_partition_state_machine_valid_previous_states(current: PartitionPhase, target: PartitionPhase,
                                                       ok: bool) -> None:
    if ok:
        assert check_transition(current, target) is target
    else:
        with pytest.raises(PartitionStateError, match=f"{current.value} -> {target.value}"):
            check_transition(current, target, "orders/0")


def test_phase_on_failover_is_new_online_or_offline() -> None:
    assert phase_of(None, {1}) is PartitionPhase.NEW
    assert phase_of(PartitionState(1, 0, (1,), 1), {1}) is PartitionPhase.ONLINE
    assert phase_of(PartitionState(1, 0, (1,), 1), {2}) is PartitionPhase.OFFLINE
    assert phase_of(PartitionState(NO_LEADER, 0, (1,), 1), {1}) is PartitionPhase.OFFLINE
