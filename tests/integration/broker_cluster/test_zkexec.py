"""The kazoo-backed ZkExecutor on a real ZooKeeper: the model's controller election and fenced writes."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient

from harness.broker.zkexec import KazooExecutor
from harness.model.controller import StateChange, elect_controller
from harness.model.partition_state import PartitionState
from harness.model.zkmodel import Create, Delete, GetChildren, GetData, Multi, SetData, ZkCode

pytestmark = pytest.mark.integration


def _client(connect: str) -> KazooClient:
    c = KazooClient(hosts=connect, timeout=5.0)
    c.start(timeout=10)
    return c


def test_model_controller_election_on_real_zookeeper_has_one_winner_and_bumps_the_epoch(zk_connect: str) -> None:
    """Two sessions race with the model's Multi: one wins epoch 1, the other sees it; after the winner's
    session closes the other wins epoch 2. A watch left on /controller fires on the deletion."""
    a, b = _client(zk_connect), _client(zk_connect)
    fired = threading.Event()
    try:
        ra = elect_controller(KazooExecutor(a), 1, 1000)
        rb = elect_controller(KazooExecutor(b, lambda path: fired.set() if path == "/controller" else None), 2, 1001)
        assert (ra.won, ra.epoch, rb.won, rb.controller_id) == (True, 1, False, 1)
        a.stop()
        assert fired.wait(10)
        rb2 = elect_controller(KazooExecutor(b), 2, 1002)
        assert (rb2.won, rb2.epoch) == (True, 2)
        assert b.get("/controller_epoch")[0] == b"2"
    finally:
        for c in (a, b):
            c.stop()
            c.close()


def test_fenced_state_write_fails_after_a_newer_controller_bumped_the_epoch(zk_connect: str) -> None:
    """A state write carrying a Check on the old /controller_epoch version fails with BAD_VERSION."""
    c = _client(zk_connect)
    try:
        ex = KazooExecutor(c)
        won = elect_controller(ex, 1, 1)
        assert won.won and won.epoch_zk_version is not None
        c.ensure_path("/brokers/topics/t/partitions/0")
        change = StateChange(("t", 0), "new", None, PartitionState.initial(1, (1,), 1))
        assert ex.execute(change.zk_op(won.epoch_zk_version)).ok
        assert ex.execute(SetData("/controller_epoch", b"9")).ok  # another controller's bump
        moved = StateChange(("t", 0), "x", change.after, change.after.with_leader(1, (1,), 1))
        res = ex.execute(moved.zk_op(won.epoch_zk_version))
        assert res.code is ZkCode.BAD_VERSION and res.results[0].code is ZkCode.BAD_VERSION
        assert ex.execute(GetChildren("/brokers/topics")).children == ("t",)
        assert ex.execute(GetData("/nope")).code is ZkCode.NO_NODE
        assert ex.execute(Multi((Create("/x", b"1"), Delete("/x")))).ok
        assert ex.execute(Create("/controller_epoch")).code is ZkCode.NODE_EXISTS
    finally:
        c.stop()
        c.close()
