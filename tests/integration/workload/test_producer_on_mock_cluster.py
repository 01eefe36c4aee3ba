"""ProducerWorkload against librdkafka's mock cluster.

Real part: the confluent-kafka/librdkafka producer (and the verifying consumer) over loopback TCP.
Stand-in: the brokers are librdkafka's in-process mock cluster, not Kafka: fast, and able to inject errors Kafka
gives rarely; the same checks run against Apache Kafka in test_workload_on_apache_kafka.py.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from harness.workload import ProducerWorkload, WorkloadConfigError
from harness.workload.base import Workload
from tests.fixtures.librdkafka_mock import MockCluster
from tests.integration.workload.support import Events, ThreadCheck, read_back, wait_until

pytestmark = pytest.mark.integration


def test_producer_acks_carry_the_offsets_the_records_were_written_at_on_mock_cluster(
    librdkafka_mock_cluster: MockCluster,
) -> None:
    """Every send gets exactly one ack; each ack's (partition, offset) holds that value on the (mock) broker."""
    mock = librdkafka_mock_cluster
    mock.create_topic("orders", 3, 3)
    events = Events()
    threads = ThreadCheck()
    with ProducerWorkload(
        mock.bootstrap_servers, events, producer_id="p1", topic="orders", rate=300, keys=7, value_base=10**9
    ) as producer:
        assert isinstance(producer, Workload)
        producer.start()
        wait_until(lambda: producer.acked >= 150, 10.0, "150 acks", lambda: producer.acked)
        producer.stop()
        producer.drain(10.0)
        assert producer.in_flight == 0
    threads.assert_back()

    sends = events.of("send")
    acks = events.of("ack")
    assert len(sends) == len(acks) == producer.sent and not events.of("send.error")
    values = [e["value"] for e in sends]
    assert values == list(range(10**9, 10**9 + len(sends)))  # unique, disjoint range, in order
    assert {e["key"] for e in sends} <= {f"k{i}" for i in range(7)}
    assert all(e["src"] == "producer:p1" and e["acks"] == "all" for e in sends)
    by_partition: dict[int, list[int]] = defaultdict(list)
    for ack in acks:
        assert ack["latency_ms"] is not None and ack["latency_ms"] >= 0
        by_partition[ack["partition"]].append(ack["offset"])
    for offsets in by_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))  # dense, no offset acked twice
    stored = read_back(mock.bootstrap_servers, "orders", 3, len(acks))
    assert {(a["partition"], a["offset"]): a["value"] for a in acks} == stored


def test_producer_records_errors_while_the_leader_broker_is_down_on_mock_cluster(
    librdkafka_mock_cluster: MockCluster,
) -> None:
    """With the only leader down, sends time out as send.error (definite=false); acks resume after it is up."""
    mock = librdkafka_mock_cluster
    mock.create_topic("t", 1, 3)
    mock.set_leader("t", 0, 1)
    events = Events()
    with ProducerWorkload(
        mock.bootstrap_servers,
        events,
        producer_id="p2",
        topic="t",
        rate=50,
        extra_config={"message.timeout.ms": "1500"},
    ) as producer:
        producer.start()
        wait_until(lambda: producer.acked >= 5, 10.0, "acks before the fault", lambda: producer.acked)
        mock.broker_down(1)
        wait_until(lambda: producer.errors >= 5, 15.0, "send errors while the leader is down", lambda: producer.errors)
        mock.broker_up(1)
        acked_before = producer.acked
        wait_until(lambda: producer.acked >= acked_before + 5, 15.0, "acks after recovery", lambda: producer.acked)
        producer.stop()
        producer.drain(10.0)

    errors = events.of("send.error")
    assert errors and {e["error"] for e in errors} == {"_MSG_TIMED_OUT"}
    assert all(e["definite"] is False for e in errors)  # possibly written: never claimed as definite
    resolved = [e["value"] for e in events.all if e["type"] in ("ack", "send.error")]
    assert sorted(resolved) == [e["value"] for e in events.of("send")]  # each send resolved exactly once


def test_send_rejected_before_enqueueing_is_a_definite_error_on_mock_cluster(
    librdkafka_mock_cluster: MockCluster,
) -> None:
    """A full local queue (BufferError: nothing enqueued) is recorded as send.error with definite=true."""
    mock = librdkafka_mock_cluster
    mock.create_topic("q", 1, 1)
    mock.set_leader("q", 0, 1)
    mock.broker_down(1)
    events = Events()
    producer = ProducerWorkload(
        mock.bootstrap_servers,
        events,
        producer_id="p3",
        topic="q",
        rate=200,
        idempotence=False,
        acks="1",
        extra_config={"queue.buffering.max.messages": "3", "message.timeout.ms": "60000"},
    )
    with producer:
        producer.start()
        wait_until(lambda: events.of("send.error", definite=True), 10.0, "a definite send error")
        producer.stop()
    definite = events.of("send.error", definite=True)
    assert {e["error"] for e in definite} == {"_QUEUE_FULL"}
    # close() purged the rest: those were enqueued, so they are reported as not definite.
    assert {e["error"] for e in events.of("send.error", definite=False)} <= {"_PURGE_QUEUE", "_PURGE_INFLIGHT"}


def test_producer_rejects_idempotence_without_acks_all() -> None:
    """Config errors name the workload, field and bad value before any client is created."""
    with pytest.raises(WorkloadConfigError, match=r"ProducerWorkload\('p'\): acks='1'"):
        ProducerWorkload("127.0.0.1:1", Events(), producer_id="p", topic="t", rate=1, acks="1")
