"""The ZooKeeper-to-KRaft migration's cluster (ZooKeeper mode with dedicated KRaft controllers): which links it
has, and what the controllers and the `migrating` brokers are rendered with, as Kafka's migration docs prescribe
(checked by hand on Apache Kafka 3.9.2, docs/apache-kafka.md)."""

from __future__ import annotations

import pytest

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.links import LinkGraph
from harness.cluster.process_topology import route_count
from harness.cluster.render import (
    ControllerEndpoint,
    HostPort,
    ProxyRoute,
    Topology,
    ZooKeeperEndpoint,
    apply_overrides,
    broker_listeners,
    parse_properties,
    plan_routes,
    render_server_properties,
)
from harness.cluster.render_kraft import render_kraft_controller
from harness.cluster.render_migration import kraft_overrides, migration_broker_properties, render_migration_controller
from harness.errors import ConfigError

N = 3
VOTERS = (101, 102, 103)


def _topology(zookeeper: bool = True) -> Topology:
    """A migration's topology, or (without ZooKeeper) a KRaft cluster's."""
    sources = VOTERS if zookeeper else ()
    brokers = tuple(broker_listeners(k, N, "127.0.0.1", [1000 * k + i for i in range(N + 1 + len(sources))],
                                     controllers=sources) for k in range(1, N + 1))
    zks = (ZooKeeperEndpoint(1, "127.0.0.1", 2181),) if zookeeper else ()
    nodes = [NodeId.controller(v) for v in VOTERS]
    dialers = [NodeId.broker(k) for k in range(1, N + 1)] + nodes
    controllers = tuple(ControllerEndpoint(node, "127.0.0.1", {d: 9000 + 10 * node.id + d.id % 100 for d in dialers})
                        for node in nodes)
    routes = plan_routes(brokers, zks, controllers)
    proxies = tuple(ProxyRoute.of(r, HostPort("127.0.0.1", 20000 + i)) for i, r in enumerate(routes))
    return Topology(brokers, zks, proxies, controllers)


def _proxy(topo: Topology, name: str) -> str:
    return str(next(p.advertised for p in topo.proxies if p.name == name))


def test_a_migrations_controllers_dial_zookeeper_and_the_brokers_and_outside_one_they_do_not() -> None:
    migrating = LinkGraph.of(ClusterSpec(brokers=N, zookeepers=1, controllers=3))
    kraft = LinkGraph.of(ClusterSpec(brokers=N, zookeepers=0, mode="kraft", controllers=3))
    controller, broker, zk = NodeId.controller(101), NodeId.broker(1), NodeId.zookeeper(1)
    assert migrating.migrating and not kraft.migrating
    assert migrating.channels(controller, zk) == ("zookeeper",) and migrating.channels(controller, broker) == ("data",)
    assert migrating.channels(broker, controller) == ("quorum",)
    assert not kraft.dials(controller, broker) and "outside a ZooKeeper-to-KRaft migration" in kraft.refusal(
        controller, broker)
    topo = _topology()
    names = {p.name for p in topo.proxies}
    assert len(names) == route_count(ClusterSpec(brokers=N, zookeepers=1, controllers=3))
    assert {"101->zk1", "101->1", "103->3", "1->101", "101->102", "1->2", "1->zk1"} <= names


def test_a_ZooKeeper_cluster_without_controllers_is_no_migration() -> None:
    spec = ClusterSpec(brokers=N, zookeepers=1)
    assert not spec.migrating and spec.voter_ids() == () and not LinkGraph.of(spec).migrating
    assert ClusterSpec(brokers=N, zookeepers=1, controllers=3).voter_ids() == VOTERS


def test_each_broker_has_a_listener_per_controller_advertised_at_that_controllers_proxy() -> None:
    topo = _topology()
    props = parse_properties(render_server_properties(topo, 2, log_dirs="/d"))
    advertised = dict(item.split("://") for item in props["advertised.listeners"].split(","))
    assert advertised["FROM101"] == _proxy(topo, "101->2") and advertised["FROM2"] == "127.0.0.1:2001"
    assert "FROM103:PLAINTEXT" in props["listener.security.protocol.map"]
    assert "zookeeper.metadata.migration.enable" not in props  # ZooKeeper mode until the migration's roll


def test_a_migrating_broker_adds_the_flag_and_dials_each_voter_through_its_own_proxy() -> None:
    topo = _topology()
    extra = migration_broker_properties(topo, 1)
    voters = dict(v.split("@") for v in extra["controller.quorum.voters"].split(","))
    assert voters == {str(v): _proxy(topo, f"1->{v}") for v in VOTERS}
    assert extra["zookeeper.metadata.migration.enable"] == "true" and extra["controller.listener.names"] == "CTRL1"
    assert extra["listener.security.protocol.map"].endswith(",EXTERNAL:PLAINTEXT,CTRL1:PLAINTEXT")
    props = parse_properties(apply_overrides(render_server_properties(topo, 1, log_dirs="/d"), extra, "t", "h"))
    assert props["broker.id"] == "1" and props["zookeeper.connect"] == _proxy(topo, "1->zk1")
    assert props["controller.listener.names"] == "CTRL1"


def test_a_migrations_controller_reaches_zookeeper_and_the_brokers_through_its_own_proxies() -> None:
    topo = _topology()
    props = parse_properties(render_migration_controller(topo, 102, log_dirs="/d",
                                                         overrides={"inter.broker.protocol.version": "3.9"}))
    plain = parse_properties(render_kraft_controller(topo, 102, log_dirs="/d"))
    assert props["process.roles"] == "controller" and props["node.id"] == "102"
    assert props["zookeeper.metadata.migration.enable"] == "true"
    assert props["zookeeper.connect"] == _proxy(topo, "102->zk1")
    assert props["inter.broker.listener.name"] == "FROM102"
    assert props["listener.security.protocol.map"] == plain["listener.security.protocol.map"] + ",FROM102:PLAINTEXT"
    assert props["controller.quorum.voters"] == plain["controller.quorum.voters"]


def test_a_topology_without_zookeeper_renders_no_migration_controller() -> None:
    kraft = _topology(zookeeper=False)
    with pytest.raises(ConfigError, match="no migration's"):
        render_migration_controller(kraft, 101, log_dirs="/d")


def test_a_broker_rolled_into_kraft_drops_the_zookeeper_settings_and_the_protocol_version() -> None:
    config = {"zookeeper.session.timeout.ms": "6000", "inter.broker.protocol.version": "3.9",
              "min.insync.replicas": "2"}
    assert kraft_overrides(config) == {"min.insync.replicas": "2"}
