"""The cluster observers on Apache Kafka 3.9 (process backend, 3 brokers, real ZooKeeper). First the Admin
observer in a child process: events flow to the sink, a child killed by SIGABRT (what a librdkafka assertion does)
is recorded and replaced, and stop() leaves no process or thread behind. Then all three at once, through a SIGKILL
of the controller: the ZooKeeper observer reads the znodes Kafka itself writes (registrations, /controller and its
epoch, partition state), the Admin observer Kafka's DescribeCluster, Metadata and DescribeGroups answers (a group's
members, coordinator, assignor and assignments), and the Metadata observer each broker's own view of the
controller, the killed broker's silence slowing none of the others. Every observer emits changes only."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.observe.admin import AdminObserver
from harness.observe.isolated import IsolatedAdminObserver
from harness.observe.metadata import MetadataObserver
from harness.observe.zookeeper import ZooKeeperObserver
from harness.workload import ConsumerGroupWorkload
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka
from tests.fixtures.zookeeper import EventCollector
from tests.integration.workload.support import CLASSIC, Events, create_topic, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SESSION_MS = 6000


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    apache_kafka()
    spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=120, broker=APACHE_KAFKA, broker_config={
        "zookeeper.session.timeout.ms": str(SESSION_MS), "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "3", "group.min.session.timeout.ms": "1000"})  # CLASSIC members: 2 s sessions
    with ProcessBackend(broker=APACHE_KAFKA).up(spec, tmp_path_factory.mktemp("observers-kafka")) as cluster:
        yield cluster


def test_the_isolated_admin_observer_passes_events_on_and_a_child_killed_by_sigabrt_is_restarted(
    kafka: ProcessCluster,
) -> None:
    events = EventCollector()
    threads_before = set(threading.enumerate())
    observer = IsolatedAdminObserver(kafka.bootstrap_servers, events, interval=0.2)
    observer.start()
    try:
        events.wait_for(lambda e: e["type"] == "broker.up", timeout_s=60)
        child = observer._proc
        assert child is not None
        before = len(events)
        os.kill(child.pid, signal.SIGABRT)
        error = events.wait_for(lambda e: e["type"] == "observer.error", timeout_s=30, after=before)
        assert "signal 6" in error["error"] and error["src"] == "admin"
        events.wait_for(lambda e: e["type"] == "broker.up", timeout_s=60, after=before)
        # the new child's first events can reach the sink before the restart is counted and its process recorded
        # (both seen on a loaded make test: restarts was 1 while _proc still held the dead child)
        wait_until(lambda: observer.restarts == 1 and observer._proc is not None and observer._proc.pid != child.pid,
                   30.0, "the restart counted and the new child recorded",
                   lambda: (observer.restarts, None if observer._proc is None else observer._proc.pid))
        assert observer._proc is not None
        last_child = observer._proc.pid
    finally:
        observer.stop()
    assert not psutil.pid_exists(last_child) or psutil.Process(last_child).status() == psutil.STATUS_ZOMBIE
    assert set(threading.enumerate()) <= threads_before


def test_observers_see_what_apache_kafka_writes_through_a_controller_kill(kafka: ProcessCluster) -> None:
    assert kafka.flavour.name == "apache-kafka"
    create_topic(kafka.bootstrap_servers, "obs", 2, replication_factor=3)
    events = Events()
    per_broker = dict(enumerate(kafka.bootstrap_servers.split(","), start=1))
    with (
        ZooKeeperObserver(kafka.zookeeper_connect, events) as zk_observer,
        AdminObserver(kafka.bootstrap_servers, events, interval=0.2, request_timeout_s=3.0) as admin,
        MetadataObserver(per_broker, events, interval=0.2, timeout_s=1.0) as metadata,
        ConsumerGroupWorkload(kafka.bootstrap_servers, events, group="obs-group", topics=["obs"], members=2,
                              extra_config=CLASSIC) as group,
    ):
        assert zk_observer is not None
        admin.start()
        group.start()
        stable = wait_until(lambda: [e for e in events.of("group.state", group="obs-group", src="admin")
                                     if e["state"] == "Stable" and len(e["members"]) == 2
                                     and all(m["assignment"] for m in e["members"])], 60.0,
                            "the Admin observer to see the group Stable with 2 assigned members",
                            lambda: events.of("group.state"))[-1]
        assert stable["generation"] is None and stable["leader"] is None and stable["protocol"] == "range"
        assert stable["coordinator"] in (1, 2, 3)
        assert sorted(p for m in stable["members"] for p in map(tuple, m["assignment"])) == [("obs", 0), ("obs", 1)]
        zk_controller = [e for e in events.of("controller", src="zk") if e["broker"] >= 0][-1]
        old = zk_controller["broker"]
        assert zk_controller["epoch"] >= 1
        assert sorted(e["broker"] for e in events.of("broker.up", src="zk")) == [1, 2, 3]
        states = {e["partition"]: e for e in events.of("partition.state", src="zk", topic="obs")}
        assert set(states) == {0, 1}
        assert all(sorted(s["isr"]) == [1, 2, 3] and s["leader"] in s["replicas"] for s in states.values())
        wait_until(lambda: events.of("controller", src="admin") and events.of("controller", src="admin")[-1][
            "broker"] == old, 30.0, "the Admin observer to name the controller", lambda: events.of("controller"))
        wait_until(lambda: {e["broker"] for e in events.of("controller.view")} == {1, 2, 3}, 30.0,
                   "a controller.view from each broker", lambda: events.of("controller.view"))
        assert all(e["controller"] == old for e in events.of("controller.view"))

        killed_at = time.monotonic()
        kafka.kill(NodeId.broker(old))
        wait_until(lambda: [e for e in events.of("broker.down", src="zk") if e["broker"] == old], 60.0,
                   "the ZooKeeper observer to see the registration of the killed controller vanish")
        new = wait_until(lambda: [e for e in events.of("controller", src="zk") if e["broker"] not in (-1, old)],
                         60.0, "a new controller in /controller")[-1]
        print(f"new controller {new['broker']} (epoch {new['epoch']}) {time.monotonic() - killed_at:.2f}s "
              f"after kill -9 of {old} (session timeout {SESSION_MS} ms)")
        assert new["epoch"] > zk_controller["epoch"]
        survivors = [b for b in (1, 2, 3) if b != old]
        wait_until(lambda: all(events.of("controller.view", broker=b)[-1]["controller"] == new["broker"]
                               for b in survivors), 60.0, "every survivor's Metadata to name the new controller",
                   lambda: events.of("controller.view"))
        wait_until(lambda: events.of("controller", src="admin")[-1]["broker"] == new["broker"], 60.0,
                   "the Admin observer to name the new controller", lambda: events.of("controller", src="admin"))
        before = metadata.answers
        wait_until(lambda: all(metadata.answers[b] >= before[b] + 5 for b in survivors), 30.0,
                   "5 more answers from each survivor while the killed broker is silent", lambda: metadata.answers)
        assert metadata.answers[old] == before[old]
        # Apache Kafka takes the dead broker out of every ISR at once, led or followed (KAFKA-BEHAVIOUR §2).
        wait_until(lambda: all(old not in [e for e in events.of("partition.state", src="zk", topic="obs",
                                                                  partition=p)][-1]["isr"] for p in (0, 1)),
                   30.0, "the killed broker to leave every ISR of obs in ZooKeeper",
                   lambda: events.of("partition.state", src="zk", topic="obs"))
    kafka.start(NodeId.broker(old))
    assert [e["controller"] for e in events.of("controller.view", broker=old)] == [old]
    for b in survivors:
        named = [e["controller"] for e in events.of("controller.view", broker=b)]
        assert all(x != y for x, y in itertools.pairwise(named)), named  # only changes are emitted
    for p in (0, 1):  # every partition.state the Admin observer emits is a change of that partition
        keys = [(e["leader"], tuple(sorted(e["isr"])), tuple(e["replicas"]))
                for e in events.of("partition.state", src="admin", topic="obs", partition=p)]
        assert all(a != b for a, b in itertools.pairwise(keys)), keys
    states = [{k: v for k, v in e.items() if k not in ("wall", "t")}
              for e in events.of("group.state", group="obs-group", src="admin")]
    assert all(a != b for a, b in itertools.pairwise(states)), states
