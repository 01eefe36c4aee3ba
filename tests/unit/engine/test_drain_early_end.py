"""The drain's early end (`engine.delivery.nothing_more_to_read`): acked values still unseen stop the wait only once
every producer delivered all it held and every reader has read to the partitions' ends; any workload that cannot
say keeps the wait. Stand-ins for the workloads (their own rules are the real classes', tested with Apache Kafka in
the e2e suite); the real classes are checked here to offer the two small protocols."""

from __future__ import annotations

from harness.engine.delivery import nothing_more_to_read
from harness.workload import ConsumerGroupWorkload, ProducerWorkload
from harness.workload.base import ReadsToTheEnd, Settles


class Producer:
    name = "producer:p"

    def __init__(self, settled: bool) -> None:
        self.settled = settled

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def drain(self, timeout_s: float) -> None: ...
    def close(self) -> None: ...


class Group:
    name = "group:g"

    def __init__(self, caught_up: bool) -> None:
        self.caught_up = caught_up
        self.asked = 0

    def read_to_the_end(self) -> bool:
        self.asked += 1
        return self.caught_up

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def drain(self, timeout_s: float) -> None: ...
    def close(self) -> None: ...


class Pipeline:  # reads, but cannot say whether it read to the end
    name = "pipeline:x"

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def drain(self, timeout_s: float) -> None: ...
    def close(self) -> None: ...


def test_unseen_values_end_the_drain_once_everything_was_delivered_and_every_group_read_to_the_end() -> None:
    assert nothing_more_to_read([Producer(True)], [Group(True), Group(True)])


def test_a_producer_with_writes_outstanding_keeps_the_drain_waiting_since_one_may_be_acknowledged_later() -> None:
    group = Group(True)
    assert not nothing_more_to_read([Producer(True), Producer(False)], [group])
    assert group.asked == 0  # nothing asked of the readers then


def test_a_group_behind_keeps_the_drain_waiting() -> None:
    assert not nothing_more_to_read([Producer(True)], [Group(True), Group(False)])


def test_a_reader_that_cannot_say_or_no_reader_at_all_keeps_the_drain_waiting() -> None:
    assert not nothing_more_to_read([Producer(True)], [Group(True), Pipeline()])
    assert not nothing_more_to_read([Producer(True)], [])
    assert not nothing_more_to_read([Pipeline()], [Group(True)])


def test_a_transactional_producer_never_settles_so_the_drain_waits_its_time() -> None:
    from harness.workload.txn_producer import TransactionalProducerWorkload

    txn = TransactionalProducerWorkload("b:1", _sink, producer_id="t0", topic="t", rate=10.0, transactional_id="x")
    assert isinstance(txn, Settles) and not txn.settled
    assert not nothing_more_to_read([txn], [Group(True)])


def _sink(event: object) -> None:
    raise AssertionError(f"no event expected: {event}")


def test_the_librdkafka_producer_settles_and_the_consumer_group_reads_to_the_end() -> None:
    producer = ProducerWorkload("b:1", _sink, producer_id="p0", topic="t", rate=10.0)
    group = ConsumerGroupWorkload("b:1", _sink, group="g", topics=["t"], members=1)
    assert isinstance(producer, Settles) and not producer.settled  # not drained yet
    assert isinstance(group, ReadsToTheEnd) and not group.read_to_the_end()  # no live member yet
