"""A KRaft cluster (3 dedicated controllers 101..103 + 3 brokers, Apache Kafka 4.x from the local Kafka image) on
the containers backend: acked writes to an RF-3 topic, the quorum leader killed and a successor elected at a
higher epoch (seen through DescribeQuorum at `cluster.quorum_voters`), the killed voter restarted and answering
again, the link `broker:1->controller:101` cut and restored, and nothing left on the engine after teardown.
Nightly since stop 53: make test on 2 cores ran over its 25 minutes (26.8 min for the parallel part in a fresh
clone, 31 min on CI), and this was among its heaviest tests (128-163 s). make test keeps the containers backend's
ZooKeeper-mode cluster tests and KRaft on the process backend."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.containers import ContainersBackend
from harness.errors import ConfigError
from harness.install.kafka import DEFAULT_KRAFT_LINE
from harness.observe.quorum import QuorumObserver
from tests.containers.helpers import run_leftovers, wait_for
from tests.fixtures.podman import DockerEngine
from tests.fixtures.process_cluster import apache_kafka

pytestmark = [pytest.mark.containers, pytest.mark.slow]
SPEC = ClusterSpec(brokers=3, zookeepers=0, mode="kraft", controllers=3, kafka_version="4", broker="apache-kafka",
                   broker_config={"min.insync.replicas": "2"}, ready_timeout_s=300.0)
ELECTION_S = 60.0  # a few election timeouts; generous for a loaded 2-core host
TOPIC = "kraft-orders"
_QUIET = logging.getLogger("tests.containers.kraft.clients")
_QUIET.setLevel(logging.CRITICAL)


def _produce(bootstrap: str, values: range) -> list[tuple[int, int]]:
    """Send `values` with acks=all (idempotent); (value, offset) of each acked one, or an assertion naming errors."""
    producer = Producer(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "acks": "all",
                                              "enable.idempotence": True, "message.timeout.ms": 120000,
                                              "logger": _QUIET}))
    acked: list[tuple[int, int]] = []
    errors: list[str] = []

    def done(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked.append((int(msg.value() or b"-1"), int(msg.offset() or 0)))

    for v in values:
        producer.produce(TOPIC, value=str(v).encode(), callback=done)
    assert producer.flush(150) == 0, f"records still unacked; errors {errors}"
    assert not errors and sorted(v for v, _ in acked) == list(values), (errors, acked)
    return acked


def _read_all(bootstrap: str, count: int) -> list[int]:
    consumer = Consumer(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "group.id": "kraft-containers",
                                              "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                              "logger": _QUIET}))
    seen: list[int] = []
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 120
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                seen.append(int(msg.value() or b"-1"))
    finally:
        consumer.close()
    return seen


@pytest.mark.timeout(1200)
def test_kraft_cluster_on_containers_survives_losing_its_quorum_leader(docker_env: DockerEngine,
                                                                      tmp_path: Path) -> None:
    if not docker_env.local_images:
        pytest.skip(f"{docker_env.name} runs the published images; KRaft on containers needs the local Kafka image")
    kafka = apache_kafka(DEFAULT_KRAFT_LINE)
    t0 = time.monotonic()
    cluster = ContainersBackend(stop_timeout_s=30.0).up(SPEC, tmp_path)
    try:
        print(f"3 controllers + 3 brokers up in {time.monotonic() - t0:.1f}s on {cluster.engine}")
        assert cluster.flavour.name == "apache-kafka" and cluster.flavour.version == kafka.version
        controllers = [NodeId.controller(v) for v in (101, 102, 103)]
        assert set(cluster.nodes) == {*(NodeId.broker(k) for k in (1, 2, 3)), *controllers}
        assert set(cluster.quorum_voters) == {101, 102, 103} and set(cluster.broker_addresses) == {1, 2, 3}
        info = cluster.describe()
        assert info["mode"] == "kraft" and cluster.zookeeper_connect == ""
        kraft = cast(dict[str, Any], info["kraft"])
        assert kraft["voters"] == [101, 102, 103] and len(kraft["cluster_id"]) == 22
        assert cluster.container(controllers[0]).spec.image == f"localhost/kafka-chaos-kafka:{kafka.version}"
        assert (tmp_path / "controller-101" / "data" / "meta.properties").read_text().count(kraft["cluster_id"]) == 1
        assert set(cluster.toxiproxy.proxies()) == {p.name for p in cluster.topology.proxies}  # type: ignore[union-attr]

        admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers, "logger": _QUIET}))
        admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=120)
        acked = _produce(cluster.bootstrap_servers, range(0, 5))

        events: list[dict[str, Any]] = []
        with QuorumObserver(cluster.quorum_voters, events.append, name="quorum") as observer:
            leader, epoch = observer.wait_leader(ELECTION_S)
            victim = NodeId.controller(leader)
            cluster.kill(victim)
            assert not cluster.is_running(victim) and cluster.container(victim).exit_code() == 137
            new_leader, new_epoch = observer.wait_leader(ELECTION_S, other_than=leader)
            print(f"quorum leader {leader} (epoch {epoch}) killed -> {new_leader} (epoch {new_epoch})")
            assert new_leader in (101, 102, 103) and new_leader != leader and new_epoch > epoch
            acked += _produce(cluster.bootstrap_servers, range(5, 10))  # writes go on with two voters

            answered = observer.answers[leader]
            cluster.start(victim)  # docker start on the same data; ready when it answers ApiVersions
            assert cluster.is_running(victim) and cluster.container(victim).starts >= 2
            wait_for(f"restarted {victim} answering DescribeQuorum", lambda: observer.answers[leader] > answered,
                     ELECTION_S)

        link = cluster.link(NodeId.broker(1), NodeId.controller(101))
        assert link.name == "1->101"
        link.disable()
        try:
            assert not cluster.toxiproxy.proxies()["1->101"].enabled
            assert cluster.toxiproxy.proxies()["2->101"].enabled
        finally:
            link.enable()
        assert cluster.toxiproxy.proxies()["1->101"].enabled
        with pytest.raises(ConfigError, match="never dial brokers"):
            cluster.link(NodeId.controller(101), NodeId.broker(1))
        acked += _produce(cluster.bootstrap_servers, range(10, 15))
        assert sorted(_read_all(cluster.bootstrap_servers, 15)) == list(range(15)), acked
    finally:
        cluster.down()
    assert run_leftovers(cluster.run_id) == []
