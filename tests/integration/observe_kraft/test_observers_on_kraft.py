"""QuorumObserver and KraftMetadataObserver on real Apache Kafka 4.x in KRaft mode (3 dedicated controllers
101..103 + brokers 1, 2, from the process backend, see this directory's conftest): the quorum leader killed
with SIGKILL and its successor seen through DescribeQuorum; a topic's partition states with leader epochs and
ELR; a broker killed with SIGKILL seen fenced and down once its session times out."""

from __future__ import annotations

import threading
import time
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from harness.observe.kraft_metadata import KraftMetadataObserver
from harness.observe.quorum import QuorumObserver
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.integration.observe_kraft.conftest import SESSION_TIMEOUT_MS, KraftCluster
from tests.integration.workload.support import Events, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Default KRaft timing: followers notice a dead leader after controller.quorum.fetch.timeout.ms (2 s) and
# elect within a few controller.quorum.election.timeout.ms (1 s); 30 s leaves room for a loaded 2-core host.
ELECTION_S = 30.0


def _observer_threads(name: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(f"observer-{name}")]


@pytest.mark.timeout(300)
def test_quorum_observer_follows_the_leader_across_kill_9_on_apache_kafka_4(kraft_cluster: KraftCluster) -> None:
    """Each voter's state is recorded (one leader, two followers answering NOT_LEADER_OR_FOLLOWER); after
    SIGKILL of the leader a `controller` event names another voter at a higher epoch, the dead voter's
    failure is an `observer.error`, and the new leader's high watermark is sampled as it advances."""
    cluster = kraft_cluster
    events = Events()
    with QuorumObserver(cluster.voters, events, name="quorum") as observer:
        leader, epoch = observer.wait_leader(ELECTION_S)
        assert leader in cluster.controllers
        wait_until(lambda: {e["voter"] for e in events.of("quorum.state")} == set(cluster.controllers), 10.0,
                   "a quorum.state from every voter", lambda: events.of("quorum.state"))
        first = {e["voter"]: e for e in reversed(events.of("quorum.state"))}
        assert first[leader]["role"] == "leader" and first[leader]["high_watermark"] >= 0
        assert {v["id"] for v in first[leader]["voters"]} == set(cluster.controllers)
        assert {o["id"] for o in first[leader]["observers"]} == set(cluster.brokers)
        for voter in set(cluster.controllers) - {leader}:
            assert (first[voter]["role"], first[voter]["leader"], first[voter]["error"]) == (
                "follower", -1, "NOT_LEADER_OR_FOLLOWER"), first[voter]
        rtts = {v: round(s * 1000, 1) for v, s in observer.round_trips.items() if s is not None}
        print(f"DescribeQuorum round trips (ms, last per voter): {rtts}")

        killed_at = time.time() * 1000.0
        cluster.node(leader).kill()
        new_leader, new_epoch = observer.wait_leader(ELECTION_S, other_than=leader)
        controller = events.of("controller")[-1]
        print(f"kill -9 of leader {leader} (epoch {epoch}) -> controller {new_leader} (epoch {new_epoch}) "
              f"after {(controller['wall'] - killed_at) / 1000.0:.3f} s")
        assert new_leader in cluster.controllers and new_leader != leader and new_epoch > epoch
        wait_until(lambda: len(set(_leader_high_watermarks(events, new_leader, new_epoch))) >= 2, 30.0,
                   "the new leader's high watermark sampled at two values",
                   lambda: events.of("quorum.state", voter=new_leader)[-3:])
        wait_until(lambda: events.of("observer.error", node=leader), 10.0, "the dead voter's observer.error")
    assert not _observer_threads("quorum")
    controllers = [(e["broker"], e["epoch"]) for e in events.of("controller")]
    assert controllers[0] == (leader, epoch) and controllers[-1] == (new_leader, new_epoch), controllers
    assert [c[1] for c in controllers] == sorted({c[1] for c in controllers}), controllers
    samples = _leader_high_watermarks(events, new_leader, new_epoch)
    assert len(samples) >= 2 and samples == sorted(samples) and samples[-1] > samples[0], samples  # no-ops: HW moves


def _leader_high_watermarks(events: Events, leader: int, epoch: int) -> list[int]:
    """The high watermarks `leader` reported as leader at `epoch`, in order (null until its first commit: left out).
    On a loaded machine two samples can fall between two no-op commits, so tests wait for two values."""
    return [e["high_watermark"] for e in events.of("quorum.state", voter=leader, epoch=epoch)
            if e["role"] == "leader" and e["high_watermark"] is not None]


def _use_a_group(bootstrap: str) -> None:
    """Join a consumer group once, so `__consumer_offsets` exists (an internal topic)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "kraft-observer",
                                         "logger": LIBRDKAFKA_LOGGER, "session.timeout.ms": "6000"})
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30.0
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()


@pytest.mark.timeout(300)
def test_kraft_metadata_observer_sees_partitions_and_a_killed_brokers_fencing_on_apache_kafka_4(
        kraft_cluster: KraftCluster) -> None:
    """`broker.up` for both brokers; `partition.state` with leader_epoch and ELR for a new topic and for the
    internal `__consumer_offsets`; after SIGKILL of broker 2, `broker.fenced` and `broker.down` once its session
    times out, and its partitions led by broker 1 with ISR [1] and broker 2 in the ELR (min.insync.replicas 2)."""
    cluster = kraft_cluster
    events = Events()
    with KraftMetadataObserver(cluster.broker_addresses, events, name="kraft") as observer:
        wait_until(lambda: {e["broker"] for e in events.of("broker.up")} == set(cluster.brokers), 30.0,
                   "broker.up for every broker", lambda: events.all)
        up = {e["broker"]: e for e in events.of("broker.up")}
        # DescribeCluster names the advertised EXTERNAL listener: the client proxies, the bootstrap list
        assert {f"{e['host']}:{e['port']}" for e in up.values()} == set(cluster.bootstrap_servers.split(","))
        config: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER}
        admin = AdminClient(config)
        futures = admin.create_topics([NewTopic("orders", 2, 2, config={"min.insync.replicas": "2"})],
                                      operation_timeout=20)
        futures["orders"].result(timeout=60)
        wait_until(lambda: {e["partition"] for e in events.of("partition.state", topic="orders")
                            if e["leader"] >= 0 and len(e["isr"]) == 2} == {0, 1}, 30.0,
                   "both partitions of orders led with 2 in sync", lambda: events.of("partition.state"))
        _use_a_group(cluster.bootstrap_servers)
        wait_until(lambda: events.of("partition.state", topic="__consumer_offsets"), 30.0,
                   "partition.state of the internal __consumer_offsets", lambda: observer.cycles)
        state = events.of("partition.state", topic="orders")[0]
        assert set(state) == {"type", "src", "wall", "topic", "partition", "leader", "leader_epoch", "isr",
                              "replicas", "controller_epoch", "elr", "last_known_elr", "error"}
        assert isinstance(state["leader_epoch"], int) and state["controller_epoch"] is None
        assert state["elr"] == [] and state["error"] is None, state  # ELR is on by default from 4.1

        killed_at = time.time() * 1000.0
        cluster.node(2).kill()
        margin_s = 30.0
        wait_until(lambda: events.of("broker.down", broker=2), SESSION_TIMEOUT_MS / 1000.0 + margin_s,
                   "broker.down of the killed broker 2", lambda: events.all[-5:])
        fenced = events.of("broker.fenced", broker=2)
        down = events.of("broker.down", broker=2)
        print(f"kill -9 of broker 2 -> broker.fenced after {(fenced[0]['wall'] - killed_at) / 1000.0:.3f} s "
              f"(broker.session.timeout.ms {SESSION_TIMEOUT_MS})")
        assert fenced and fenced[0]["wall"] <= down[0]["wall"]
        wait_until(lambda: all(events.of("partition.state", topic="orders", partition=p)[-1]["isr"] == [1]
                               for p in (0, 1)), 30.0, "orders' ISR shrunk to [1]",
                   lambda: events.of("partition.state", topic="orders"))
    assert not _observer_threads("kraft")
    for p in (0, 1):
        states = events.of("partition.state", topic="orders", partition=p)
        assert states[-1]["leader"] == 1 and states[-1]["elr"] == [2], states[-1]
        epochs = [s["leader_epoch"] for s in states]
        assert epochs == sorted(epochs), states
    assert not events.of("broker.down", broker=1)
