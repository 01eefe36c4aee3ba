"""A KRaft cluster of real Apache Kafka 4.x processes for the observer tests, from the process backend: 3
dedicated controllers (node ids 101..103) and 2 brokers (ids 1, 2), broker sessions of 6 s (heartbeats every
second). The observers reach every node directly (`Cluster.quorum_voters`, `Cluster.broker_addresses`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.install.kafka import DEFAULT_KRAFT_LINE
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 1000


@dataclass
class KraftNode:
    cluster: ProcessCluster
    node: NodeId

    def kill(self) -> None:
        self.cluster.kill(self.node)


@dataclass
class KraftCluster:
    """What the observer tests need of a running KRaft cluster."""

    cluster: ProcessCluster

    @property
    def controllers(self) -> list[int]:
        return sorted(self.cluster.quorum_voters)

    @property
    def brokers(self) -> list[int]:
        return sorted(self.cluster.broker_addresses)

    @property
    def voters(self) -> dict[int, str]:
        return dict(self.cluster.quorum_voters)

    @property
    def broker_addresses(self) -> dict[int, str]:
        return dict(self.cluster.broker_addresses)

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    def node(self, node_id: int) -> KraftNode:
        role = "controller" if node_id in self.cluster.quorum_voters else "broker"
        return KraftNode(self.cluster, NodeId(role, node_id))


@pytest.fixture(scope="module")
def kraft_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """One cluster for the module: the quorum test kills a controller (two voters remain a majority), the
    metadata test a broker."""
    apache_kafka(DEFAULT_KRAFT_LINE)
    spec = ClusterSpec(brokers=2, zookeepers=0, mode="kraft", controllers=3, kafka_version=DEFAULT_KRAFT_LINE,
                       broker=APACHE_KAFKA, broker_config={
                           "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                           "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
                           "offsets.topic.replication.factor": "2", "transaction.state.log.replication.factor": "2",
                           "transaction.state.log.min.isr": "1"})
    with ProcessBackend().up(spec, tmp_path_factory.mktemp("kraft-observers")) as cluster:
        yield KraftCluster(cluster)
