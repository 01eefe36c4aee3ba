"""Apache Kafka 3.9 (installed from Maven Central into the cache, or KAFKA_HOME) through the process
backend: 3 brokers + 3 ZooKeeper members, Metadata via the client proxies, a replicated topic,
kill/start, and a cut ZooKeeper link expiring one broker's registration."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_QUIET = logging.getLogger("tests.process_backend.kafka.rdkafka")
_QUIET.setLevel(logging.CRITICAL)
SESSION_MS = 6000


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    apache_kafka()
    backend = ProcessBackend()
    ok, reason = backend.available()
    if not ok:
        pytest.skip(f"process backend unavailable: {reason}")
    spec = ClusterSpec(brokers=3, zookeepers=3, ready_timeout_s=120, broker=APACHE_KAFKA, broker_config={
        "zookeeper.session.timeout.ms": str(SESSION_MS), "group.initial.rebalance.delay.ms": "0"})
    with backend.up(spec, tmp_path_factory.mktemp("kafka3")) as cluster:
        yield cluster


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "logger": _QUIET}))


def test_apache_kafka_brokers_see_each_other_and_replicate_through_the_proxies(kafka: ProcessCluster) -> None:
    assert kafka.flavour.name == "apache-kafka" and kafka.flavour.version.startswith("3.9.")
    logs = kafka.workdir / "broker-1" / "logs"
    assert (logs / "server.log").stat().st_size > 0 and (logs / "controller.log").is_file()
    admin = _admin(kafka.bootstrap_servers)
    md = admin.list_topics(timeout=30)
    assert sorted(md.brokers) == [1, 2, 3]
    assert {f"{b.host}:{b.port}" for b in md.brokers.values()} == set(kafka.bootstrap_servers.split(","))
    assert md.controller_id in (1, 2, 3)
    admin.create_topics([NewTopic("t", num_partitions=3, replication_factor=3)])["t"].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        parts = admin.list_topics("t", timeout=10).topics["t"].partitions
        if parts and all(len(p.isrs) == 3 for p in parts.values()):
            return
        time.sleep(0.5)
    raise AssertionError("ISR never reached 3 replicas: inter-broker FROMk listeners/proxies broken?")


def test_apache_kafka_broker_kill_and_start(kafka: ProcessCluster) -> None:
    node = NodeId.broker(2)
    kafka.kill(node)
    assert not kafka.is_running(node)
    kafka.start(node)  # waits out the stale registration, then for a fresh one + Metadata
    assert kafka.is_running(node)
    assert sorted(_admin(kafka.bootstrap_servers).list_topics(timeout=30).brokers) == [1, 2, 3]


def test_apache_kafka_zookeeper_link_cut_expires_that_brokers_registration(kafka: ProcessCluster) -> None:
    zk = KazooClient(hosts=kafka.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    links = [kafka.link(NodeId.broker(3), NodeId.zookeeper(i)) for i in (1, 2, 3)]
    try:
        for link in links:
            link.disable()
        deadline = time.monotonic() + SESSION_MS / 1000 + 15
        while zk.exists("/brokers/ids/3") is not None:
            assert time.monotonic() < deadline, "/brokers/ids/3 survived its ZooKeeper links being cut"
            time.sleep(0.2)
    finally:
        for link in links:
            link.enable()
        zk.stop()
        zk.close()
