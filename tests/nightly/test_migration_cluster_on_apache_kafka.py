"""The ZooKeeper-to-KRaft migration's cluster on Apache Kafka 3.9.2 (process backend), every phase of Kafka's procedure
driven by hand: a ZooKeeper-mode cluster whose KRaft controllers are formatted with the id it wrote to `/cluster/id`
and not started; started, and the brokers restarted one by one in the `migrating` phase, the metadata copy ends
(`/migration`'s `kraft_metadata_offset` > 0) and a KRaft controller holds `/controller`, every connection of it
passing its own proxies: to ZooKeeper, to the other voters, and to each broker's `FROM<controller>` listener. The
brokers then restart as KRaft brokers (leaving `/brokers/ids`) and the controllers without the migration. No
acknowledged write is lost on the way. Real brokers, ZooKeeper, controllers and clients; the cluster layer under the
`migrate_to_kraft` operation (`harness/faults/migration_op.py`), driven by hand.

Nightly (about 70 s on 2 cores), beside the whole migration as an experiment
(`tests/nightly/test_migration_on_apache_kafka.py`); `make test` runs a migration into dual-write
(`tests/integration/e2e/test_migration_into_dual_write_on_apache_kafka.py`). A KRaft broker of a
migration keeps the controllers' `FROM<c>` listeners: without them the active controller's dual-write propagation
failed at the first leader on a KRaft broker and sent the ZooKeeper-mode brokers nothing more, so their ISRs stayed
short (2026-11-30, docs/apache-kafka.md "The ZooKeeper-to-KRaft migration, by hand"); no controller may log a
migration fault."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.cluster.render_migration import BrokerPhase
from harness.waiting import wait_until
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka, migration_faults

pytestmark = [pytest.mark.integration, pytest.mark.slow]


RELEASE = "3.9.2"
CONTROLLERS = (NodeId.controller(101), NodeId.controller(102), NodeId.controller(103))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    apache_kafka(RELEASE)
    spec = ClusterSpec(brokers=3, zookeepers=1, mode="zookeeper", controllers=3, kafka_version=RELEASE,
                       broker=APACHE_KAFKA, ready_timeout_s=180,
                       broker_config={"inter.broker.protocol.version": "3.9", "min.insync.replicas": "2"})
    with ProcessBackend().up(spec, tmp_path_factory.mktemp("migration")) as up:
        yield up


@pytest.fixture(scope="module")
def zookeeper(cluster: ProcessCluster) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=cluster.zookeeper_connect, logger=LIBRDKAFKA_LOGGER)
    zk.start(timeout=30)
    yield zk
    zk.stop()
    zk.close()


def _produce(cluster: ProcessCluster, first: int, count: int) -> set[bytes]:
    acked: set[bytes] = set()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                         "logger": LIBRDKAFKA_LOGGER})
    for i in range(first, first + count):
        producer.produce("payments", value=str(i).encode(),
                         on_delivery=lambda err, msg: acked.add(msg.value()) if err is None else None)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def _roll(cluster: ProcessCluster, node: NodeId, phase: BrokerPhase, words: str) -> None:
    """Restart broker `node` in migration phase `phase` once every ISR is full, as a rolling restart does (stopping a
    broker while the one before it still catches up leaves an ISR below `min.insync.replicas`), and wait until
    every ISR is full again."""
    _await_full_isrs(cluster)
    cluster.stop(node)
    assert words in cluster.migrate(node, phase)
    cluster.start(node)
    _await_full_isrs(cluster)


def _await_full_isrs(cluster: ProcessCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER})

    def lagging() -> list[str]:
        parts = [(t.topic, p) for t in admin.list_topics(timeout=10).topics.values() for p in t.partitions.values()]
        return [f"{topic}/{p.id} isr {list(p.isrs)} of {list(p.replicas)}" for topic, p in parts
                if len(p.isrs) < len(p.replicas)]

    wait_until("every ISR to be full", lambda: not lagging(), 180.0, last_seen=lambda _: lagging(),
               retry_on=(KafkaException,))


def _cluster_id_formatted(cluster: ProcessCluster, node: NodeId) -> str:
    (meta,) = Path(cluster.log_path(node)).parent.glob("**/meta.properties")
    return dict(line.split("=", 1) for line in meta.read_text().splitlines() if "=" in line)["cluster.id"]


def test_the_controllers_wait_formatted_with_the_id_zookeeper_holds(cluster: ProcessCluster,
                                                                    zookeeper: KazooClient) -> None:
    assert not any(cluster.is_running(c) for c in CONTROLLERS)
    cluster_id = json.loads(zookeeper.get("/cluster/id")[0])["id"]
    assert {_cluster_id_formatted(cluster, c) for c in CONTROLLERS} == {cluster_id}
    assert all(cluster.link(c, NodeId.broker(1)) is not None and cluster.link(c, NodeId.zookeeper(1)) is not None
               for c in CONTROLLERS)


def test_every_phase_of_the_migration_hands_the_cluster_to_kraft_losing_no_acknowledged_write(
        cluster: ProcessCluster, zookeeper: KazooClient) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER})
    admin.create_topics([NewTopic("payments", 3, 3)])["payments"].result(60)
    acked = _produce(cluster, 0, 300)
    for controller in CONTROLLERS:
        cluster.start(controller)
    for broker in (NodeId.broker(1), NodeId.broker(2), NodeId.broker(3)):
        _roll(cluster, broker, "migrating", "migrating to KRaft")
        acked |= _produce(cluster, 1000 * broker.id, 100)

    def copied() -> dict[str, int] | None:
        state: dict[str, int] = json.loads(zookeeper.get("/migration")[0]) if zookeeper.exists("/migration") else {}
        return state if state.get("kraft_metadata_offset", -1) > 0 else None

    state = wait_until("the metadata copy to end (/migration kraft_metadata_offset > 0)", copied, 180.0,
                       hint="see the controllers' controller.log")
    holder = json.loads(zookeeper.get("/controller")[0])
    assert state["kraft_controller_id"] in (101, 102, 103) and holder["brokerid"] == state["kraft_controller_id"]
    assert holder["kraftControllerEpoch"] >= 0
    acked |= _produce(cluster, 9000, 100)
    for broker in (NodeId.broker(1), NodeId.broker(2), NodeId.broker(3)):
        _roll(cluster, broker, "kraft", "a KRaft broker")
        assert str(broker.id) not in zookeeper.get_children("/brokers/ids")
        acked |= _produce(cluster, 10000 + 1000 * broker.id, 100)
    assert "broker.id" not in (Path(cluster.log_path(NodeId.broker(1))).parent / "server.properties").read_text()
    for controller in CONTROLLERS:
        cluster.stop(controller)
        assert "migration ended" in cluster.migrate(controller)
        cluster.start(controller)
        acked |= _produce(cluster, 20000 + 1000 * controller.id, 100)
    faults = migration_faults(Path(cluster.log_path(c)).parent for c in CONTROLLERS)
    assert not faults, faults
    props = (Path(cluster.log_path(CONTROLLERS[0])).parent / "server.properties").read_text()
    assert "zookeeper" not in props, props
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check",
                         "auto.offset.reset": "earliest", "logger": LIBRDKAFKA_LOGGER})
    consumer.subscribe(["payments"])
    seen: set[bytes] = set()

    def read_all() -> bool:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.add(msg.value())
        return acked <= seen

    try:
        wait_until("every acknowledged write to be read back", read_all, 120.0, poll_s=0.0,
                   last_seen=lambda _: f"{len(acked - seen)} of {len(acked)} not read yet")
    finally:
        consumer.close()
