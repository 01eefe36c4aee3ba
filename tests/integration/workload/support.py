"""Helpers for the workload and AdminObserver tests: event capture, bounded waits, thread checks."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import psutil
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.errors import HarnessTimeout
from harness.history.events import HistoryEvent
from harness.history.jsonl import record_of
from harness.workload.base import Settles


class Events:
    """A thread-safe EventSink that keeps every event (a list append is atomic under the GIL)."""

    def __init__(self) -> None:
        self.all: list[dict[str, Any]] = []

    def __call__(self, event: HistoryEvent | dict[str, Any]) -> None:
        self.all.append(record_of(event))

    def of(self, type_: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in list(self.all) if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


def wait_until(cond: Callable[[], Any], timeout_s: float, what: str, last: Callable[[], Any] | None = None) -> Any:
    """Poll `cond` every 50 ms until truthy; HarnessTimeout naming `what` otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise HarnessTimeout(what, timeout_s, last() if last else value)
        time.sleep(0.05)


class ThreadCheck:
    """Python threads and OS threads of this process at creation; `assert_back()` compares."""

    def __init__(self) -> None:
        self.python = set(threading.enumerate())
        self.os_threads = psutil.Process().num_threads()

    def assert_back(self, timeout_s: float = 5.0) -> None:
        def settled() -> bool:
            extra = [t for t in threading.enumerate() if t not in self.python and t.is_alive()]
            return not extra and psutil.Process().num_threads() <= self.os_threads

        wait_until(
            settled,
            timeout_s,
            "no thread left behind",
            lambda: (
                [t.name for t in threading.enumerate() if t not in self.python],
                psutil.Process().num_threads(),
                self.os_threads,
            ),
        )


def read_back(bootstrap: str, topic: str, partitions: int, expected: int,
              isolation: str = "read_uncommitted") -> dict[tuple[int, int], int]:
    """(partition, offset) -> value, read from offset 0 of every partition with a real consumer."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False,
         "isolation.level": isolation}
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        found: dict[tuple[int, int], int] = {}
        deadline = time.monotonic() + 15.0
        while len(found) < expected:
            if time.monotonic() > deadline:
                raise HarnessTimeout(f"{expected} records read back", 15.0, len(found))
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                partition, offset, value = msg.partition(), msg.offset(), msg.value()
                assert partition is not None and offset is not None and isinstance(value, bytes)
                found[(partition, offset)] = int(value)
        return found
    finally:
        consumer.close()


def stored_count(bootstrap: str, topic: str, partitions: int) -> int:
    """How many records `topic` holds: the sum of its partitions' high watermarks."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "verify"})
    try:
        return sum(consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10.0)[1]
                   for p in range(partitions))
    finally:
        consumer.close()


# Classic-protocol consumer settings short enough for tests (brokers allow sessions >= 1 s).
CLASSIC = {"session.timeout.ms": "2000", "heartbeat.interval.ms": "300", "max.poll.interval.ms": "5000"}


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # CreateTopics goes to the controller; a client that saw metadata before the election waits
    # for a refresh that may not come in time, so first see a controller in a fresh Metadata.
    wait_until(lambda: admin.list_topics(timeout=2).controller_id >= 0, 15.0, "a controller in Metadata")
    futures = admin.create_topics([NewTopic(topic, partitions, replication_factor)], operation_timeout=10)
    futures[topic].result(timeout=15)
    wait_until(
        lambda: len(admin.list_topics(topic, timeout=2).topics[topic].partitions) == partitions
        and all(p.leader >= 0 for p in admin.list_topics(topic, timeout=2).topics[topic].partitions.values()),
        15.0,
        f"{topic} with {partitions} led partitions",
    )


@contextlib.contextmanager
def one_broker(workdir: Path, **extra: str) -> Iterator[ProcessCluster]:
    """One Apache Kafka broker and a real ZooKeeper: the group coordinator's topic on it alone, 1 s sessions allowed
    (CLASSIC), and `extra` broker settings."""
    from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka

    apache_kafka()
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120, broker=APACHE_KAFKA, broker_config={
        "zookeeper.session.timeout.ms": "6000", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000", **extra})
    with ProcessBackend(broker=APACHE_KAFKA).up(spec, workdir) as cluster:
        yield cluster


def kill_one_of_two_members(bootstrap: str, events: Events, topic: str, new_member: Callable[..., Any],
                            feed: Any) -> None:
    """A range group `g-<topic>` of 2 members (made by `new_member`) reads `topic` (4 partitions) while `feed` (a
    producer workload) writes to it; once they own 2 partitions each, member 1 is SIGKILLed; once member 0 owns
    all 4, the feed stops and drains and the group drains (asserted complete). Then it asserts what a killed
    member means whatever the client: member 0's generations only grow; member 1 revoked nothing after the kill;
    its partitions moved to member 0 after the (2 s) session timeout, not at once; member 0's commits carry its
    generations; every acked record was polled at its offset; no worker crashed."""
    from harness.workload.consumer import ConsumerGroupWorkload

    group = ConsumerGroupWorkload(bootstrap, events, group=f"g-{topic}", topics=[topic], members=2, strategy="range",
                                  commit="sync", extra_config=CLASSIC, new_member=new_member)
    with group, feed:
        group.start()
        feed.start()
        wait_until(lambda: sorted(len(a) for a in group.assignments().values()) == [2, 2], 60.0,
                   "2 members owning 2 partitions each", group.assignments)
        killed_at = time.time() * 1000
        group.kill_member(1)
        wait_until(lambda: len(group.assignments().get(0, ())) == 4, 60.0, "member 0 owns all", group.assignments)
        feed.stop()
        feed.drain(10.0)
        group.drain(30.0)
        assert group.last_drain_complete, str(group.drain_report())
    first, second = f"g-{topic}/0", f"g-{topic}/1"
    gens = [e["generation"] for e in events.of("assign", consumer=first)]
    assert all(isinstance(g, int) for g in gens) and gens == sorted(gens) and len(set(gens)) == len(gens) >= 2
    assert not [e for e in events.of("revoke", consumer=second) if e["wall"] >= killed_at]
    moved = [e for e in events.of("assign", consumer=first) if e["wall"] > killed_at]
    assert moved and moved[0]["wall"] - killed_at >= 1000  # after the 2 s session timeout, not at once
    commits = events.of("commit", consumer=first)
    assert commits and all(c["generation"] in gens and c["member"] for c in commits)
    polled = {(e["partition"], e["offset"]): e["value"] for e in events.of("poll")}
    unread = {(a["partition"], a["offset"]) for a in events.of("ack")} - set(polled)
    assert not unread, sorted(unread)[:5]
    assert {(e["partition"], e["offset"]): e["value"] for e in events.of("ack")}.items() <= polled.items()
    assert not events.of("client.crash")


def read_to_the_end_in_batches(events: Events, group: Any, feed: Any) -> None:
    """`group` (one member, reading a 4-partition topic in batches: a long fetch wait and a fetch.min.bytes never
    reached) and `feed` (a producer workload writing to it), neither started: once the member owns all 4 partitions
    and polled a first batch, the feed stops and drains, the group reads to the end (`read_to_the_end`) and its
    drain ends complete; then every acked record was polled at its offset."""
    with group, feed:
        group.start()
        feed.start()
        wait_until(lambda: len(group.assignments().get(0, ())) == 4, 60.0, "the member owning all 4 partitions",
                   group.assignments)
        wait_until(lambda: events.of("poll"), 60.0, "a first batch polled", lambda: len(events.of("ack")))
        feed.stop()
        feed.drain(10.0)
        assert not isinstance(feed, Settles) or feed.settled  # nothing the feed holds can be acknowledged later
        wait_until(group.read_to_the_end, 60.0, "the group read to the end", group.drain_report)
        group.drain(30.0)
        assert group.last_drain_complete, str(group.drain_report())
    acked = {(e["partition"], e["offset"]): e["value"] for e in events.of("ack")}
    polled = {(e["partition"], e["offset"]): e["value"] for e in events.of("poll")}
    assert acked.items() <= polled.items()
