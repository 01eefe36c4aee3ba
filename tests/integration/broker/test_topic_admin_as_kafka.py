"""Topic administration on Apache Kafka 3.9 and on the reference broker alike (one broker and a real
ZooKeeper each, librdkafka clients): CreateTopics refuses an unknown config name or a bad value with
INVALID_CONFIG and Kafka's message; a compacted topic refuses a record without a key with INVALID_RECORD,
and takes keyed records and tombstones; CreatePartitions refuses what Kafka refuses, with Kafka's codes and
messages, and adds partitions that get a leader (given assignments or Kafka's round robin); producer ids come
from a block claimed in ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from harness.cluster.base import ClusterSpec
from harness.cluster.process import ProcessCluster
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.fixtures.process_cluster import FLAVOURS, flavour_backend

pytestmark = [pytest.mark.integration]

BAD = {
    "t-unknown": ({"dummy.doesntexist": "1"}, "Unknown topic config name: dummy.doesntexist"),
    "t-badlong": ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type "
                                           "LONG"),
    "t-badpolicy": ({"cleanup.policy": "bogus"}, "Invalid value bogus for configuration cleanup.policy: String must "
                                                 "be one of: compact, delete"),
    "t-minisr": ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must "
                                               "be at least 1"),
    "t-ratio": ({"min.cleanable.dirty.ratio": "2"}, "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: "
                                                    "Value must be no more than 1"),
}
COMPACTED = "t-compacted"


@pytest.fixture(scope="module", params=FLAVOURS)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120)
    with flavour_backend(request.param).up(spec, tmp_path_factory.mktemp(request.param)) as c:
        yield c


def _config(cluster: ProcessCluster) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER}


def test_bad_topic_configs_are_refused_with_invalid_config_and_kafkas_message(cluster: ProcessCluster) -> None:
    admin = AdminClient(cast(dict[str, Any], _config(cluster)))
    futures = admin.create_topics([NewTopic(t, 1, 1, config=cfg) for t, (cfg, _m) in BAD.items()],
                                  operation_timeout=20)
    for topic, future in futures.items():
        with pytest.raises(KafkaException) as info:
            future.result(60)
        error = info.value.args[0]
        assert (error.code(), error.str()) == (KafkaError.INVALID_CONFIG, BAD[topic][1]), topic
    assert not set(BAD) & set(admin.list_topics(timeout=10).topics)


def test_a_compacted_topic_refuses_a_record_without_a_key_and_takes_keyed_ones_and_tombstones(
    cluster: ProcessCluster,
) -> None:
    admin = AdminClient(cast(dict[str, Any], _config(cluster)))
    admin.create_topics([NewTopic(COMPACTED, 1, 1, config={"cleanup.policy": "compact"})],
                        operation_timeout=20)[COMPACTED].result(60)
    producer = Producer(cast(dict[str, Any], {**_config(cluster), "message.send.max.retries": 2,
                                              "topic.metadata.refresh.interval.ms": 500}))
    outcomes: dict[str, Any] = {}
    for name, key, value in (("keyed", b"k", b"v"), ("keyless", None, b"v"), ("tombstone", b"k", None),
                             ("keyed again", b"k2", b"v")):
        producer.produce(COMPACTED, key=key, value=value,
                         on_delivery=lambda err, _msg, name=name: outcomes.__setitem__(name, err))
        assert producer.flush(60) == 0, name
    assert {n: (e.code() if e else None) for n, e in outcomes.items()} == {
        "keyed": None, "keyless": KafkaError.INVALID_RECORD, "tombstone": None, "keyed again": None}


GROWN = "t-grown"
REFUSED_GROWTH = {
    "unknown topic": (NewPartitions("t-none", 3), KafkaError.UNKNOWN_TOPIC_OR_PART,
                      "The topic 't-none' does not exist."),
    "fewer": (NewPartitions(GROWN, 1), KafkaError.INVALID_PARTITIONS,
              "Topic currently has 2 partitions, which is higher than the requested 1."),
    "as many": (NewPartitions(GROWN, 2), KafkaError.INVALID_PARTITIONS, "Topic already has 2 partitions."),
    "too few assignments": (NewPartitions(GROWN, 4, [[1]]), KafkaError.INVALID_REPLICA_ASSIGNMENT,
                            "Increasing the number of partitions by 2 but 1 assignments provided."),
    "unknown broker": (NewPartitions(GROWN, 3, [[9]]), KafkaError.INVALID_REPLICA_ASSIGNMENT,
                       "Unknown broker(s) in replica assignment: 9."),
}


def _grow(admin: AdminClient, partitions: NewPartitions, **kwargs: Any) -> None:
    (future,) = admin.create_partitions([partitions], operation_timeout=20, **kwargs).values()
    future.result(60)


def test_create_partitions_refuses_what_kafka_refuses_and_adds_partitions_that_get_a_leader(
    cluster: ProcessCluster,
) -> None:
    admin = AdminClient(cast(dict[str, Any], _config(cluster)))
    admin.create_topics([NewTopic(GROWN, 2, 1)], operation_timeout=20)[GROWN].result(60)
    for case, (partitions, code, message) in REFUSED_GROWTH.items():
        with pytest.raises(KafkaException) as info:
            _grow(admin, partitions)
        assert (info.value.args[0].code(), info.value.args[0].str()) == (code, message), case
    _grow(admin, NewPartitions(GROWN, 3), validate_only=True)
    assert len(admin.list_topics(GROWN, timeout=10).topics[GROWN].partitions) == 2
    _grow(admin, NewPartitions(GROWN, 4))
    _grow(admin, NewPartitions(GROWN, 5, [[1]]))
    parts = admin.list_topics(GROWN, timeout=10).topics[GROWN].partitions
    assert {p: (m.leader, m.replicas) for p, m in parts.items()} == {p: (1, [1]) for p in range(5)}


def _producer_id(cluster: ProcessCluster) -> int:
    """The producer id InitProducerId gave a new idempotent producer (kafka-python's, which keeps it; librdkafka
    does not expose it)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers.split(","), enable_idempotence=True,
                             acks="all")
    try:
        producer.send("t-pid", b"x").get(30)
        return int(producer._transaction_manager.producer_id_and_epoch.producer_id)
    finally:
        producer.close()


def test_producer_ids_come_from_a_block_claimed_in_zookeeper_as_kafka_claims_it(cluster: ProcessCluster) -> None:
    """Two producer sessions get distinct ids from the block the broker claimed in `/latest_producer_id_block`,
    whose JSON is Kafka's (ZkProducerIdManager): the reference broker once handed out per-broker ids, so two
    sessions through two brokers shared producer id 0 and the second was fenced (OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    from kazoo.client import KazooClient

    from harness.zk.paths import LATEST_PRODUCER_ID_BLOCK_PATH
    from harness.zk.producer_id_block import ProducerIdBlock

    admin = AdminClient(cast(dict[str, Any], _config(cluster)))
    admin.create_topics([NewTopic("t-pid", 1, 1)], operation_timeout=20)["t-pid"].result(60)
    first, second = _producer_id(cluster), _producer_id(cluster)
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
    zk.start(timeout=10.0)
    try:
        data, _stat = zk.get(LATEST_PRODUCER_ID_BLOCK_PATH)
    finally:
        zk.stop()
        zk.close()
    block = ProducerIdBlock.decode(data)
    assert data == block.encode()  # Kafka's exact JSON
    assert (block.broker, block.start, block.end) == (1, 0, 999)
    assert (first, second) == (0, 1)
