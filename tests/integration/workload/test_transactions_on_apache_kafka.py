"""The transactional producer workload on Apache Kafka 3.9 (1 broker + 1 real ZooKeeper, process backend) and
librdkafka consumers of both isolation levels: what the workload records as committed is exactly what a
read_committed consumer reads; read_uncommitted also reads the aborted records (they are in the log); every
transaction begun, including one an abrupt restart left open, ends with a definite outcome; a producer paused
past its transaction timeout is fenced and goes on in a new session; and the read-process-write pipeline writes
each input record exactly once."""

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
from harness.workload.pipeline import PipelineWorkload
from harness.workload.txn_producer import TransactionalProducerWorkload
from tests.fixtures.process_cluster import apache_kafka_backend
from tests.integration.workload.support import Events, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "orders"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120, broker_config={
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1", "transaction.state.log.num.partitions": "3",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"})
    with apache_kafka_backend().up(spec, tmp_path_factory.mktemp("txn")) as c:
        admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": c.bootstrap_servers,
                                                  "logger": LIBRDKAFKA_LOGGER}))
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result(60)
        yield c


def _read_all(cluster: ProcessCluster, isolation: str, timeout_s: float = 60.0, topic: str = TOPIC) -> list[int]:
    """Every value of the topic at `isolation`, read by assignment until librdkafka's position reaches
    each partition's high watermark (the position passes markers and, read_committed, aborted records)."""
    consumer = confluent_kafka.Consumer(cast(dict[str, Any], {
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": f"check-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False, "logger": LIBRDKAFKA_LOGGER}))
    tps = [confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(3)]
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
        raise AssertionError(f"{isolation}: not at the end of {topic} within {timeout_s}s")
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


def test_a_pipeline_writes_each_input_record_once_and_commits_the_offsets_it_read_across_a_restart(
    cluster: ProcessCluster,
) -> None:
    """300 input records, read-process-write in transactions of at most 7, the pipeline's client replaced
    midway: every input value has exactly one committed output, each transaction commits the offset after the
    last record it read of each partition, and the last committed offsets are the ends."""
    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers,
                                              "logger": LIBRDKAFKA_LOGGER}))
    for name in ("pipe-in", "pipe-out"):
        admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])[name].result(60)
    source = confluent_kafka.Producer(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers,
                                                            "logger": LIBRDKAFKA_LOGGER}))
    for v in range(300):
        source.produce("pipe-in", value=str(v).encode(), partition=v % 3)
    assert source.flush(30) == 0
    events = Events()
    pipeline = PipelineWorkload(cluster.bootstrap_servers, events, pipeline_id="enrich", group="enrich",
                                input_topic="pipe-in", output_topic="pipe-out", transactional_id="enrich-tx",
                                records=7, timeout_s=20, value_base=10_000)
    with pipeline:
        pipeline.start()
        wait_until(lambda: len(events.of("pipe.read")) >= 100, 60, "100 records read")
        pipeline.restart()
        wait_until(lambda: pipeline.caught_up.is_set() and len({e["value"] for e in events.of("pipe.read")}) == 300,
                   90, "every input record read", lambda: len(events.of("pipe.read")))
        pipeline.drain(20)
    outcome = {e["txn"]: e for e in events.of("txn.commit")}
    assert {e["outcome"] for e in outcome.values()} == {"committed"}
    sources = [e["input_value"] for e in events.of("ack") if outcome[e["txn"]]["outcome"] == "committed"]
    assert sorted(sources) == list(range(300))
    committed: dict[int, int] = {}  # a transaction commits the positions it knows (after a restart, only
    for e in sorted(outcome.values(), key=lambda e: e["txn"]):  # those of partitions it has fetched)
        for topic, partition, offset in e["offsets"]:
            assert topic == "pipe-in" and offset >= committed.get(partition, 0)
            committed[partition] = offset
        read = {r["partition"]: r["offset"] for r in events.of("pipe.read", txn=e["txn"])}
        assert all(committed[p] == o + 1 for p, o in read.items()), (e, read)
    assert committed == {0: 100, 1: 100, 2: 100}
    assert sorted(v - 10_000 for v in _read_all(cluster, "read_committed", topic="pipe-out")) == list(range(300))


def test_a_zombie_client_is_fenced_and_none_of_its_writes_is_read_committed(cluster: ProcessCluster) -> None:
    """restart(zombie=True): the old client, its transaction open, writes once the new session has fenced it;
    its commit is refused as fenced, its records never reach a read_committed reader, and its errors are not
    the producer's (no client.error)."""
    events = Events()
    producer = TransactionalProducerWorkload(cluster.bootstrap_servers, events, producer_id="zombie-api",
                                             topic=TOPIC, rate=300, transactional_id="zombie-tx", records=6,
                                             timeout_s=20, seed=3, value_base=500_000)
    with producer:
        producer.start()
        wait_until(lambda: len(events.of("txn.commit")) >= 3, 60, "3 commits", lambda: producer.outcomes)
        detail = producer.restart(zombie=True, timeout_s=30)
        wait_until(lambda: len(events.of("txn.commit")) >= 6, 60, "3 commits of the new session")
        producer.drain(30)
    (zombie,) = events.of("txn.zombie")
    assert zombie["outcome"] == "fenced" and "its commit was fenced" in detail, (zombie, detail)
    zombie_values = {e["value"] for e in events.of("send") if e.get("zombie")}
    assert len(zombie_values) == 6 and all(events.of("send", value=v)[0]["txn"] == zombie["txn"]
                                           for v in zombie_values)
    (end,) = [e for e in events.of("txn.commit") + events.of("txn.abort") if e["txn"] == zombie["txn"]]
    assert (end["outcome"], end["error"]) == ("aborted", "_ABANDONED")
    assert not events.of("client.error")
    read = set(_read_all(cluster, "read_committed"))
    assert not read & zombie_values
    assert {e["value"] for e in events.of("ack") if e["txn"] > zombie["txn"]} <= read


def _open_transactions(cluster: ProcessCluster) -> bool:
    """Whether a transaction holds the topic's last stable offset below its high watermark on some partition
    (read_committed watermark queries answer the last stable offset)."""
    clients = [confluent_kafka.Consumer(cast(dict[str, Any], {
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "lso", "isolation.level": level,
        "logger": LIBRDKAFKA_LOGGER})) for level in ("read_committed", "read_uncommitted")]
    try:
        ends = [[c.get_watermark_offsets(confluent_kafka.TopicPartition(TOPIC, p), timeout=10)[1] for p in range(3)]
                for c in clients]
    finally:
        for c in clients:
            c.close()
    return ends[0] != ends[1]


def test_a_producer_paused_past_its_transaction_timeout_is_fenced_and_goes_on_in_a_new_session(
    cluster: ProcessCluster,
) -> None:
    """pause() holds a transaction open; once the coordinator has aborted it (the topic's last stable offset is its
    high watermark again) resume(): the producer is fenced, which it records as txn.fenced (not a fatal
    client.error), that transaction ends aborted (definite), a new session commits, and no record of the paused
    transaction is read committed."""
    events = Events()
    producer = TransactionalProducerWorkload(cluster.bootstrap_servers, events, producer_id="paused-api",
                                             topic=TOPIC, rate=200, transactional_id="paused-tx", records=5,
                                             timeout_s=2, seed=5, value_base=700_000)
    with producer:
        producer.start()
        wait_until(lambda: len(events.of("txn.commit")) >= 3, 60, "3 commits", lambda: producer.outcomes)
        producer.pause()
        wait_until(lambda: producer.holding, 30, "the sender thread held by the pause")
        # The paused transaction is in the log once its last record is (read_uncommitted reads it, open or aborted):
        # before that the topic can show no open transaction while the previous one's markers are written and this
        # one's record is still on its way (once the suite's run resumed in that gap and was never fenced).
        held = events.of("send")[-1]["value"]
        wait_until(lambda: held in _read_all(cluster, "read_uncommitted"), 30, f"the paused record {held} in the log")
        wait_until(lambda: not _open_transactions(cluster), 60, "the coordinator's abort of the paused transaction")
        producer.resume()
        wait_until(lambda: producer.sessions == 2 and producer.outcomes["committed"] >= 6, 60,
                   "commits of a new session", lambda: (producer.sessions, producer.outcomes))
        producer.drain(30)
    (fenced,) = events.of("txn.fenced")
    assert fenced["error"] == "_FENCED" and fenced["open_ms"] >= fenced["timeout_ms"] == 2000, fenced
    (end,) = [e for e in events.of("txn.commit") + events.of("txn.abort") if e["txn"] == fenced["txn"]]
    assert (end["outcome"], end["definite"]) == ("aborted", True), end
    assert not events.of("client.error")
    paused = {e["value"] for e in events.of("send") if e["txn"] == fenced["txn"]}
    read = set(_read_all(cluster, "read_committed"))
    assert paused and not paused & read
    assert {e["value"] for e in events.of("ack") if e["txn"] > fenced["txn"]} <= read
