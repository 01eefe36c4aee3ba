"""ProducerWorkload and ConsumerGroupWorkload against Apache Kafka 3.9: one broker and a real ZooKeeper through the
process backend, real confluent-kafka/librdkafka clients, the classic group protocol. Each test writes its own
topic of 4 partitions; the test that kills the broker runs last."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator

import pytest

from harness.cluster.base import NodeId
from harness.cluster.process import ProcessCluster
from harness.workload import ConsumerGroupWorkload, ProducerWorkload
from tests.integration.workload.support import (
    CLASSIC,
    Events,
    ThreadCheck,
    create_topic,
    one_broker,
    read_back,
    read_to_the_end_in_batches,
    stored_count,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One Apache Kafka broker: the group coordinator's topic on it alone, and 1 s sessions allowed (CLASSIC)."""
    with one_broker(tmp_path_factory.mktemp("workload-kafka")) as cluster:
        yield cluster


def owned_by(group: ConsumerGroupWorkload, members: int) -> bool:
    """Exactly `members` live members, each owning something, together owning the 4 partitions once."""
    owned = group.assignments()
    parts = [p for a in owned.values() for p in a]
    return len(owned) == members and all(owned.values()) and len(parts) == len(set(parts)) == 4


def test_producer_acks_carry_the_offsets_the_records_were_written_at_on_apache_kafka(kafka: ProcessCluster) -> None:
    """Every send is acked once at a dense per-partition offset that holds exactly that value."""
    create_topic(kafka.bootstrap_servers, "acks", 4)
    events = Events()
    threads = ThreadCheck()
    with ProducerWorkload(
        kafka.bootstrap_servers, events, producer_id="p1", topic="acks", rate=300, keys=9, value_base=2 * 10**9
    ) as producer:
        producer.start()
        wait_until(lambda: producer.acked >= 150, 30.0, "150 acks", lambda: producer.acked)
        producer.stop()
        producer.drain(10.0)
    threads.assert_back()
    acks = events.of("ack")
    assert len(acks) == len(events.of("send")) and not events.of("send.error")
    by_partition: dict[int, list[int]] = defaultdict(list)
    for ack in acks:
        by_partition[ack["partition"]].append(ack["offset"])
    assert all(sorted(o) == list(range(len(o))) for o in by_partition.values())
    stored = read_back(kafka.bootstrap_servers, "acks", 4, len(acks))
    assert {(a["partition"], a["offset"]): a["value"] for a in acks} == stored


def test_producer_restarts_cleanly_and_abruptly_and_every_acked_value_is_stored_once_on_apache_kafka(
    kafka: ProcessCluster,
) -> None:
    """Two new client sessions (clean: what the old one held is delivered; abrupt: purged, definite=false):
    values stay unique and in send order across sessions, every send is resolved, acks resume after each
    restart, and the topic holds every acked value once at its acked offset."""
    create_topic(kafka.bootstrap_servers, "restarts", 4)
    events = Events()
    threads = ThreadCheck()
    with ProducerWorkload(kafka.bootstrap_servers, events, producer_id="p3", topic="restarts", rate=300,
                          keys=9) as producer:
        producer.start()
        for abrupt in (False, True):
            acked = producer.acked
            wait_until(lambda n=acked: producer.acked >= n + 50, 30.0, "acks before restart", lambda: producer.acked)
            said = producer.restart(abrupt=abrupt, timeout_s=10.0)
            assert said.startswith(f"session {2 + abrupt}: ")
        acked = producer.acked
        wait_until(lambda: producer.acked >= acked + 50, 30.0, "acks after the restarts", lambda: producer.acked)
        producer.stop()
        producer.drain(10.0)
    threads.assert_back()
    sent = [e["value"] for e in events.of("send")]
    assert sent == list(range(len(sent)))
    errors = events.of("send.error")
    assert all(e["definite"] is False and e["error"].startswith("_PURGE") for e in errors), errors
    assert sorted(e["value"] for e in events.all if e["type"] in ("ack", "send.error")) == sent
    acks = events.of("ack")
    stored = read_back(kafka.bootstrap_servers, "restarts", 4, stored_count(kafka.bootstrap_servers, "restarts", 4))
    assert {(a["partition"], a["offset"]): a["value"] for a in acks}.items() <= stored.items()
    assert len(set(stored.values())) == len(stored)  # no value written twice (purged ones may be stored once)


def test_group_records_eager_rebalances_with_generations_and_polls_on_apache_kafka(kafka: ProcessCluster) -> None:
    """Range group of 3: assignments cover the topic in one generation; a graceful leave revokes and the
    survivors share everything in a newer generation; a killed member's partitions move only after its
    session timeout; every acked record is polled at its offset."""
    create_topic(kafka.bootstrap_servers, "rebalances", 4)
    events = Events()
    threads = ThreadCheck()
    with ConsumerGroupWorkload(
        kafka.bootstrap_servers, events, group="g", topics=["rebalances"], members=3, strategy="range",
        extra_config=CLASSIC,
    ) as group, ProducerWorkload(kafka.bootstrap_servers, events, producer_id="feed", topic="rebalances",
                                 rate=100) as feed:
        group.start()
        feed.start()
        wait_until(lambda: owned_by(group, 3), 30.0, "3 members owning all 4 partitions", group.assignments)
        group.stop_member(2)
        wait_until(lambda: owned_by(group, 2), 30.0, "2 members owning all 4 partitions", group.assignments)
        killed_at = time.time() * 1000
        group.kill_member(1)
        wait_until(lambda: len(group.assignments().get(0, ())) == 4, 30.0, "survivor owns all", group.assignments)
        feed.stop()
        feed.drain(10.0)
        group.drain(30.0)
        assert group.last_drain_complete, str(group.drain_report())
    threads.assert_back()

    gens = [e["generation"] for e in events.of("assign", consumer="g/0")]
    assert all(isinstance(g, int) for g in gens) and gens == sorted(gens) and len(set(gens)) == len(gens)
    leaver = events.of("revoke", consumer="g/2")
    assert leaver and leaver[-1]["assignment"] == []
    assert not [e for e in events.of("revoke", consumer="g/1") if e["wall"] >= killed_at]
    moved = [e for e in events.of("assign", consumer="g/0") if e["wall"] > killed_at]
    assert moved and moved[0]["wall"] - killed_at >= 1000  # after the 2 s session timeout, not at once
    acked = {(e["partition"], e["offset"]): e["value"] for e in events.of("ack")}
    polled = {(e["partition"], e["offset"]): e["value"] for e in events.of("poll")}
    assert acked.items() <= polled.items()


def test_a_batch_consumer_whose_fetches_wait_10_s_still_tells_that_it_read_to_the_end_on_apache_kafka(
    kafka: ProcessCluster,
) -> None:
    """A member that fetches in batches (fetch.wait.max.ms 10 s, a fetch.min.bytes never reached: weak-isr.yaml's
    consumer) keeps a Fetch waiting on its broker connection nearly all the time, and the broker answers one request
    per connection at a time: the drain check asks the topic's partitions and the leaders' ends on connections of
    its own (`workload.ends.SideChannel`), so the drain ends complete and the group reads to the end at once
    (`read_to_the_end`). Asked on the member's own client, on three brokers under weak-isr.yaml (Apache Kafka 3.9.2),
    every ask timed out behind the Fetches in each of 9 drains of 10 to 35 s; one broker here answers it sooner or
    later either way, so this shows the side channel working, not the old way failing."""
    create_topic(kafka.bootstrap_servers, "batches", 4)
    events = Events()
    batch = {**CLASSIC, "fetch.wait.max.ms": 10000, "fetch.min.bytes": 100000000}
    read_to_the_end_in_batches(events, ConsumerGroupWorkload(
        kafka.bootstrap_servers, events, group="batch", topics=["batches"], members=1, extra_config=batch),
        ProducerWorkload(kafka.bootstrap_servers, events, producer_id="feed-b", topic="batches", rate=100))


def test_producer_records_errors_while_the_only_broker_is_down_on_apache_kafka(kafka: ProcessCluster) -> None:
    """While the only broker is SIGKILLed sends fail (definite=false); after its restart acks resume."""
    create_topic(kafka.bootstrap_servers, "outage", 4)
    events = Events()
    broker = NodeId.broker(1)
    with ProducerWorkload(
        kafka.bootstrap_servers, events, producer_id="p2", topic="outage", rate=50,
        extra_config={"message.timeout.ms": "1500"},
    ) as producer:
        producer.start()
        wait_until(lambda: producer.acked >= 5, 30.0, "acks before the kill", lambda: producer.acked)
        kafka.kill(broker)
        wait_until(lambda: producer.errors >= 5, 30.0, "errors while down", lambda: producer.errors)
        kafka.start(broker)  # waits out the stale registration, then for a fresh one and Metadata
        acked = producer.acked
        wait_until(lambda: producer.acked >= acked + 5, 60.0, "acks after restart", lambda: producer.acked)
        producer.stop()
        producer.drain(10.0)
    errors = events.of("send.error")
    assert errors and all(e["definite"] is False for e in errors)
    resolved = sorted(e["value"] for e in events.all if e["type"] in ("ack", "send.error"))
    assert resolved == [e["value"] for e in events.of("send")]
