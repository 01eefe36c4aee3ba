"""One definition of which links exist (`harness.cluster.links.LinkGraph`): the renderer plans a proxy for
exactly the links the fault resolver can cut, for every cluster shape."""

from __future__ import annotations

import pytest

from harness.cluster.base import CLIENT, ClusterSpec, LinkSource, NodeId
from harness.cluster.containers_kraft import kraft_container_topology
from harness.cluster.containers_spec import container_topology
from harness.cluster.links import LinkGraph
from harness.cluster.render import Topology
from harness.faults.resolve import isolate_links, partition_links, resolve_link
from harness.faults.targets import Target, parse_link
from harness.history.state import ClusterState

SHAPES = [
    ClusterSpec(brokers=1, zookeepers=1),
    ClusterSpec(brokers=3, zookeepers=1),
    ClusterSpec(brokers=3, zookeepers=3),
    ClusterSpec(brokers=4, zookeepers=5),
    ClusterSpec(brokers=2, zookeepers=0, mode="kraft", controllers=1),
    ClusterSpec(brokers=3, zookeepers=0, mode="kraft", controllers=3),
    ClusterSpec(brokers=3, zookeepers=0, mode="kraft", controllers=3, combined=True),
    ClusterSpec(brokers=5, zookeepers=0, mode="kraft", controllers=3, combined=True),
]


def _rendered(spec: ClusterSpec) -> Topology:
    """The topology a backend renders for `spec` (the containers backend's: pure, no sockets)."""
    client_ports = {k: 30000 + k for k in range(1, spec.brokers + 1)}
    if spec.kraft:
        return kraft_container_topology(spec, "10.0.0.1", client_ports)
    return container_topology(spec.brokers, spec.zookeepers, "10.0.0.1", client_ports)


def _cuttable(graph: LinkGraph) -> set[tuple[LinkSource, NodeId]]:
    """Every link some fault can cut: isolating each node, partitioning every pair of nodes both ways, and
    each broker's link to ZooKeeper."""
    state = ClusterState()
    out: set[tuple[LinkSource, NodeId]] = set()
    nodes = graph.nodes()
    for node in nodes:
        if node.role != "zookeeper":
            out.update(isolate_links(node, graph))
    for a in nodes:
        for b in nodes:
            groups = ((Target(a.role, a.id),), (Target(b.role, b.id),))
            if a != b:
                out.update(partition_links(groups, one_way=False, topo=graph))
        if a.role == "broker":
            out.update(resolve_link(parse_link(f"broker:{a.id}->zookeeper"), state, graph))
    return out


@pytest.mark.parametrize("spec", SHAPES, ids=lambda s: f"{s.mode}-{s.brokers}b-{s.zookeepers}z-{s.controllers}c"
                         + ("-combined" if s.combined else ""))
def test_every_link_a_fault_can_cut_has_a_proxy_and_every_proxy_is_a_link_a_fault_can_cut(spec: ClusterSpec) -> None:
    graph = LinkGraph.of(spec)
    rendered = _rendered(spec)
    assert rendered.links == graph
    proxied = {(p.src, p.dst) for p in rendered.proxies}
    assert _cuttable(graph) == proxied
    cut_names = {p.name for src, dst in proxied for p in rendered.proxies_between(src, dst)}
    assert cut_names == {p.name for p in rendered.proxies}, "each proxy belongs to a link the faults cut"


@pytest.mark.parametrize("spec", SHAPES[:1] + SHAPES[-2:])
def test_the_planned_proxies_are_the_graphs_links_one_per_channel(spec: ClusterSpec) -> None:
    graph = LinkGraph.of(spec)
    assert [p.name for p in _rendered(spec).proxies] == [d.name for d in graph.links()]


def test_who_dials_whom() -> None:
    """Brokers dial brokers and ZooKeeper, clients dial brokers, brokers and controllers dial the voters;
    nobody dials itself, ZooKeeper and controllers never dial brokers, and ZooKeeper peers are not proxied."""
    zk = LinkGraph((1, 2), (1, 2))
    b1, b2, z1, z2 = NodeId.broker(1), NodeId.broker(2), NodeId.zookeeper(1), NodeId.zookeeper(2)
    assert zk.dials(b1, b2) and zk.dials(b1, z1) and zk.dials(CLIENT, b1)
    assert not zk.dials(b1, b1) and not zk.dials(z1, b1) and not zk.dials(CLIENT, z1)
    assert zk.channels(z1, z2) == ("peer",) and not zk.dials(z1, z2)
    assert "not proxied" in zk.refusal(z1, z2) and "reaches itself" in zk.refusal(b1, b1)
    kraft = LinkGraph((1, 2), (), (101, 102, 103))
    c1, c2 = NodeId.controller(101), NodeId.controller(102)
    assert kraft.dials(b1, c1) and kraft.dials(c1, c2) and not kraft.dials(c1, b1)
    assert "never dial brokers" in kraft.refusal(c1, b1)
    assert kraft.quorum_dialers() == (b1, b2, c1, c2, NodeId.controller(103))
    combined = LinkGraph((1, 2, 3), (), (1, 2), combined=True)
    assert combined.proxied(b1, b2) == ("data", "quorum") and combined.proxied(b1, NodeId.broker(3)) == ("data",)
    assert combined.nodes() == (b1, b2, NodeId.broker(3)) and combined.quorum_dialers() == combined.nodes()


def test_the_cluster_shape_gives_the_members() -> None:
    """A KRaft spec has no ZooKeeper members whatever its `zookeepers` says; dedicated voters are 101.. ."""
    kraft = LinkGraph.of(ClusterSpec(brokers=2, zookeepers=1, mode="kraft", controllers=3))
    assert kraft.zookeepers == () and kraft.voter_nodes()[0] == NodeId.controller(101)
    assert LinkGraph.of(ClusterSpec(brokers=2, zookeepers=3)).nodes() == (
        NodeId.broker(1), NodeId.broker(2), NodeId.zookeeper(1), NodeId.zookeeper(2), NodeId.zookeeper(3))
