"""A pinned librdkafka (`client: librdkafka`, `client_version: "2.6.0"`) against Apache Kafka 3.9: one broker and a
real ZooKeeper through the process backend; confluent-kafka 2.6.0 installed from PyPI into the cache, its workers
(`harness.workload.py_worker`) running the harness's own producer and member on it. The same events and controls as
in process: acks at the offsets the records were written at, a group's generations and commits, a SIGKILLed
member's partitions moving after its session timeout; transactions across worker sessions, an abrupt restart's open
transaction aborted by the next worker, a zombie fenced."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Iterator

import pytest

from harness.cluster.process import ProcessCluster
from harness.install.librdkafka_client import LibrdkafkaClient
from harness.workload.common import txn_abort_drawn
from harness.workload.java_client import WorkerMember, WorkerProducerWorkload, WorkerTransactions, librdkafka_client
from tests.integration.workload.support import (
    Events,
    create_topic,
    kill_one_of_two_members,
    one_broker,
    read_back,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
VERSION = "2.6.0"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with one_broker(tmp_path_factory.mktemp("pinned-kafka"), **{
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3"}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client() -> LibrdkafkaClient:
    return librdkafka_client(VERSION)


def test_the_workers_interpreter_imports_the_pinned_confluent_kafka_and_its_librdkafka(
    client: LibrdkafkaClient,
) -> None:
    """The worker's environment puts the cached confluent-kafka first: it reports that release and its bundled
    librdkafka, not the harness's own."""
    seen = subprocess.run([*client.argv()[:1], "-c", "import confluent_kafka as c; print(c.version()[0], "
                           "c.libversion()[0], c.__file__)"], env=client.env(), capture_output=True, text=True,
                          check=True).stdout.split()
    assert seen[:2] == [VERSION, VERSION] and str(client.site) in seen[2]


def test_a_pinned_librdkafka_producer_and_group_record_acks_generations_and_a_killed_members_move_on_apache_kafka(
    kafka: ProcessCluster, client: LibrdkafkaClient,
) -> None:
    """A range group of 2 members on librdkafka 2.6.0 shares the topic; SIGKILL of member 1's worker moves its
    partitions to member 0 only after the session timeout, in a newer generation; every send is acked once at a
    dense offset holding its value, and every acked record is polled at its offset."""
    create_topic(kafka.bootstrap_servers, "pinned", 4)
    events = Events()
    kill_one_of_two_members(kafka.bootstrap_servers, events, "pinned", lambda **kw: WorkerMember(client=client, **kw),
                            WorkerProducerWorkload(kafka.bootstrap_servers, events, client=client, producer_id="p260",
                                                   topic="pinned", rate=100, keys=9, value_base=3 * 10**9))
    acks = events.of("ack")
    assert acks and len(acks) == len(events.of("send")) and not events.of("send.error")
    assert [e["value"] for e in events.of("send")] == list(range(3 * 10**9, 3 * 10**9 + len(acks)))
    by_partition: dict[int, list[int]] = defaultdict(list)
    for ack in acks:
        by_partition[ack["partition"]].append(ack["offset"])
    assert all(sorted(o) == list(range(len(o))) for o in by_partition.values())
    assert {(a["partition"], a["offset"]): a["value"] for a in acks} == read_back(
        kafka.bootstrap_servers, "pinned", 4, len(acks))


def test_pinned_librdkafka_transactions_span_worker_sessions_and_a_zombie_is_fenced_on_apache_kafka(
    kafka: ProcessCluster, client: LibrdkafkaClient,
) -> None:
    """Transactions of 4 records on librdkafka 2.6.0, aborted where the seed draws: an abrupt restart (SIGKILL of the
    worker) leaves one open, which the next worker's init_transactions aborts and records; a zombie restart keeps the
    old worker's client holding a transaction open, and once the next worker has fenced it its writes and commit are
    refused. Every transaction number across the three workers ends exactly once, as drawn, and a read_committed
    reader sees every committed record, and none but those and an unknown transaction's (its commit under way at
    the kill)."""
    create_topic(kafka.bootstrap_servers, "ptxn", 2)
    events = Events()
    txns = WorkerTransactions("ptxn-tx", records=4, abort_rate=0.3, timeout_s=20.0, seed=11)

    def ended() -> int:
        return len(events.of("txn.commit")) + len(events.of("txn.abort"))

    with WorkerProducerWorkload(kafka.bootstrap_servers, events, client=client, producer_id="pt", topic="ptxn",
                                rate=200, transactions=txns) as producer:
        producer.start()
        wait_until(lambda: ended() >= 4, 60.0, "4 transactions ended", lambda: len(events.of("txn.begin")))
        producer.restart(abrupt=True)
        wait_until(lambda: ended() >= 9, 60.0, "5 more, in the second worker", lambda: len(events.of("txn.begin")))
        detail = producer.restart(zombie=True, timeout_s=30.0)
        wait_until(lambda: ended() >= 14, 60.0, "5 more, in the third worker", lambda: len(events.of("txn.begin")))
        producer.stop()
        producer.drain(15.0)
    assert producer.sessions == 3
    ends = sorted(events.of("txn.commit") + events.of("txn.abort"), key=lambda e: e["txn"])
    assert [e["txn"] for e in ends] == sorted({e["txn"] for e in events.of("txn.begin")}) == list(range(len(ends)))
    abandoned = {e["txn"]: e["outcome"] for e in ends if e["error"] == "_ABANDONED"}
    (zombie,) = events.of("txn.zombie")
    assert abandoned.pop(zombie["txn"]) == "aborted"
    assert len(abandoned) <= 1 and set(abandoned.values()) <= {"aborted", "unknown"}, abandoned  # open at the kill?
    for end in ends:
        if end["error"] is None:
            drawn = txn_abort_drawn(11, "pt", end["txn"], 0.3)
            assert (end["type"], end["outcome"]) == (("txn.abort", "aborted") if drawn else ("txn.commit", "committed"))
    assert zombie["outcome"] == "fenced" and "tried to commit" in detail, (zombie, detail)
    zombie_values = {e["value"] for e in events.of("send") if e.get("zombie")}
    assert len(zombie_values) == 4 and {events.of("send", value=v)[0]["txn"] for v in zombie_values} == {zombie["txn"]}
    committed = {a["value"] for a in events.of("ack")
                 if any(e["txn"] == a["txn"] and e["outcome"] == "committed" for e in ends)}
    # a transaction whose commit was under way at the kill ended `unknown`: Kafka may have committed it (its
    # EndTxn reached the coordinator before the SIGKILL; seen once, its 4 records read back) or not
    unknown = {e["value"] for e in events.of("send")
               if any(t["txn"] == e["txn"] and t["outcome"] == "unknown" for t in ends)}
    read = set(read_back(kafka.bootstrap_servers, "ptxn", 2, len(committed), isolation="read_committed").values())
    if not committed <= read:  # the unknown transaction committed (a commit flushes all of it): read them all
        read = set(read_back(kafka.bootstrap_servers, "ptxn", 2, len(committed | unknown),
                             isolation="read_committed").values())
    assert committed <= read <= committed | unknown and not read & zombie_values, (read - committed, unknown)
