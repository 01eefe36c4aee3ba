"""KRaft rendering: every node dials each voter through its own proxy, dedicated controllers and combined
voters get the right roles and listeners, and the cluster id follows the seed."""

from __future__ import annotations

import pytest

from harness.cluster.base import ClusterSpec, LinkGroup, NodeId
from harness.cluster.process_topology import route_count
from harness.cluster.render import (
    ControllerEndpoint,
    HostPort,
    ProxyRoute,
    Topology,
    broker_listeners,
    parse_properties,
    plan_routes,
)
from harness.cluster.render_kraft import (
    kraft_cluster_id,
    render_kraft_broker,
    render_kraft_controller,
    storage_format_args,
)
from harness.errors import ConfigError

N = 3


def _topology(combined: bool = False, voters: int = 3) -> Topology:
    brokers = tuple(broker_listeners(k, N, "127.0.0.1", [1000 * k + i for i in range(N + 1)])
                    for k in range(1, N + 1))
    nodes = [NodeId.broker(v) if combined else NodeId.controller(100 + v) for v in range(1, voters + 1)]
    dialers = [NodeId.broker(k) for k in range(1, N + 1)] + ([] if combined else nodes)
    controllers = tuple(ControllerEndpoint(node, "127.0.0.1", {d: 9000 + 10 * node.id + d.id % 100 for d in dialers})
                        for node in nodes)
    routes = plan_routes(brokers, (), controllers)
    proxies = tuple(ProxyRoute.of(r, HostPort("127.0.0.1", 20000 + i)) for i, r in enumerate(routes))
    return Topology(brokers, (), proxies, controllers)


@pytest.mark.parametrize("combined", [False, True])
def test_every_dialer_has_one_proxy_to_every_other_voter_and_none_to_itself(combined: bool) -> None:
    topo = _topology(combined)
    names = {p.name for p in topo.proxies}
    spec = ClusterSpec(brokers=N, zookeepers=0, mode="kraft", controllers=3, combined=combined)
    assert len(names) == len(topo.proxies) == route_count(spec)
    if combined:
        assert {"1->2.quorum", "2->1.quorum", "3->1.quorum"} <= names and "1->1.quorum" not in names
    else:
        assert {"1->101", "3->103", "101->102", "103->101"} <= names and "101->101" not in names
        assert not any(n.startswith("101->") and n.split("->")[1].isdigit() and int(n.split("->")[1]) < 100
                       for n in names), "controllers never dial brokers"


def test_voters_are_named_at_the_address_each_node_dials_them_at() -> None:
    topo = _topology()
    props = parse_properties(render_kraft_controller(topo, 101, log_dirs="/d"))
    voters = dict(v.split("@") for v in props["controller.quorum.voters"].split(","))
    assert voters["101"] == "127.0.0.1:10011"  # itself: its own listener, no proxy
    assert voters["102"] == str(topo.proxy(NodeId.controller(101), NodeId.controller(102)).advertised)
    assert props["process.roles"] == "controller"
    broker = parse_properties(render_kraft_broker(topo, 2, log_dirs="/d"))
    voters = dict(v.split("@") for v in broker["controller.quorum.voters"].split(","))
    assert voters["103"] == str(topo.proxy(NodeId.broker(2), NodeId.controller(103)).advertised)
    assert broker["process.roles"] == "broker" and "CTRL" not in broker["listeners"]
    assert broker["controller.listener.names"] == "CTRL2" and "zookeeper.connect" not in broker
    assert "CTRL2:PLAINTEXT" in broker["listener.security.protocol.map"]


def test_a_voter_has_one_controller_listener_per_dialer_advertised_as_that_dialers_proxy() -> None:
    """Kafka 4 dials the quorum leader at the endpoint it advertises for the dialer's controller listener name
    (KIP-853), so each name must lead through the dialer's own proxy, as FROMk does for brokers."""
    topo = _topology()
    props = parse_properties(render_kraft_controller(topo, 102, log_dirs="/d"))
    names = props["controller.listener.names"].split(",")
    assert names[0] == "CTRL102" and set(names) == {"CTRL1", "CTRL2", "CTRL3", "CTRL101", "CTRL102", "CTRL103"}
    advertised = dict(a.split("://") for a in props["advertised.listeners"].split(","))
    assert advertised["CTRL1"] == str(topo.proxy(NodeId.broker(1), NodeId.controller(102)).advertised)
    assert advertised["CTRL103"] == str(topo.proxy(NodeId.controller(103), NodeId.controller(102)).advertised)
    assert advertised["CTRL102"] == "127.0.0.1:10022"  # itself
    listeners = dict(a.split("://") for a in props["listeners"].split(","))
    assert listeners["CTRL1"] == "127.0.0.1:10021" and set(listeners) == set(names)


def test_a_combined_voter_has_broker_and_controller_listeners_each_advertised_per_source() -> None:
    topo = _topology(combined=True)
    props = parse_properties(render_kraft_broker(topo, 1, log_dirs="/d"))
    assert props["process.roles"] == "broker,controller" and props["controller.listener.names"].startswith("CTRL1,")
    assert "CTRL2://127.0.0.1:9012" in props["listeners"] and "FROM2://" in props["listeners"]
    advertised = dict(a.split("://") for a in props["advertised.listeners"].split(","))
    assert advertised["CTRL2"] == str(topo.proxies_between(NodeId.broker(2), NodeId.broker(1))[1].advertised)
    voters = dict(v.split("@") for v in props["controller.quorum.voters"].split(","))
    assert voters["2"] == str(topo.proxies_between(NodeId.broker(1), NodeId.broker(2))[1].advertised)


def test_a_combined_link_between_voters_is_both_proxies_as_one() -> None:
    topo = _topology(combined=True)
    assert [p.name for p in topo.proxies_between(NodeId.broker(1), NodeId.broker(2))] == ["1->2", "1->2.quorum"]
    assert [p.name for p in _topology().proxies_between(NodeId.broker(1), NodeId.broker(2))] == ["1->2"]

    class Fake:
        def __init__(self, name: str) -> None:
            self.name, self.calls = name, []  # type: ignore[var-annotated]

        def disable(self) -> None:
            self.calls.append("disable")

        def enable(self) -> None:
            self.calls.append("enable")

        def add_toxic(self, kind: str, attributes: object, **kw: object) -> str:
            return str(kw["name"])

        def remove_toxic(self, name: str) -> None:
            self.calls.append(f"remove {name}")

    a, b = Fake("1->2"), Fake("1->2.quorum")
    group = LinkGroup((a, b))  # type: ignore[arg-type]
    group.disable()
    assert group.add_toxic("latency", {"latency": 5}, name="t") == "t"
    group.remove_toxic("t")
    assert a.calls == b.calls == ["disable", "remove t"] and group.name == "1->2+1->2.quorum"


def test_controllers_never_dial_brokers_so_that_link_has_no_proxy() -> None:
    with pytest.raises(ConfigError, match="never dial brokers"):
        _topology().proxy(NodeId.controller(101), NodeId.broker(1))


def test_the_harness_owns_the_quorum_properties() -> None:
    with pytest.raises(ConfigError, match=r"controller\.quorum\.voters"):
        render_kraft_broker(_topology(), 1, log_dirs="/d", overrides={"controller.quorum.voters": "1@x:1"})
    props = parse_properties(render_kraft_controller(_topology(), 102, log_dirs="/d",
                                                     overrides={"controller.quorum.election.timeout.ms": "800"}))
    assert props["controller.quorum.election.timeout.ms"] == "800"


def test_the_cluster_id_is_22_base64url_characters_drawn_from_the_seed() -> None:
    assert kraft_cluster_id(42) == kraft_cluster_id(42) != kraft_cluster_id(43)
    assert len(kraft_cluster_id(42)) == 22 and "=" not in kraft_cluster_id(42)
    assert storage_format_args("abc", "/p")[:4] == ["kafka.tools.StorageTool", "format", "-t", "abc"]


@pytest.mark.parametrize("combined", [False, True])
def test_before_kafka_3_9_no_controller_listener_is_advertised_and_voters_are_dialed_as_configured(
        combined: bool) -> None:
    """Kafka 3.3-3.8 refuse advertised.listeners on a controller and a controller listener in a broker's (KIP-853
    came in 3.9); every node then dials the addresses of its own controller.quorum.voters, its own proxies."""
    topo = _topology(combined)
    if combined:
        props = parse_properties(render_kraft_broker(topo, 1, log_dirs="/d", advertise_controllers=False))
        assert "CTRL" not in props["advertised.listeners"] and "CTRL2://" in props["listeners"]
    else:
        props = parse_properties(render_kraft_controller(topo, 102, log_dirs="/d", advertise_controllers=False))
        assert "advertised.listeners" not in props and "CTRL1://" in props["listeners"]
    voters = dict(v.split("@") for v in props["controller.quorum.voters"].split(","))
    me = NodeId.broker(1) if combined else NodeId.controller(102)
    other = NodeId.broker(2) if combined else NodeId.controller(101)
    assert voters[str(other.id)] in {str(p.advertised) for p in topo.proxies_between(me, other)}


def test_a_cluster_id_never_starts_with_a_dash_which_kafka_storage_would_read_as_an_option() -> None:
    """Seed 1002 (the false-fail hunt's kraft schedule 2) once gave "-WTlo3Xu5Y2Aoec-E6MHiw": `kafka-storage
    format -t -WTlo...` exited 1 ("argument --cluster-id/-t: expected one argument"). Kafka's own Uuid.randomUuid
    draws again in that case; so does the harness, and keeps every other seed's id as it was."""
    assert not kraft_cluster_id(1002).startswith("-") and len(kraft_cluster_id(1002)) == 22
    assert not [s for s in range(5000) if kraft_cluster_id(s).startswith("-")]
    assert kraft_cluster_id(42) == "hbdwgoK0SPC7zzOISH0pmA"  # as before the rule
