"""Real ZooKeeper through the process backend: node operations on a 3-member ensemble, and a
ZooKeeper session cut by disabling its Toxiproxy proxy (embedded server, own process)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient

from harness.cluster.base import NodeId
from harness.cluster.process import ProcessCluster

pytestmark = pytest.mark.integration


def _client(hosts: str, timeout_s: float = 5.0) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=timeout_s)
    client.start(timeout=15)
    return client


def _write_ok(hosts: str) -> float:
    """Seconds a fresh client needs to connect and create+delete a znode (the quorum serves writes)."""
    t0 = time.monotonic()
    client = _client(hosts)
    try:
        path = client.create(f"/probe-{uuid.uuid4().hex[:8]}", b"x")
        client.delete(path)
    finally:
        client.stop()
        client.close()
    return time.monotonic() - t0


def _leader(cluster: ProcessCluster) -> NodeId:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for i in (1, 2, 3):
            node = NodeId.zookeeper(i)
            if cluster.is_running(node) and cluster.zookeeper_mode(node) == "leader":
                return node
        time.sleep(0.1)
    raise AssertionError("no ZooKeeper leader within 20s")


def test_kill_9_of_the_zookeeper_leader_leaves_a_serving_quorum_and_it_restarts(
    zk3_process_cluster: ProcessCluster,
) -> None:
    cluster = zk3_process_cluster
    leader = _leader(cluster)
    old_pid = cluster.pid(leader)
    cluster.kill(leader)
    assert not cluster.is_running(leader)
    print(f"writes after kill -9 of {leader}: {_write_ok(cluster.zookeeper_connect):.2f}s")
    cluster.start(leader)
    assert cluster.is_running(leader) and cluster.pid(leader) != old_pid
    assert cluster.zookeeper_mode(leader) in ("leader", "follower")


def test_sigstop_of_a_zookeeper_member_leaves_a_serving_quorum_until_resumed(
    zk3_process_cluster: ProcessCluster,
) -> None:
    cluster = zk3_process_cluster
    follower = next(NodeId.zookeeper(i) for i in (1, 2, 3)
                    if cluster.zookeeper_mode(NodeId.zookeeper(i)) == "follower")
    cluster.pause(follower)
    try:
        assert cluster.is_running(follower)  # paused, not gone
        assert cluster.zookeeper_mode(follower) is None  # a stopped process answers nothing
        print(f"writes with {follower} SIGSTOPped: {_write_ok(cluster.zookeeper_connect):.2f}s")
    finally:
        cluster.resume(follower)
    deadline = time.monotonic() + 20
    while cluster.zookeeper_mode(follower) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.zookeeper_mode(follower) in ("leader", "follower")


def test_graceful_stop_and_start_of_a_zookeeper_member(zk3_process_cluster: ProcessCluster) -> None:
    cluster = zk3_process_cluster
    node = NodeId.zookeeper(3)
    cluster.stop(node)
    assert not cluster.is_running(node)
    _write_ok(cluster.zookeeper_connect)
    cluster.start(node)
    assert cluster.zookeeper_mode(node) in ("leader", "follower")


def test_ephemeral_node_disappears_one_session_timeout_after_its_proxy_is_disabled(
    zk3_process_cluster: ProcessCluster,
) -> None:
    """A kazoo session through proxy `observer->zk1` is cut; its ephemeral goes after the session timeout."""
    cluster = zk3_process_cluster
    session_s = 2.0
    member = cluster.describe()["nodes"]["zookeeper:1"]["client"]  # type: ignore[index]
    name = f"observer->zk1-{uuid.uuid4().hex[:6]}"
    cluster.toxiproxy.client.create_proxy(name, str(member), listen="127.0.0.1:0")
    listen = cluster.toxiproxy.client.get_proxy(name).listen
    link = cluster.toxiproxy.link(name)
    proxied = _client(listen, timeout_s=session_s)
    direct = _client(cluster.zookeeper_connect)
    gone = threading.Event()
    try:
        assert proxied.client_id is not None
        print(f"negotiated session timeout: {proxied._session_timeout} ms")
        path = proxied.create(f"/eph-{uuid.uuid4().hex[:8]}", b"x", ephemeral=True)

        def watch(event: object) -> None:
            gone.set()

        assert direct.exists(path, watch=watch) is not None
        t_cut = time.monotonic()
        link.disable()
        assert gone.wait(session_s + 8), "ephemeral still there 8s after the session timeout"
        elapsed = time.monotonic() - t_cut
        print(f"ephemeral gone {elapsed:.2f}s after the cut (session timeout {session_s:.1f}s)")
        assert direct.exists(path) is None
        # the client's last heartbeat may precede the cut by up to a third of the timeout
        assert session_s * 2 / 3 - 0.25 <= elapsed <= session_s + 3.0
    finally:
        link.enable()
        for client in (proxied, direct):
            client.stop()
            client.close()


def test_latency_toxic_on_a_link_slows_requests_through_it_until_removed(
    zk3_process_cluster: ProcessCluster,
) -> None:
    """`Link.add_toxic('latency')` on the cluster's Toxiproxy delays a ZooKeeper client; removal heals it."""
    cluster = zk3_process_cluster
    member = cluster.describe()["nodes"]["zookeeper:2"]["client"]  # type: ignore[index]
    name = f"observer->zk2-{uuid.uuid4().hex[:6]}"
    cluster.toxiproxy.client.create_proxy(name, str(member), listen="127.0.0.1:0")
    link = cluster.toxiproxy.link(name)
    client = _client(cluster.toxiproxy.client.get_proxy(name).listen)

    def round_trip() -> float:
        t0 = time.monotonic()
        client.get("/")
        return time.monotonic() - t0

    try:
        base = min(round_trip() for _ in range(3))
        toxic = link.add_toxic("latency", {"latency": 300.0, "jitter": 0}, stream="downstream")
        slow = round_trip()
        link.remove_toxic(toxic)
        healed = min(round_trip() for _ in range(3))
        print(f"zookeeper get: {base * 1000:.1f} ms, with 300 ms latency toxic {slow * 1000:.1f} ms, "
              f"after removal {healed * 1000:.1f} ms")
        assert 0.3 <= slow < 2.0
        assert healed < 0.25
    finally:
        client.stop()
        client.close()
        cluster.toxiproxy.client.delete_proxy(name, missing_ok=True)
