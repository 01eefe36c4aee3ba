"""Target resolution against observed state, and which proxy links each link-level fault cuts."""

from __future__ import annotations

import pytest

from harness.cluster.base import CLIENT, NodeId, link_name
from harness.cluster.links import LinkGraph
from harness.faults.resolve import (
    MemberRef,
    ResolutionError,
    isolate_links,
    partition_links,
    resolve_link,
    resolve_node,
)
from harness.faults.targets import TargetSyntaxError, parse_link, parse_target
from harness.history.state import ClusterState

TOPO = LinkGraph((1, 2, 3), (1, 2, 3))


def _state() -> ClusterState:
    s = ClusterState()
    s.apply({"type": "controller", "broker": 2, "epoch": 5})
    s.apply({"type": "partition.state", "topic": "t", "partition": 0, "leader": 3, "leader_epoch": 1,
             "isr": [3, 1], "replicas": [3, 1, 2]})
    s.apply({"type": "partition.state", "topic": "t", "partition": 1, "leader": -1, "leader_epoch": 2,
             "isr": [], "replicas": [1]})
    s.apply({"type": "group.state", "group": "g", "state": "Stable", "coordinator": 1})
    return s


def test_dynamic_targets_resolve_from_the_latest_observed_state() -> None:
    s = _state()
    assert resolve_node(parse_target("controller"), s) == NodeId.broker(2)
    assert resolve_node(parse_target("leader:t/0"), s) == NodeId.broker(3)
    assert resolve_node(parse_target("coordinator:g"), s) == NodeId.broker(1)
    assert resolve_node(parse_target("consumer:g/1"), s) == MemberRef("g", 1)
    s.apply({"type": "controller", "broker": -1, "epoch": 5})  # ZooKeeper's /controller deleted: its last epoch
    with pytest.raises(ResolutionError, match="no controller"):
        resolve_node(parse_target("controller"), s)
    with pytest.raises(ResolutionError, match="no leader"):
        resolve_node(parse_target("leader:t/1"), s)


def test_links_to_zookeeper_fan_out_to_every_member() -> None:
    links = resolve_link(parse_link("broker:1->zookeeper"), _state(), TOPO)
    assert [link_name(a, b) for a, b in links] == ["1->zk1", "1->zk2", "1->zk3"]
    assert [link_name(a, b) for a, b in resolve_link(parse_link("client->leader:t/0"), _state(), TOPO)] == ["client->3"]
    with pytest.raises(ResolutionError, match="both ends"):
        resolve_link(parse_link("controller->broker:2"), _state(), TOPO)


def test_isolating_a_broker_cuts_all_its_links_and_only_them() -> None:
    names = {link_name(a, b) for a, b in isolate_links(NodeId.broker(2), TOPO)}
    assert names == {"2->zk1", "2->zk2", "2->zk3", "2->1", "1->2", "2->3", "3->2", "client->2"}
    zk_only = {link_name(a, b) for a, b in isolate_links(NodeId.broker(2), TOPO, zookeeper_only=True)}
    assert zk_only == {"2->zk1", "2->zk2", "2->zk3"}


def test_partition_cuts_links_between_groups_and_broker_side_proxies_to_zookeeper() -> None:
    groups = ((parse_target("broker:1"),), (parse_target("broker:2"), parse_target("zookeeper:1")))
    both = {link_name(a, b) for a, b in partition_links(groups, one_way=False)}
    assert both == {"1->2", "2->1", "1->zk1"}
    one_way = {link_name(a, b) for a, b in partition_links(groups, one_way=True)}
    assert one_way == {"1->2", "1->zk1"}
    assert (CLIENT, NodeId.broker(1)) not in partition_links(groups, one_way=False)


@pytest.mark.parametrize("text", ["broker:0", "broker:x", "leader:t", "leader:/1", "consumer:g", "nobody",
                                  "coordinator:"])
def test_malformed_targets_say_what_is_expected(text: str) -> None:
    with pytest.raises(TargetSyntaxError, match=r"expected|must be|unknown"):
        parse_target(text)


@pytest.mark.parametrize("text", ["client->zookeeper", "consumer:g/0->broker:1", "broker:1", "broker:1->consumer:g/0"])
def test_malformed_links_are_rejected(text: str) -> None:
    with pytest.raises(TargetSyntaxError):
        parse_link(text)


def test_idle_broker_is_the_lowest_live_broker_that_leads_nothing() -> None:
    """`idle-broker` names a pure follower (its loss shows only in the ISRs), else nothing."""
    s = _state()
    for b in (1, 2, 3):
        s.apply({"type": "broker.up", "broker": b})
    assert str(parse_target("idle-broker")) == "idle-broker"
    assert resolve_node(parse_target("idle-broker"), s) == NodeId.broker(1)
    s.apply({"type": "broker.down", "broker": 1})
    assert resolve_node(parse_target("idle-broker"), s) == NodeId.broker(2)
    s.apply({"type": "partition.state", "topic": "t", "partition": 1, "leader": 2, "leader_epoch": 3,
             "isr": [2], "replicas": [2]})
    with pytest.raises(ResolutionError, match="every live broker leads a partition"):
        resolve_node(parse_target("idle-broker"), s)
