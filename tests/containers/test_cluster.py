"""The cluster of experiments/controller-failover.yaml (3 brokers, 1 ZooKeeper) on Apache Kafka through the
containers backend, on whatever Docker API answers (on these machines: Podman with the local images, i.e.
Apache Kafka from the cache's install in an image holding its jars, pyspark's ZooKeeper jars and the
embedded Toxiproxy in containers; elsewhere the Confluent Platform images)."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ClusterMetadata

from harness.cluster.base import CLIENT, NodeId
from harness.cluster.containers import ContainersBackend, ContainersCluster
from harness.cluster.containers_ready import kafka_image_labels
from harness.engine.backend_needs import cluster_spec
from harness.experiment import load_experiment
from harness.install.kafka import KafkaInstall
from tests.containers.helpers import local_kafka, metadata, run_leftovers, wait_for
from tests.fixtures.podman import DockerEngine

pytestmark = [pytest.mark.containers, pytest.mark.slow]
EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "controller-failover.yaml"
SESSION_S = 6.0  # zookeeper.session.timeout.ms of the experiment


@pytest.fixture(scope="module")
def kafka(docker_env: DockerEngine) -> KafkaInstall | None:
    return local_kafka(docker_env)


@pytest.fixture(scope="module")
def cluster(docker_env: DockerEngine, kafka: KafkaInstall | None,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainersCluster]:
    spec = dataclasses.replace(cluster_spec(load_experiment(str(EXPERIMENT))), broker="apache-kafka",
                               ready_timeout_s=300.0)  # 150 s ran out at make test's busiest start (CPU-starved JVMs)
    assert spec.brokers == 3 and spec.zookeepers == 1
    backend = ContainersBackend(stop_timeout_s=20.0)
    with backend.up(spec, tmp_path_factory.mktemp("containers-cluster")) as c:
        yield c
    assert run_leftovers(c.run_id) == []


def _client_address(c: ContainersCluster, broker_id: int) -> str:
    assert c.topology is not None
    return str(c.topology.proxy(CLIENT, NodeId.broker(broker_id)).advertised)


def _full_metadata(c: ContainersCluster, broker_id: int) -> ClusterMetadata | None:
    """Metadata answered by broker `broker_id` itself (librdkafka may ask any broker it knows) listing all 3."""
    md = metadata(_client_address(c, broker_id))
    mine = (md.orig_broker_name or "").startswith(_client_address(c, broker_id))
    return md if mine and sorted(md.brokers) == [1, 2, 3] else None


def test_the_brokers_are_apache_kafka_with_their_logs_in_the_cluster_dir(
        cluster: ContainersCluster, kafka: KafkaInstall | None) -> None:
    assert cluster.flavour.name == "apache-kafka" and cluster.flavour.version.startswith("3.9")
    if kafka is None:  # published images
        return
    assert cluster.flavour.version == kafka.version
    broker = cluster.container(NodeId.broker(1))
    assert broker.spec.image == f"localhost/kafka-chaos-kafka:{kafka.version}"
    assert broker.spec.command is not None and broker.spec.command[-2:] == ("kafka.Kafka", "/conf/server.properties")
    assert cluster.kafka_image_labels == kafka_image_labels(kafka)  # the image holds this install's files
    logs = cluster.workdir / "broker-1" / "logs"
    wait_for("broker:1's server.log", lambda: (logs / "server.log").stat().st_size > 0, 10)
    assert "started (kafka.server.KafkaServer)" in (logs / "server.log").read_text()
    assert (logs / "controller.log").is_file() and (logs / "state-change.log").is_file()


def test_brokers_registered_and_each_answers_metadata_through_its_client_proxy(cluster: ContainersCluster) -> None:
    assert cluster._ready is not None
    ids = sorted(int(x) for x in cluster._ready.zookeeper().get_children("/brokers/ids"))
    assert ids == [1, 2, 3]
    for j in (1, 2, 3):
        # metadata reaches every broker asynchronously (from the controller), as in Kafka
        md = wait_for(f"broker:{j} listing all brokers", functools.partial(_full_metadata, cluster, j), 20)
        assert (md.orig_broker_name or "").startswith(_client_address(cluster, j))
        # every broker advertises EXTERNAL at the host-mapped port of proxy client->k
        assert {f"{b.host}:{b.port}" for b in md.brokers.values()} == {_client_address(cluster, k) for k in (1, 2, 3)}


def test_every_directed_link_is_a_proxy_on_the_toxiproxy_container(cluster: ContainersCluster) -> None:
    assert cluster.topology is not None
    on_server = cluster.toxiproxy.proxies()
    assert set(on_server) == {p.name for p in cluster.topology.proxies}
    assert len(on_server) == 3 * 2 + 3 * 1 + 3
    assert on_server["2->3"].upstream == "broker3:9102" and on_server["1->zk1"].upstream == "zk1:2181"
    assert all(p.enabled for p in on_server.values())


def test_cutting_a_client_link_refuses_that_broker_only_until_enabled(cluster: ContainersCluster) -> None:
    link = cluster.link(CLIENT, NodeId.broker(1))
    link.disable()
    try:
        with pytest.raises(KafkaException):
            metadata(_client_address(cluster, 1), timeout_s=2.0)
        assert sorted(metadata(_client_address(cluster, 2)).brokers) == [1, 2, 3]
    finally:
        link.enable()
    wait_for("client->1 answering again", lambda: metadata(_client_address(cluster, 1), 2.0).brokers, 15)


def test_cutting_a_brokers_zookeeper_link_expires_its_session_until_healed(cluster: ContainersCluster) -> None:
    """Proxy k->zk1 on the toxiproxy container carries broker k's ZooKeeper session and nothing else."""
    ready = cluster._ready
    assert ready is not None
    link = cluster.link(NodeId.broker(2), NodeId.zookeeper(1))
    link.disable()
    try:
        wait_for("broker:2's session to expire", lambda: ready.registration(2) is None, SESSION_S + 10)
        assert ready.registration(1) is not None and ready.registration(3) is not None
    finally:
        link.enable()
    wait_for("broker:2 registered again", lambda: ready.registration(2) is not None, 30)
    wait_for("broker:2 answering", functools.partial(_full_metadata, cluster, 2), 20)


def test_pause_freezes_a_broker_its_session_expires_and_resume_thaws_it(cluster: ContainersCluster) -> None:
    ready = cluster._ready
    assert ready is not None
    node = NodeId.broker(3)
    t0 = time.monotonic()
    cluster.pause(node)
    try:
        assert cluster.container(node).status() == "paused" and cluster.is_running(node)
        with pytest.raises(KafkaException):
            metadata(_client_address(cluster, 3), timeout_s=2.0)
        wait_for("broker:3's session to expire", lambda: ready.registration(3) is None, SESSION_S + 10)
        # Not before the session timeout counted from the broker's last ZooKeeper heartbeat, which comes
        # every session/3: so at least 2/3 of the timeout after the pause.
        assert time.monotonic() - t0 >= SESSION_S * 2 / 3 - 0.5
    finally:
        cluster.resume(node)
    wait_for("broker:3 registered again", lambda: ready.registration(3) is not None, 20)
    wait_for("broker:3 answering after resume", functools.partial(_full_metadata, cluster, 3), 20)


def test_stop_is_a_controlled_shutdown_that_deregisters_at_once(cluster: ContainersCluster) -> None:
    assert cluster._ready is not None
    victim = next(k for k in (1, 2, 3) if k != cluster.controller())
    node = NodeId.broker(victim)
    cluster.stop(node)
    assert not cluster.is_running(node)
    assert cluster.container(node).exit_code() in (0, 143)
    # the broker closes its ZooKeeper session as it exits (it heartbeated until then): the registration is
    # gone within half a session timeout of the exit, so no session expiry removed it
    wait_for(f"/brokers/ids/{victim} deleted", lambda: cluster._ready.registration(victim) is None, SESSION_S / 2)  # type: ignore[union-attr]
    log = cluster.workdir / f"broker-{victim}" / "logs" / "server.log"
    if log.is_file():  # Apache Kafka in the local image; a published image logs to its console only
        assert "Controlled shutdown request returned successfully" in log.read_text(), f"see {log}"
    cluster.start(node)
    assert cluster.is_running(node) and cluster._ready.registration(victim) is not None


def test_killing_the_controller_elects_a_new_one(cluster: ContainersCluster) -> None:
    first = wait_for("a controller in /controller", cluster.controller, 20)
    node = NodeId.broker(first)
    t0 = time.monotonic()
    cluster.kill(node)
    assert not cluster.is_running(node) and cluster.container(node).exit_code() == 137
    new = wait_for("a new controller", lambda: (c if (c := cluster.controller()) not in (None, first) else None),
                   SESSION_S + 20)
    elapsed = time.monotonic() - t0
    assert new in (1, 2, 3) and new != first
    assert elapsed < SESSION_S + 15, f"failover took {elapsed:.1f}s"
    cluster.start(node)  # waits for the stale registration to expire, then for readiness
    wait_for(f"restarted broker:{first} listing all brokers", lambda: _full_metadata(cluster, first), 20)
