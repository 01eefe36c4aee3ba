"""Integration: a real reference-broker process with real ZooKeeper and real librdkafka clients (data path)."""

from __future__ import annotations

import json
import time
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kazoo.client import KazooClient

from harness.zk.znodes import BrokerRegistration
from tests.fixtures.broker import ReferenceBroker

pytestmark = pytest.mark.integration


def create_topic(bs: str, name: str, partitions: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(15)


def test_broker_registers_in_zookeeper_with_kafka_json(
        reference_broker: ReferenceBroker, zk_client: KazooClient) -> None:
    """/brokers/ids/<id> is an EPHEMERAL node with Kafka's version-5 JSON naming the advertised endpoint."""
    data, stat = zk_client.get("/brokers/ids/0")
    assert stat.ephemeralOwner != 0
    obj = json.loads(data)
    assert obj["version"] == 5 and obj["endpoints"] == [f"PLAINTEXT://{reference_broker.bootstrap_servers}"]
    assert obj["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    reg = BrokerRegistration.decode(0, data)
    assert (reg.host, reg.port) == ("127.0.0.1", reference_broker.port)
    assert zk_client.exists("/cluster/id") is not None
    data, _ = zk_client.get("/controller")  # part 2: the broker won the controller election
    assert json.loads(data)["brokerid"] == 0 and int(zk_client.get("/controller_epoch")[0]) >= 1


def test_clean_stop_deletes_the_registration(reference_broker: ReferenceBroker, zk_client: KazooClient) -> None:
    """SIGTERM is a clean shutdown: the ephemeral registration is gone at once."""
    reference_broker.stop()
    assert zk_client.exists("/brokers/ids/0") is None


def test_10k_keyed_idempotent_acks_all_messages_read_back_in_order_per_partition(
        reference_broker: ReferenceBroker) -> None:
    """10k keyed messages (idempotent, acks=all) are all read back, in acknowledged offset order per partition."""
    bs = reference_broker.bootstrap_servers
    create_topic(bs, "orders", 4)
    acked: dict[int, list[tuple[int, int]]] = defaultdict(list)
    errors: list[object] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.partition()].append((msg.offset(), int(msg.value())))  # type: ignore[attr-defined]

    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    for i in range(10_000):
        p.produce("orders", key=f"k{i % 97}", value=str(i), on_delivery=on_delivery)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(30) == 0 and not errors
    assert sum(len(v) for v in acked.values()) == 10_000

    c = Consumer({"bootstrap.servers": bs, "group.id": "reader", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["orders"])
    seen: dict[int, list[tuple[int, int]]] = defaultdict(list)
    deadline = time.monotonic() + 60
    while sum(len(v) for v in seen.values()) < 10_000 and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            assert m.error() is None, m.error()
            seen[m.partition() or 0].append((m.offset() or 0, int(m.value() or b"-1")))
    c.close()
    for part, rows in acked.items():
        assert seen[part] == sorted(rows), f"partition {part} differs"
    by_key: dict[str, list[int]] = defaultdict(list)
    for rows in seen.values():
        for _off, v in rows:
            by_key[f"k{v % 97}"].append(v)
    assert all(vals == sorted(vals) for vals in by_key.values())


def test_metadata_list_offsets_and_describe_configs(reference_broker: ReferenceBroker) -> None:
    """Metadata/DescribeCluster name this broker controller and leader; ListOffsets earliest/latest/by time;
    DescribeConfigs for a topic and the broker."""
    bs = reference_broker.bootstrap_servers
    create_topic(bs, "cfg", 2, **{"min.insync.replicas": "1", "segment.bytes": "1048576"})
    admin = AdminClient({"bootstrap.servers": bs})
    md = admin.list_topics(timeout=10)
    assert md.controller_id == 0 and list(md.brokers) == [0]
    cluster = admin.describe_cluster(request_timeout=10).result(11)
    assert cluster.controller.id == 0 and [n.port for n in cluster.nodes] == [reference_broker.port]
    part = md.topics["cfg"].partitions[0]
    assert (part.leader, part.replicas, part.isrs) == (0, [0], [0])

    p = Producer({"bootstrap.servers": bs})
    base = int(time.time() * 1000)
    for i in range(10):
        p.produce("cfg", value=str(i), partition=0, timestamp=base + i * 1000)
    p.flush(10)
    c = Consumer({"bootstrap.servers": bs, "group.id": "lo"})
    assert c.get_watermark_offsets(TopicPartition("cfg", 0), timeout=10) == (0, 10)
    found = c.offsets_for_times([TopicPartition("cfg", 0, base + 4500)], timeout=10)
    assert found[0].offset == 5
    c.close()

    topic_res = ConfigResource(ConfigResource.Type.TOPIC, "cfg")
    broker_res = ConfigResource(ConfigResource.Type.BROKER, "0")
    out = admin.describe_configs([topic_res, broker_res])
    topic_cfg = out[topic_res].result(10)
    assert topic_cfg["segment.bytes"].value == "1048576"
    assert topic_cfg["cleanup.policy"].value == "delete"
    assert out[broker_res].result(10)["offsets.topic.num.partitions"].value == "5"


def test_create_and_delete_topics_errors(reference_broker: ReferenceBroker) -> None:
    """CreateTopics rejects duplicates and RF above the live brokers; DeleteTopics removes a topic."""
    bs = reference_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    create_topic(bs, "gone", 2)
    with pytest.raises(KafkaException, match="already exists"):
        admin.create_topics([NewTopic("gone", 1, 1)])["gone"].result(10)
    with pytest.raises(KafkaException, match=r"[Rr]eplication factor"):
        admin.create_topics([NewTopic("rf3", 1, 3)])["rf3"].result(10)
    admin.delete_topics(["gone"])["gone"].result(10)
    assert "gone" not in admin.list_topics(timeout=10).topics


def test_consumers_do_not_auto_create_topics_producers_do(reference_broker: ReferenceBroker) -> None:
    """Metadata's allow_auto_topic_creation is honoured: a consumer's lookup does not create, a producer's does."""
    bs = reference_broker.bootstrap_servers
    c = Consumer({"bootstrap.servers": bs, "group.id": "x", "allow.auto.create.topics": False})
    c.list_topics("not-by-consumer", timeout=5)
    c.close()
    admin = AdminClient({"bootstrap.servers": bs})
    assert "not-by-consumer" not in admin.list_topics(timeout=10).topics
    p = Producer({"bootstrap.servers": bs})
    p.produce("by-producer", value=b"v")
    assert p.flush(15) == 0
    assert "by-producer" in admin.list_topics(timeout=10).topics


def test_a_transactional_producer_fails_at_once_naming_apache_kafka(reference_broker: ReferenceBroker) -> None:
    """The reference broker has no transactions: FindCoordinator for a transactional id is refused with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED (as Kafka refuses an unauthorized one), which librdkafka treats as
    fatal, instead of COORDINATOR_NOT_AVAILABLE, which it retried until its own timeout."""
    producer = Producer({"bootstrap.servers": reference_broker.bootstrap_servers, "transactional.id": "tx-1"})
    started = time.monotonic()
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(60)
    error = info.value.args[0]
    assert error.fatal() and "does not implement transactions" in error.str() and "Apache Kafka" in error.str()
    assert time.monotonic() - started < 30  # not the client's own 60 s timeout
