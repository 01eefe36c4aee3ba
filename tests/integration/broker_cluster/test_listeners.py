"""The process backend's listener layout on the reference cluster: FROM1..FROMn + EXTERNAL per broker,
`inter.broker.listener.name=FROMk` on broker k, so every byte from k to j goes to j's FROMk listener."""

from __future__ import annotations

from collections.abc import Callable

import psutil
import pytest
from confluent_kafka.admin import AdminClient

from tests.fixtures.broker import ReferenceCluster
from tests.integration.broker_cluster.clients import AckingProducer, create_topic

pytestmark = pytest.mark.integration


def test_inter_broker_traffic_uses_the_senders_listener_and_clients_see_external(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """Replication and controller requests from broker k reach peer j only on j's FROMk port; Metadata on
    EXTERNAL names EXTERNAL addresses."""
    cluster = reference_cluster_factory(3, per_source_listeners=True)
    bs = cluster.bootstrap_servers
    create_topic(bs, "wired", 3, 3)
    with AckingProducer(bs, "wired") as prod:
        prod.wait_acks(300)
    md = AdminClient({"bootstrap.servers": bs}).list_topics(timeout=10)
    assert {b.port for b in md.brokers.values()} == {p["EXTERNAL"] for p in cluster.listener_ports.values()}
    owner = {port: (j, name) for j, ports in cluster.listener_ports.items() for name, port in ports.items()}
    for k, broker in cluster.brokers.items():
        assert broker.pid is not None
        used = {owner[c.raddr.port] for c in psutil.Process(broker.pid).net_connections(kind="tcp")
                if c.raddr and c.status == psutil.CONN_ESTABLISHED and c.raddr.port in owner}
        peers = {j for j, _name in used if j != k}
        print(f"broker {k} -> {sorted(used)}")
        assert peers, f"broker {k} has no connection to a peer"
        assert all(name == f"FROM{k}" for j, name in used if j != k), used
