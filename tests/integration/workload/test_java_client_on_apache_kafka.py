"""The Java client's workloads (`workload.client: java`) against Apache Kafka 3.9: one broker and a real ZooKeeper
through the process backend, the Java client (kafka-clients 3.9.2, the broker's release) in worker processes built
from `harness/workload/java/`. The same events and controls as the librdkafka workloads: acks
at the offsets the records were written at, a group's generations, a SIGKILLed member's partitions moving after its
session timeout, transactions aborted as the seed draws them, and a worker that dies recorded as `client.crash`."""

from __future__ import annotations

import os
import signal
from collections import defaultdict
from collections.abc import Iterator

import pytest

from harness.cluster.process import ProcessCluster
from harness.errors import TeardownError
from harness.install.java_client import JavaClient
from harness.workload.common import WorkloadError, txn_abort_drawn
from harness.workload.java_client import WorkerMember, WorkerProducerWorkload, WorkerTransactions, java_client
from tests.integration.workload.support import (
    CLASSIC,
    Events,
    create_topic,
    kill_one_of_two_members,
    one_broker,
    read_back,
    read_to_the_end_in_batches,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One broker (as the librdkafka workload tests'), with a transaction log it can hold alone."""
    with one_broker(tmp_path_factory.mktemp("java-kafka"), **{
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3"}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(kafka: ProcessCluster) -> JavaClient:
    return java_client(kafka.flavour.version)


def test_java_producer_acks_carry_the_offsets_the_records_were_written_at_on_apache_kafka(
    kafka: ProcessCluster, client: JavaClient,
) -> None:
    """Every send is acked once, at a dense per-partition offset that holds exactly that value, with its latency."""
    create_topic(kafka.bootstrap_servers, "jacks", 4)
    events = Events()
    with WorkerProducerWorkload(kafka.bootstrap_servers, events, client=client, producer_id="j1", topic="jacks",
                              rate=300, keys=9, value_base=2 * 10**9) as producer:
        producer.start()
        wait_until(lambda: len(events.of("ack")) >= 150, 60.0, "150 acks", lambda: len(events.of("ack")))
        producer.stop()
        producer.drain(10.0)
    acks = events.of("ack")
    assert len(acks) == len(events.of("send")) and not events.of("send.error")
    assert [e["value"] for e in events.of("send")] == list(range(2 * 10**9, 2 * 10**9 + len(acks)))
    assert all(a["latency_ms"] > 0 and a["acks"] == "all" for a in acks)
    by_partition: dict[int, list[int]] = defaultdict(list)
    for ack in acks:
        by_partition[ack["partition"]].append(ack["offset"])
    assert all(sorted(o) == list(range(len(o))) for o in by_partition.values())
    assert {(a["partition"], a["offset"]): a["value"] for a in acks} == read_back(
        kafka.bootstrap_servers, "jacks", 4, len(acks))


def test_java_group_records_generations_commits_and_a_killed_members_partitions_moving_on_apache_kafka(
    kafka: ProcessCluster, client: JavaClient,
) -> None:
    """A range group of 2 Java members shares the topic in one generation; SIGKILL of member 1 (no LeaveGroup)
    moves its partitions to member 0 only after the session timeout, in a newer generation; every acked record is
    polled at its offset, and commits carry the generation they were made in."""
    create_topic(kafka.bootstrap_servers, "jgroup", 4)
    events = Events()
    kill_one_of_two_members(kafka.bootstrap_servers, events, "jgroup", lambda **kw: WorkerMember(client=client, **kw),
                            WorkerProducerWorkload(kafka.bootstrap_servers, events, client=client, producer_id="jfeed",
                                                   topic="jgroup", rate=100))


def test_a_java_batch_member_whose_fetches_wait_10_s_still_tells_that_it_read_to_the_end_on_apache_kafka(
    kafka: ProcessCluster, client: JavaClient,
) -> None:
    """A Java member that fetches in batches (fetch.max.wait.ms 10 s, a fetch.min.bytes never reached) keeps a Fetch
    waiting on its broker connection, and the broker answers one request per connection at a time: its drain check
    asks the leaders' ends on an Admin of its own (`MemberRole.ends`), so the group reads to the end at once and the
    drain ends complete. Asked with the consumer's own `endOffsets` (1 s timeout) an ask waits behind the Fetch; one
    broker here answers it sooner or later either way (with `endOffsets` this test passed too, in 75 s against 56 s
    side by side), so this shows the Admin working, not the old way failing, as the librdkafka member's test does."""
    from harness.workload.consumer import ConsumerGroupWorkload

    create_topic(kafka.bootstrap_servers, "jbatches", 4)
    events = Events()
    batch = {**CLASSIC, "fetch.max.wait.ms": "10000", "fetch.min.bytes": "100000000"}
    read_to_the_end_in_batches(events, ConsumerGroupWorkload(
        kafka.bootstrap_servers, events, group="jbatch", topics=["jbatches"], members=1, commit="sync",
        extra_config=batch, new_member=lambda **kw: WorkerMember(client=client, **kw)), WorkerProducerWorkload(
        kafka.bootstrap_servers, events, client=client, producer_id="jfeed-b", topic="jbatches", rate=100))


def test_a_java_worker_killed_from_outside_is_a_client_crash_and_its_close_says_so_on_apache_kafka(
    kafka: ProcessCluster, client: JavaClient,
) -> None:
    """A worker SIGKILLed by someone else (the OOM killer, an operator) is recorded as `client.crash` with the
    signal, the run goes on, and the workload's close names the crash instead of passing quietly."""
    create_topic(kafka.bootstrap_servers, "jcrash", 2)
    events = Events()
    producer = WorkerProducerWorkload(kafka.bootstrap_servers, events, client=client, producer_id="jc", topic="jcrash",
                                    rate=50)
    producer.start()
    wait_until(lambda: events.of("ack"), 60.0, "a first ack")
    pid = producer.worker_pid  # the test plays the OOM killer
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    (crash,) = wait_until(lambda: events.of("client.crash"), 30.0, "client.crash")
    assert crash["client"] == "producer:jc" and crash["exit_code"] == -signal.SIGKILL
    with pytest.raises(TeardownError, match="exited with -9"):
        producer.close()


def test_java_transactions_commit_and_abort_the_transactions_the_seed_draws_on_apache_kafka(
    kafka: ProcessCluster, client: JavaClient,
) -> None:
    """The Java worker aborts on purpose exactly the transactions `txn_abort_drawn` names (the one draw both clients
    use), commits the others, and a read_committed reader sees the committed records and none of the aborted."""
    create_topic(kafka.bootstrap_servers, "jtxn", 2)
    events = Events()
    txns = WorkerTransactions("jtxn-tx", records=4, abort_rate=0.5, timeout_s=30.0, seed=7)
    with WorkerProducerWorkload(kafka.bootstrap_servers, events, client=client, producer_id="jt", topic="jtxn",
                              rate=200, transactions=txns) as producer:
        producer.start()
        wait_until(lambda: len(events.of("txn.commit")) + len(events.of("txn.abort")) >= 12, 60.0,
                   "12 transactions ended", lambda: len(events.of("txn.begin")))
        producer.stop()
        producer.drain(15.0)
    ends = sorted(events.of("txn.commit") + events.of("txn.abort"), key=lambda e: e["txn"])
    assert [e["txn"] for e in ends] == list(range(len(ends)))
    for end in ends:
        drawn = txn_abort_drawn(7, "jt", end["txn"], 0.5)
        assert (end["type"], end["outcome"]) == (("txn.abort", "aborted") if drawn else ("txn.commit", "committed"))
    committed = {a["value"] for a in events.of("ack") if any(e["txn"] == a["txn"] and e["type"] == "txn.commit"
                                                             for e in ends)}
    aborted = {a["value"] for a in events.of("ack") if a["value"] not in committed}
    assert committed and aborted
    read = set(read_back(kafka.bootstrap_servers, "jtxn", 2, len(committed), isolation="read_committed").values())
    assert read == committed


def test_a_setting_the_java_client_does_not_know_fails_the_worker_at_start_naming_it(
    kafka: ProcessCluster, client: JavaClient,
) -> None:
    """The Java client only logs a setting it does not know; the worker refuses it, so a setting the experiment
    asked for never silently fails to apply."""
    producer = WorkerProducerWorkload(kafka.bootstrap_servers, Events(), client=client, producer_id="jn", topic="jacks",
                                    rate=1, extra_config={"queue.buffering.max.messages": "10"})
    with pytest.raises(WorkloadError, match=r"has no setting named \[queue.buffering.max.messages\]"):
        producer.start()
    producer.close()
