"""KRaft targets: `controller` is the quorum leader node, `controller:<id>` a voter, and link faults cut the
proxy of whichever side dials the other (brokers and voters dial voters; controllers never dial brokers)."""

from __future__ import annotations

import pytest

from harness.cluster.base import CLIENT, NodeId
from harness.cluster.links import LinkGraph
from harness.faults.resolve import ResolutionError, isolate_links, partition_links, resolve_link, resolve_node
from harness.faults.targets import Target, parse_link, parse_target
from harness.history.state import ClusterState

DEDICATED = LinkGraph((1, 2, 3), (), (101, 102, 103))
COMBINED = LinkGraph((1, 2, 3), (), (1, 2, 3), combined=True)


def _state(leader: int) -> ClusterState:
    s = ClusterState()
    s.apply({"type": "controller", "broker": leader, "epoch": 7})
    return s


def test_controller_is_the_quorum_leader_node_dedicated_or_combined() -> None:
    assert resolve_node(parse_target("controller"), _state(102), DEDICATED) == NodeId.controller(102)
    assert resolve_node(parse_target("controller"), _state(2), COMBINED) == NodeId.broker(2)
    assert resolve_node(parse_target("controller:103"), _state(102), DEDICATED) == NodeId.controller(103)
    with pytest.raises(ResolutionError, match="not a voter"):
        resolve_node(parse_target("controller:104"), _state(102), DEDICATED)


def test_controller_any_parses_as_a_voter_drawn_later() -> None:
    t = parse_target("controller:any")
    assert t == Target("any-controller") and t.role == "controller" and str(t) == "controller:any"
    assert parse_target("controller:101").is_static and not parse_target("controller").is_static


def test_isolating_a_dedicated_controller_cuts_the_quorum_links_and_the_brokers_links_to_it() -> None:
    links = {(str(s), str(d)) for s, d in isolate_links(NodeId.controller(101), DEDICATED)}
    assert links == {("controller:101", "controller:102"), ("controller:102", "controller:101"),
                     ("controller:101", "controller:103"), ("controller:103", "controller:101"),
                     ("broker:1", "controller:101"), ("broker:2", "controller:101"), ("broker:3", "controller:101")}


def test_isolating_a_broker_in_kraft_cuts_its_links_to_the_voters_and_no_zookeeper() -> None:
    links = set(isolate_links(NodeId.broker(1), DEDICATED))
    assert (NodeId.broker(1), NodeId.controller(102)) in links and (CLIENT, NodeId.broker(1)) in links
    assert (NodeId.controller(102), NodeId.broker(1)) not in links
    assert not any(d.role == "zookeeper" for _, d in links)


def test_a_partition_between_a_controller_and_a_broker_cuts_the_brokers_proxy_either_way() -> None:
    groups = ((Target("controller", 101),), (Target("broker", 1), Target("controller", 102)))
    cut = partition_links(groups, one_way=True, topo=DEDICATED)
    assert set(cut) == {(NodeId.controller(101), NodeId.controller(102)), (NodeId.broker(1), NodeId.controller(101))}


def test_a_link_from_a_controller_to_a_broker_is_refused_with_the_reverse_as_hint() -> None:
    with pytest.raises(ResolutionError, match="never dials"):
        resolve_link(parse_link("controller:101->broker:1"), _state(101), DEDICATED)
    assert resolve_link(parse_link("broker:1->controller"), _state(103), DEDICATED) == [
        (NodeId.broker(1), NodeId.controller(103))]


MIGRATING = LinkGraph((1, 2, 3), (1,), (101, 102, 103))


def test_in_a_migration_controller_is_the_zookeeper_controller_broker_until_a_kraft_controller_holds_it() -> None:
    assert MIGRATING.migrating
    assert resolve_node(parse_target("controller"), _state(2), MIGRATING) == NodeId.broker(2)
    assert resolve_node(parse_target("controller"), _state(101), MIGRATING) == NodeId.controller(101)
    assert resolve_node(parse_target("controller:102"), _state(2), MIGRATING) == NodeId.controller(102)
