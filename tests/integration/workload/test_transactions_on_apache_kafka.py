"""The transactional producer workload on Apache Kafka 3.9 (1 broker + 1 real ZooKeeper, process backend) and
librdkafka consumers of both isolation levels: what the workload records as committed is exactly what a
read_committed consumer reads; read_uncommitted also reads the aborted records (they are in the log); every
transaction begun, including one an abrupt restart left open, ends with a definite outcome."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec
from harness.cluster.process import ProcessCluster
from harness.workload.common import LIBRDKAFKA_LOGGER, decode_value
from harness.workload.txn_producer import TransactionalProducerWorkload
from tests.fixtures.process_cluster import APACHE_KAFKA, flavour_backend
from tests.integration.workload.support import Events, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "orders"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120, broker_config={
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1", "transaction.state.log.num.partitions": "3"})
    with flavour_backend(APACHE_KAFKA).up(spec, tmp_path_factory.mktemp("txn")) as c:
        admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": c.bootstrap_servers,
                                                  "logger": LIBRDKAFKA_LOGGER}))
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result(60)
        yield c


def _read_all(cluster: ProcessCluster, isolation: str, timeout_s: float = 60.0) -> list[int]:
    """Every value of the topic at `isolation`, read by assignment until librdkafka's position reaches
    each partition's high watermark (the position passes markers and, read_committed, aborted records)."""
    consumer = confluent_kafka.Consumer(cast(dict[str, Any], {
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": f"check-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False, "logger": LIBRDKAFKA_LOGGER}))
    tps = [confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING) for p in range(3)]
    consumer.assign(tps)
    values: list[int] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                values.append(decode_value(msg.value()))
                continue
            ends = [consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in tps]
            if [tp.offset for tp in consumer.position(tps)] == ends:
                return values
        raise AssertionError(f"{isolation}: not at the end of {TOPIC} within {timeout_s}s")
    finally:
        consumer.close()


def test_committed_records_are_what_read_committed_reads_and_aborted_ones_only_read_uncommitted_sees(
    cluster: ProcessCluster, tmp_path: Path,
) -> None:
    events = Events()
    producer = TransactionalProducerWorkload(cluster.bootstrap_servers, events, producer_id="orders-api", topic=TOPIC,
                                             rate=300, transactional_id="orders-tx", records=6, abort_rate=0.4,
                                             timeout_s=20, seed=7)
    with producer:
        producer.start()
        wait_until(lambda: len(events.of("txn.commit")) >= 5 and len(events.of("txn.abort")) >= 3, 90,
                   "5 commits and 3 aborts", lambda: producer.outcomes)
        producer.restart(abrupt=True)
        wait_until(lambda: len(events.of("txn.begin")) >= len(events.of("txn.commit", outcome="committed")) + 4, 60,
                   "transactions of the second session", lambda: producer.outcomes)
        producer.drain(30)
    begun = {e["txn"] for e in events.of("txn.begin")}
    ends = {e["txn"]: e for e in events.of("txn.commit") + events.of("txn.abort")}
    assert set(ends) == begun, f"transactions without an end: {sorted(begun - set(ends))}"
    assert {e["outcome"] for e in ends.values()} <= {"committed", "aborted"}, ends
    txn_of = {e["value"]: e["txn"] for e in events.of("send")}
    assert len(txn_of) == len(events.of("send")) and None not in txn_of.values()
    committed = {v for v, t in txn_of.items() if ends[t]["outcome"] == "committed"}
    aborted_acked = {e["value"] for e in events.of("ack") if ends[e["txn"]]["outcome"] == "aborted"}
    assert aborted_acked, "no aborted record reached the log (each abort on purpose delivers its records first)"
    read_committed = _read_all(cluster, "read_committed")
    assert sorted(read_committed) == sorted(committed)
    assert set(_read_all(cluster, "read_uncommitted")) >= committed | aborted_acked
    partitions = {e["partition"] for e in events.of("ack") if e["txn"] == next(iter(ends))}
    assert len(partitions) == 3, "a transaction's 6 records go to the 3 partitions in turn"
