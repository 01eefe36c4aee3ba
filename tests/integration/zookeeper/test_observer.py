"""ZooKeeperObserver against a real ZooKeeper server, driven by writing Kafka's znodes as Kafka does."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from harness.cluster.zookeeper import ZooKeeperEnsemble, free_port
from harness.errors import HarnessTimeout
from harness.observe.base import Observer
from harness.observe.zookeeper import ZooKeeperObserver
from harness.zk import znodes as z
from tests.fixtures.zookeeper import EventCollector

pytestmark = pytest.mark.integration


def _client(hosts: str, **kw: object) -> KazooClient:
    c = KazooClient(hosts=hosts, timeout=5.0, **kw)
    c.start(timeout=10)
    return c


def _close(c: KazooClient) -> None:
    c.stop()
    c.close()


def _elect(zk: KazooClient, broker: int, epoch: int) -> None:
    """What a Kafka controller does on election: create /controller and bump the epoch atomically."""
    tx = zk.transaction()
    tx.create(z.CONTROLLER_PATH, z.ControllerRegistration(broker, int(time.time() * 1000)).encode(), ephemeral=True)
    tx.set_data(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(epoch))
    results = tx.commit()
    assert not any(isinstance(r, Exception) for r in results), results


def _register(zk: KazooClient, broker: int) -> None:
    reg = z.BrokerRegistration(broker, (z.Endpoint("PLAINTEXT", "127.0.0.1", 9090 + broker),))
    zk.create(z.broker_path(broker), reg.encode(), ephemeral=True)


def _create_topic(zk: KazooClient, topic: str, assignment: dict[int, tuple[int, ...]]) -> None:
    zk.create(z.topic_path(topic), z.TopicAssignment(topic, assignment, topic_id="AAAAAAAAAAAAAAAAAAAAAA").encode())


def _write_state(zk: KazooClient, topic: str, p: int, st: z.PartitionState, *, create: bool = False) -> None:
    if create:
        zk.create(z.partition_state_path(topic, p), st.encode(), makepath=True)
    else:
        zk.set(z.partition_state_path(topic, p), st.encode())


@pytest.fixture
def cluster(zk_client: KazooClient) -> KazooClient:
    """The chroot with Kafka's skeleton, an epoch of 1 and controller broker 1 (a writer client)."""
    z.ensure_kafka_paths(zk_client)
    zk_client.create(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(1))
    zk_client.create(z.CONTROLLER_PATH, z.ControllerRegistration(1, 1).encode(), ephemeral=True)
    return zk_client


@pytest.fixture
def observer(zk_connect: str, zk_events: EventCollector, cluster: KazooClient) -> Iterator[ZooKeeperObserver]:
    with ZooKeeperObserver(zk_connect, zk_events, session_timeout_s=4.0) as obs:
        yield obs


def test_observer_implements_the_observer_protocol(observer: ZooKeeperObserver) -> None:
    assert isinstance(observer, Observer)
    assert observer.name == "zk"


def test_controller_changes_and_epoch_bumps_are_emitted_in_order(
    observer: ZooKeeperObserver, cluster: KazooClient, zk_events: EventCollector
) -> None:
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == 1 and e["epoch"] == 1)
    before = time.time() * 1000
    cluster.delete(z.CONTROLLER_PATH)
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == -1)
    _elect(cluster, 2, 2)
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == 2 and e["epoch"] == 2)
    cluster.set(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(3))
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["epoch"] == 3)
    assert observer.wait_idle()
    got = [(e["broker"], e["epoch"]) for e in zk_events.of("controller")]
    assert got == [(1, 1), (-1, 1), (2, 2), (2, 3)]
    walls = [e["wall"] for e in zk_events.of("controller")[1:]]
    assert walls == sorted(walls), zk_events.of("controller")
    assert walls[0] >= before - 5 and walls[-1] <= time.time() * 1000 + 5
    assert all(e["src"] == "zk" for e in zk_events.events)


def test_broker_up_and_down_when_a_registration_session_closes_or_expires(
    observer: ZooKeeperObserver, zk_connect: str, zk_events: EventCollector
) -> None:
    b1, b2 = _client(zk_connect), _client(zk_connect)
    try:
        _register(b1, 1)
        _register(b2, 2)
        up2 = zk_events.wait_for(lambda e: e["type"] == "broker.up" and e["broker"] == 2)
        zk_events.wait_for(lambda e: e["type"] == "broker.up" and e["broker"] == 1)
        # ZooKeeper's own order of the registration (its creation zxid, Kafka's broker epoch) rides along.
        assert up2["zxid"] == b2.exists(z.broker_path(2)).czxid
        _close(b1)  # clean session close: the ephemeral vanishes at once
        zk_events.wait_for(lambda e: e["type"] == "broker.down" and e["broker"] == 1)
        # Expire broker 2's session server-side: a second client takes the session over, then closes it.
        thief = KazooClient(hosts=zk_connect, client_id=b2.client_id, timeout=5.0)
        thief.start(timeout=10)
        _close(thief)
        zk_events.wait_for(lambda e: e["type"] == "broker.down" and e["broker"] == 2)
    finally:
        _close(b1)
        _close(b2)
    assert observer.wait_idle()
    assert [(e["type"], e["broker"]) for e in zk_events.events if e["type"].startswith("broker.")] == [
        ("broker.up", 1),
        ("broker.up", 2),
        ("broker.down", 1),
        ("broker.down", 2),
    ]


def test_partition_leader_isr_changes_and_later_topics_are_seen(
    observer: ZooKeeperObserver, cluster: KazooClient, zk_events: EventCollector
) -> None:
    _create_topic(cluster, "orders", {0: (1, 2, 3), 1: (2, 3, 1)})
    _write_state(cluster, "orders", 0, z.PartitionState(1, 0, (1, 2, 3), 1), create=True)
    _write_state(cluster, "orders", 1, z.PartitionState(2, 0, (2, 3, 1), 1), create=True)
    first = zk_events.wait_for(lambda e: e["type"] == "partition.state" and e["partition"] == 1)
    written = cluster.exists(z.partition_state_path("orders", 1))
    assert first == {
        "type": "partition.state", "src": "zk", "wall": first["wall"], "topic": "orders", "partition": 1,
        "leader": 2, "leader_epoch": 0, "isr": [2, 3, 1], "replicas": [2, 3, 1], "controller_epoch": 1,
        "zxid": written.mzxid,
    }  # fmt: skip
    # Leader 1 dies: the controller moves leadership and shrinks the ISR, then announces it.
    _write_state(cluster, "orders", 0, z.PartitionState(2, 1, (2, 3), 1))
    cluster.create(z.isr_change_path(), z.IsrChangeNotification((("orders", 0),)).encode(), sequence=True)
    zk_events.wait_for(lambda e: e.get("partition") == 0 and e.get("leader") == 2 and e["isr"] == [2, 3])
    # An identical rewrite (new zkVersion, same content) is not a change.
    _write_state(cluster, "orders", 0, z.PartitionState(2, 1, (2, 3), 1))
    # A topic created later, whose partition directory appears only after the topic znode.
    _create_topic(cluster, "audit", {0: (3, 1)})
    time.sleep(0.05)
    _write_state(cluster, "audit", 0, z.PartitionState(3, 0, (3, 1), 2), create=True)
    zk_events.wait_for(lambda e: e.get("topic") == "audit" and e["replicas"] == [3, 1] and e["leader"] == 3)
    # A reassignment changes the replicas of a partition without touching its state.
    cluster.set(z.topic_path("audit"), z.TopicAssignment("audit", {0: (1, 3)}).encode())
    zk_events.wait_for(lambda e: e.get("topic") == "audit" and e["replicas"] == [1, 3])
    assert observer.wait_idle()
    p0 = [(e["leader"], e["leader_epoch"], e["isr"]) for e in zk_events.of("partition.state") if e["partition"] == 0
          and e["topic"] == "orders"]  # fmt: skip
    assert p0 == [(1, 0, [1, 2, 3]), (2, 1, [2, 3])]


def test_session_expiry_of_the_observer_is_reported_and_the_final_state_recorded(
    observer: ZooKeeperObserver, cluster: KazooClient, zk_connect: str, zk_events: EventCollector
) -> None:
    _create_topic(cluster, "t", {0: (1, 2)})
    _write_state(cluster, "t", 0, z.PartitionState(1, 0, (1, 2), 1), create=True)
    zk_events.wait_for(lambda e: e["type"] == "partition.state" and e["leader"] == 1)
    old_session = observer.session_id
    assert old_session is not None and observer.client is not None
    # Take the observer's session over from a second client and close it there (the server then
    # expires it for the observer); changes happen meanwhile. The observer may win the session back
    # before the thief closes it, so repeat the takeover until the expiry is reported.
    client_id = observer.client.client_id
    for attempt in range(5):
        thief = KazooClient(hosts=zk_connect, client_id=client_id, timeout=5.0)
        thief.start(timeout=10)
        if attempt == 0:
            cluster.delete(z.CONTROLLER_PATH)
            _elect(cluster, 3, 7)
            _write_state(cluster, "t", 0, z.PartitionState(2, 1, (2,), 7))
        _close(thief)
        if any(e["type"] == "observer.error" for e in zk_events.events):
            break
        time.sleep(0.5)
        if any(e["type"] == "observer.error" for e in zk_events.events):
            break
    zk_events.wait_for(lambda e: e["type"] == "observer.error" and e["observer"] == "zk")
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == 3 and e["epoch"] == 7)
    zk_events.wait_for(lambda e: e["type"] == "partition.state" and e["leader"] == 2 and e["controller_epoch"] == 7)
    assert observer.session_id not in (None, old_session)
    # Watches are armed again on the new session.
    mark = len(zk_events)
    cluster.set(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(8))
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["epoch"] == 8, after=mark)


def test_chroot_argument_scopes_the_observer(
    zookeeper: ZooKeeperEnsemble, zk_chroot: str, cluster: KazooClient, zk_events: EventCollector
) -> None:
    hosts = zookeeper.connect_string
    with ZooKeeperObserver(hosts, zk_events, chroot=zk_chroot, name="zk-chroot", session_timeout_s=4.0):
        zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == 1 and e["epoch"] == 1)


def test_malformed_znode_data_becomes_an_observer_error_not_a_crash(
    observer: ZooKeeperObserver, cluster: KazooClient, zk_events: EventCollector
) -> None:
    cluster.set(z.CONTROLLER_EPOCH_PATH, b"not-a-number")
    zk_events.wait_for(lambda e: e["type"] == "observer.error" and "/controller_epoch" in e["error"])
    cluster.set(z.CONTROLLER_EPOCH_PATH, b"4")
    zk_events.wait_for(lambda e: e["type"] == "controller" and e["epoch"] == 4)


def test_stop_leaves_no_thread_running(zk_connect: str, cluster: KazooClient, zk_events: EventCollector) -> None:
    before = set(threading.enumerate())
    obs = ZooKeeperObserver(zk_connect, zk_events, session_timeout_s=4.0)
    obs.start()
    assert len(set(threading.enumerate()) - before) >= 2  # kazoo's threads and the worker
    obs.stop()
    obs.stop()  # idempotent
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in set(threading.enumerate()) - before] == []


def test_start_against_no_server_times_out_and_leaves_no_thread(zk_events: EventCollector) -> None:
    before = set(threading.enumerate())
    obs = ZooKeeperObserver(f"127.0.0.1:{free_port()}", zk_events, connect_timeout_s=1.0)
    with pytest.raises(HarnessTimeout, match="observer 'zk' to connect"):
        obs.start()
    obs.stop()
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in set(threading.enumerate()) - before] == []
    assert zk_events.events == []


def test_restarted_observer_emits_only_what_changed_meanwhile(
    zk_connect: str, cluster: KazooClient, zk_events: EventCollector
) -> None:
    obs = ZooKeeperObserver(zk_connect, zk_events, session_timeout_s=4.0)
    with obs:
        zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == 1)
    cluster.set(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(2))
    with obs:
        zk_events.wait_for(lambda e: e["type"] == "controller" and e["epoch"] == 2)
        assert obs.wait_idle()
    assert [(e["broker"], e["epoch"]) for e in zk_events.of("controller")] == [(1, 1), (1, 2)]


def test_observer_started_on_an_empty_namespace_sees_kafka_arrive(
    zk_connect: str, zk_client: KazooClient, zk_events: EventCollector
) -> None:
    """Started before any broker: no skeleton yet, so every path is watched for its creation."""
    with ZooKeeperObserver(zk_connect, zk_events, session_timeout_s=4.0) as obs:
        assert zk_events.events == [{"type": "controller", "src": "zk", "wall": zk_events.events[0]["wall"],
                                     "broker": -1, "epoch": None}]  # fmt: skip
        z.ensure_kafka_paths(zk_client)
        _register(zk_client, 1)
        zk_client.create(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(0))
        _elect(zk_client, 1, 1)
        _create_topic(zk_client, "t", {0: (1,)})
        _write_state(zk_client, "t", 0, z.PartitionState(1, 0, (1,), 1), create=True)
        zk_events.wait_for(lambda e: e["type"] == "broker.up" and e["broker"] == 1)
        zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == 1 and e["epoch"] == 1)
        zk_events.wait_for(lambda e: e["type"] == "partition.state" and e["topic"] == "t")
        assert obs.wait_idle()
    assert not zk_events.of("observer.error")
