"""3 brokers + 1 real ZooKeeper + the embedded Toxiproxy through `ProcessBackend.up`, on Apache Kafka 3.9:
registration, Metadata through each broker's own client proxy, process-level kill/stop/pause/start, and
the one-listener-per-source link scheme: cutting a client->broker, a broker->broker or a broker->ZooKeeper
link cuts exactly that path."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import psutil
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from harness.cluster.base import CLIENT, ClusterSpec, NodeId
from harness.cluster.process import ProcessCluster
from harness.errors import BackendError
from tests.fixtures.process_cluster import apache_kafka_backend, metadata_ok

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_MS = 3000
LAG_MS = 3000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    backend = apache_kafka_backend()
    spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=120, broker_config={
        "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": str(LAG_MS)})
    t0 = time.monotonic()
    with backend.up(spec, tmp_path_factory.mktemp("apache-kafka")) as c:
        print(f"3 Apache Kafka brokers + ZooKeeper + Toxiproxy up in {time.monotonic() - t0:.2f}s")
        yield c


@pytest.fixture
def zk(cluster: ProcessCluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=cluster.zookeeper_connect, timeout=5.0)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


_QUIET = logging.getLogger("tests.process_backend.rdkafka")
_QUIET.setLevel(logging.CRITICAL)


def _metadata(bootstrap: str, timeout_s: float = 5.0) -> Any:
    """Metadata from a fresh AdminClient (librdkafka's connection-refused chatter silenced)."""
    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000,
                                              "logger": _QUIET}))
    try:
        return admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise KafkaException(str(exc)) from None  # drop the frame holding the client alive


def _wait(predicate: Any, timeout_s: float, what: str, seen: Any = None) -> float:
    """Poll `predicate` until it holds; past `timeout_s`, fail naming `what` and, if given, `seen()`: the last
    state the predicate looked at."""
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout_s:
            last = f"; last seen {seen()}" if seen is not None else ""
            raise AssertionError(f"{what} not within {timeout_s}s{last}")
        time.sleep(0.05)
    return time.monotonic() - t0


def test_every_broker_registers_and_answers_metadata_through_its_own_client_proxy(
    cluster: ProcessCluster, zk: KazooClient,
) -> None:
    assert cluster.flavour.name == "apache-kafka"
    assert sorted(zk.get_children("/brokers/ids")) == ["1", "2", "3"]
    proxies = cluster.bootstrap_servers.split(",")
    for j, proxy in enumerate(proxies, start=1):
        assert proxy == str(cluster.topology.proxy(CLIENT, NodeId.broker(j)).listen)  # type: ignore[union-attr]
        host, port = proxy.rsplit(":", 1)
        assert metadata_ok(host, int(port), timeout_s=2.0)  # broker j itself answers on its proxy
        md = _metadata(proxy)
        assert md.brokers[j].port == int(port)  # EXTERNAL advertised = client->j
    described = cluster.describe()
    assert len(described["proxies"]) == 3 * 2 + 3 * 1 + 3  # type: ignore[arg-type]


def test_kill_then_start_a_broker_replaces_its_process_and_registration(
    cluster: ProcessCluster, zk: KazooClient,
) -> None:
    node = NodeId.broker(2)
    old_pid = cluster.pid(node)
    cluster.kill(node)
    assert not cluster.is_running(node)
    gone = _wait(lambda: zk.exists("/brokers/ids/2") is None, SESSION_MS / 1000 + 5, "registration expiry")
    print(f"/brokers/ids/2 gone {gone:.2f}s after kill -9 (session timeout {SESSION_MS} ms)")
    t0 = time.monotonic()
    cluster.start(node)
    print(f"broker:2 restarted and ready in {time.monotonic() - t0:.2f}s")
    assert cluster.is_running(node) and cluster.pid(node) != old_pid
    assert zk.exists("/brokers/ids/2") is not None


def test_stop_is_a_clean_shutdown_that_deregisters_at_once(cluster: ProcessCluster, zk: KazooClient) -> None:
    node = NodeId.broker(3)
    t0 = time.monotonic()
    cluster.stop(node)
    print(f"broker:3 stopped (SIGTERM) in {time.monotonic() - t0:.2f}s")
    assert not cluster.is_running(node)
    assert zk.exists("/brokers/ids/3") is None  # deleted on clean shutdown, not by expiry
    cluster.start(node)
    assert zk.exists("/brokers/ids/3") is not None


def test_paused_broker_stops_answering_and_resumes(cluster: ProcessCluster) -> None:
    node = NodeId.broker(1)
    proxy = str(cluster.topology.proxy(CLIENT, node).listen)  # type: ignore[union-attr]
    cluster.pause(node)
    try:
        assert cluster.is_running(node)
        with pytest.raises(KafkaException):
            _metadata(proxy, timeout_s=1.5)
    finally:
        cluster.resume(node)
    # A raw Metadata request through broker 1's own proxy: librdkafka may answer list_topics from any
    # broker it learnt of, so only a request on this connection shows that broker 1 itself answers again.
    host, port = proxy.rsplit(":", 1)
    deadline = time.monotonic() + 15
    while not metadata_ok(host, int(port), timeout_s=1.0) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert metadata_ok(host, int(port), timeout_s=2.0), "broker 1 does not answer Metadata after SIGCONT"


def _lists_broker(bootstrap: str, broker: int) -> bool:
    try:
        return broker in _metadata(bootstrap, timeout_s=2.0).brokers
    except KafkaException:
        return False


def test_cutting_a_client_link_isolates_only_that_broker_from_clients(cluster: ProcessCluster) -> None:
    link = cluster.link(CLIENT, NodeId.broker(3))
    proxy1, _, proxy3 = cluster.bootstrap_servers.split(",")
    # An earlier freeze of broker 1 may have outlived its session: wait until it is registered again.
    _wait(lambda: _lists_broker(proxy1, 1), 60, "broker 1 listed in Metadata before the cut")
    link.disable()
    try:
        with pytest.raises(KafkaException):
            _metadata(proxy3, timeout_s=1.5)
        # Broker 1 answers through its own proxy; whether it lists itself depends on its ZooKeeper
        # registration, which the earlier freeze may make it renew once more (seen in a suite run).
        _wait(lambda: _lists_broker(proxy1, 1), 60, "broker 1 listed through its own proxy during the cut")
    finally:
        link.enable()
    assert 3 in _metadata(proxy3).brokers


def test_cutting_a_brokers_zookeeper_proxy_expires_only_its_registration(
    cluster: ProcessCluster, zk: KazooClient,
) -> None:
    """Broker 1's ZooKeeper session runs through proxy `1->zk1` alone: cutting it expires only /brokers/ids/1."""
    link = cluster.link(NodeId.broker(1), NodeId.zookeeper(1))
    assert link.name == "1->zk1"
    # An earlier freeze of broker 1 may have outlived its session: wait for its new registration.
    _wait(lambda: zk.exists("/brokers/ids/1") is not None, 60, "broker 1 registered before the cut")
    t0 = time.monotonic()
    link.disable()
    try:
        _wait(lambda: zk.exists("/brokers/ids/1") is None, SESSION_MS / 1000 + 5, "session expiry")
        # From t0, before the cut: the cut lands somewhere inside disable(), which a loaded machine may take half a
        # second to answer, so time counted from its return understated the session's life (1.60 s seen).
        gone = time.monotonic() - t0
        print(f"/brokers/ids/1 gone {gone:.2f}s after cutting 1->zk1 (session timeout {SESSION_MS} ms)")
        # ZooKeeper expires a session no sooner than its timeout after its last heartbeat (ExpiryQueue rounds the
        # expiry up to the next tick), and the client pings every third of the timeout: at least 2/3 of it
        assert gone >= SESSION_MS / 1000 * 2 / 3 - 0.25
        assert sorted(zk.get_children("/brokers/ids")) == ["2", "3"]
        assert cluster.is_running(NodeId.broker(1))
    finally:
        link.enable()
    assert time.monotonic() - t0 < 30


def _isr(bootstrap: str, topic: str, timeout_s: float = 30.0) -> dict[int, list[int]]:
    """The ISR per partition of `topic`, waiting until the answering broker's metadata lists the topic
    (CreateTopics returns once the controller wrote it; a broker learns it a moment later)."""
    deadline = time.monotonic() + timeout_s
    while True:
        md = _metadata(bootstrap, timeout_s=10.0)
        if topic in md.topics and md.topics[topic].error is None:
            return {p: sorted(meta.isrs) for p, meta in md.topics[topic].partitions.items()}
        if time.monotonic() > deadline:
            raise AssertionError(f"metadata listing topic {topic!r} not within {timeout_s}s; last seen topics "
                                 f"{sorted(md.topics)}, error {getattr(md.topics.get(topic), 'error', None)}")
        time.sleep(0.1)


def test_cutting_a_broker_to_broker_link_stops_only_that_followers_fetches(
    cluster: ProcessCluster, zk: KazooClient,
) -> None:
    """Broker 2 reaches broker 1 only through proxy `2->1`: cut it while records arrive, and broker 2
    falls behind and leaves the ISR of the partition that broker 1 leads and 2 follows, while broker 3,
    following broker 1 on another partition, stays in; healed, broker 2 catches up and comes back.
    (On an idle partition a follower that stops fetching stays in sync, in Kafka as here: its LEO still
    equals the leader's, `ReplicaState.isCaughtUp`.)"""
    bootstrap = cluster.bootstrap_servers
    # An earlier cut of a ZooKeeper link may still be expiring: start once all three are registered.
    _wait(lambda: sorted(zk.get_children("/brokers/ids")) == ["1", "2", "3"], 60, "all brokers registered")

    def created() -> bool:
        """The controller learns of a registration from its ZooKeeper watch, after the znode is there: until then
        it refuses broker 1 in a replica list (INVALID_REPLICA_ASSIGNMENT), and the creation is asked again. An
        earlier cut may also have moved the controller: the one a client's metadata names answers NOT_CONTROLLER,
        which librdkafka does not retry, so each try asks with a fresh client (as kafka_operator does)."""
        admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "logger": _QUIET}))
        try:
            topic = NewTopic("b2b", num_partitions=2, replica_assignment=[[1, 2], [1, 3]])
            admin.create_topics([topic])["b2b"].result(60)
        except KafkaException as exc:
            if exc.args[0].name() not in ("INVALID_REPLICA_ASSIGNMENT", "NOT_CONTROLLER"):
                raise
            return False
        return True

    _wait(created, 60, "b2b created on brokers 1, 2 and 3")
    producer = Producer(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0,
                                              "logger": _QUIET}))

    last: list[dict[int, list[int]]] = [{}]

    def isr_with_writes() -> dict[int, list[int]]:
        for partition in (0, 1):
            producer.produce("b2b", b"x" * 100, partition=partition)
        producer.poll(0)
        last[0] = _isr(bootstrap, "b2b")
        return last[0]

    _wait(lambda: isr_with_writes() == {0: [1, 2], 1: [1, 3]}, 60, "full ISRs of b2b", lambda: last[0])
    # A new partition's ISR is its replica list before any follower has fetched: wait until an acks=all write to
    # each partition is acknowledged, so both followers replicate, before the cut. Cut sooner, the controller's
    # UpdateMetadata may not have reached broker 1 yet, and then every follower gets UNKNOWN_TOPIC_ID from it
    # (seen with broker 2 as the controller: its requests to broker 1 go through the cut proxy too).
    replicated = Producer(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "acks": "all",
                                                "message.timeout.ms": 60000, "logger": _QUIET}))
    failures: list[str] = []
    for partition in (0, 1):
        replicated.produce("b2b", b"replicated", partition=partition,
                           on_delivery=lambda err, _msg: failures.append(str(err)) if err else None)
    assert replicated.flush(90) == 0 and not failures, f"acks=all writes to b2b not acknowledged: {failures}"
    link = cluster.link(NodeId.broker(2), NodeId.broker(1))
    assert link.name == "2->1"
    link.disable()
    try:
        took = _wait(lambda: isr_with_writes()[0] == [1], LAG_MS / 1000 + 60, "broker 2 leaving the ISR",
                     lambda: last[0])
        print(f"broker 2 left the ISR of b2b/0 {took:.2f}s after 2->1 was cut (replica.lag.time.max.ms {LAG_MS})")
        # Broker 3's link still works: it is in b2b/1's ISR while broker 2 is out of b2b/0's. On a loaded
        # machine a fetch of broker 3 may itself stall past the short lag bound, so it may leave and rejoin.
        _wait(lambda: isr_with_writes() == {0: [1], 1: [1, 3]}, 60, "broker 3 in the ISR while broker 2 is out",
              lambda: last[0])
    finally:
        link.enable()
    _wait(lambda: isr_with_writes()[0] == [1, 2], 60, "broker 2 back in the ISR after the heal", lambda: last[0])
    assert producer.flush(30) == 0


def test_teardown_leaves_no_process_behind(tmp_path: Path) -> None:
    """down() kills every broker, ZooKeeper member and the Toxiproxy; a second down() is a no-op."""
    backend = apache_kafka_backend()
    c = backend.up(ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=60), tmp_path)
    pids = [c.pid(n) for n in c.nodes] + [c.toxiproxy.process.pid]
    c.down()
    c.down()
    assert all(p is not None and not psutil.pid_exists(p) for p in pids)


def test_a_broker_that_cannot_start_fails_up_naming_it_with_its_log_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    backend = apache_kafka_backend()
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    spec = ClusterSpec(brokers=2, zookeepers=1, ready_timeout_s=30, broker_config={"num.partitions": "abc"})
    with pytest.raises(BackendError) as info:
        backend.up(spec, tmp_path)
    text = str(info.value)
    assert "broker:1" in text and "exited while starting" in text
    assert "num.partitions" in text  # the log's last lines
    time.sleep(0.2)
    left = [p for p in me.children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []
