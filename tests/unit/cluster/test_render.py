"""Rendering of the link topology: server.properties per broker, the proxy table, zoo.cfg."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from harness.cluster.base import CLIENT, NodeId, link_name
from harness.cluster.ports import allocate_ports
from harness.cluster.render import (
    EXTERNAL,
    HostPort,
    ProxyRoute,
    Topology,
    ZooKeeperEndpoint,
    broker_listeners,
    parse_properties,
    plan_routes,
    render_server_properties,
    render_toxiproxy_config,
)
from harness.cluster.render_zookeeper import ZooKeeperServer, render_zoo_cfg
from harness.errors import ConfigError

N = 3


def _topology(n: int = N, z: int = 1) -> Topology:
    """Brokers on ports 1k0j (FROMj) / 1k99 (EXTERNAL); proxies listen on 2xxxx ports in route order."""
    brokers = tuple(
        broker_listeners(k, n, "127.0.0.1", [10000 + 100 * k + j for j in range(1, n + 1)] + [10000 + 100 * k + 99])
        for k in range(1, n + 1))
    zks = tuple(ZooKeeperEndpoint(i, "127.0.0.1", 2180 + i) for i in range(1, z + 1))
    routes = plan_routes(brokers, zks)
    proxies = tuple(ProxyRoute.of(r, HostPort("127.0.0.1", 20000 + i)) for i, r in enumerate(routes))
    return Topology(brokers, zks, proxies)


def _props(topo: Topology, k: int, **kw: object) -> dict[str, str]:
    return parse_properties(render_server_properties(topo, k, log_dirs=f"/data/b{k}", **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("z", [1, 3])
def test_proxy_table_has_one_proxy_per_directed_link_and_no_self_links(z: int) -> None:
    topo = _topology(N, z)
    names = [p.name for p in topo.proxies]
    expected = {f"{k}->{j}" for k in range(1, N + 1) for j in range(1, N + 1) if k != j}
    expected |= {f"{k}->zk{i}" for k in range(1, N + 1) for i in range(1, z + 1)}
    expected |= {f"client->{j}" for j in range(1, N + 1)}
    assert len(names) == len(set(names)) == N * (N - 1) + N * z + N
    assert set(names) == expected
    assert all(f"{k}->{k}" not in names for k in range(1, N + 1))
    assert len({p.listen for p in topo.proxies}) == len(names)


def test_proxy_upstreams_point_at_the_destinations_listener_for_that_source() -> None:
    topo = _topology(N, 3)
    for k in range(1, N + 1):
        for j in range(1, N + 1):
            if k != j:
                p = topo.proxy(NodeId.broker(k), NodeId.broker(j))
                assert p.name == link_name(NodeId.broker(k), NodeId.broker(j)) == f"{k}->{j}"
                assert p.upstream == HostPort("127.0.0.1", 10000 + 100 * j + k)  # j's FROMk
        for i in range(1, 4):
            assert topo.proxy(NodeId.broker(k), NodeId.zookeeper(i)).upstream == HostPort("127.0.0.1", 2180 + i)
        assert topo.proxy(CLIENT, NodeId.broker(k)).upstream == HostPort("127.0.0.1", 10000 + 100 * k + 99)


def test_server_properties_for_three_brokers_route_every_link_through_its_proxy() -> None:
    topo = _topology(N, 3)
    for j in range(1, N + 1):
        props = _props(topo, j)
        assert props["broker.id"] == str(j)
        names = [f"FROM{k}" for k in range(1, N + 1)] + [EXTERNAL]
        assert props["listeners"] == ",".join(
            f"{name}://127.0.0.1:{topo.broker(j).port(name)}" for name in names)
        assert props["listener.security.protocol.map"] == ",".join(f"{n}:PLAINTEXT" for n in names)
        assert props["inter.broker.listener.name"] == f"FROM{j}"
        advertised = dict(e.split("://", 1) for e in props["advertised.listeners"].split(","))
        assert list(advertised) == names
        for k in range(1, N + 1):
            if k == j:  # the self-link (controller -> itself) needs no proxy: real port
                assert advertised[f"FROM{k}"] == f"127.0.0.1:{10000 + 100 * j + j}"
            else:
                assert advertised[f"FROM{k}"] == str(topo.proxy(NodeId.broker(k), NodeId.broker(j)).listen)
        assert advertised[EXTERNAL] == str(topo.proxy(CLIENT, NodeId.broker(j)).listen)
        assert props["zookeeper.connect"] == ",".join(
            str(topo.proxy(NodeId.broker(j), NodeId.zookeeper(i)).listen) for i in range(1, 4))
        assert props["log.dirs"] == f"/data/b{j}"
        assert props["offsets.topic.replication.factor"] == "3"
        assert props["transaction.state.log.min.isr"] == "2"
        assert props["zookeeper.session.timeout.ms"] == "18000"  # Kafka's default unless the spec sets it


def test_bootstrap_servers_are_the_client_proxies_and_zookeeper_connect_is_direct() -> None:
    topo = _topology(N, 3)
    assert topo.bootstrap_servers == ",".join(str(topo.proxy(CLIENT, NodeId.broker(j)).listen) for j in (1, 2, 3))
    assert topo.zookeeper_connect == "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"


def test_internal_topic_replication_is_capped_by_broker_count() -> None:
    props = _props(_topology(1, 1), 1)
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["listeners"].count("://") == 2


def test_broker_config_overrides_replace_defaults_in_place_and_append_new_keys() -> None:
    text = render_server_properties(_topology(), 2, log_dirs="/d", overrides=MappingProxyType({
        "zookeeper.session.timeout.ms": "4000", "group.initial.rebalance.delay.ms": "0",
        "min.insync.replicas": "2"}))
    props = parse_properties(text)
    assert props["zookeeper.session.timeout.ms"] == "4000"
    assert text.count("zookeeper.session.timeout.ms=") == 1
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["min.insync.replicas"] == "2"


@pytest.mark.parametrize("key", ["listeners", "advertised.listeners", "zookeeper.connect", "broker.id",
                                 "inter.broker.listener.name", "log.dirs"])
def test_overriding_a_topology_owned_property_is_an_error_naming_it(key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        render_server_properties(_topology(), 1, log_dirs="/d", overrides={key: "x"})


@pytest.mark.parametrize(("key", "value"), [("a.b", "1\nlisteners=EVIL://0:1"), ("bad key", "1"), ("x", "a\rb")])
def test_override_that_would_inject_lines_is_rejected(key: str, value: str) -> None:
    with pytest.raises(ConfigError):
        render_server_properties(_topology(), 1, log_dirs="/d", overrides={key: value})


def test_topology_missing_a_proxy_is_rejected() -> None:
    topo = _topology()
    with pytest.raises(ConfigError, match="1->2"):
        Topology(topo.brokers, topo.zookeepers, tuple(p for p in topo.proxies if p.name != "1->2"))


def test_advertised_addresses_can_differ_from_listen_addresses_for_containers() -> None:
    """Containers: the proxy listens on 0.0.0.0 inside Toxiproxy; brokers dial `toxiproxy:port`."""
    brokers = tuple(broker_listeners(k, 2, f"broker-{k}", [9091, 9092, 9093], bind_host="0.0.0.0") for k in (1, 2))
    zks = (ZooKeeperEndpoint(1, "zookeeper-1", 2181),)
    routes = plan_routes(brokers, zks)
    proxies = tuple(ProxyRoute.of(r, HostPort("0.0.0.0", 30000 + i), HostPort("toxiproxy", 30000 + i))
                    for i, r in enumerate(routes))
    topo = Topology(brokers, zks, proxies)
    props = parse_properties(render_server_properties(topo, 1, log_dirs="/var/lib/kafka"))
    assert props["listeners"].startswith("FROM1://0.0.0.0:9091,")
    assert "FROM2://toxiproxy:" in props["advertised.listeners"]
    assert "FROM1://broker-1:9091" in props["advertised.listeners"]
    assert topo.proxy(NodeId.broker(2), NodeId.broker(1)).upstream == HostPort("broker-1", 9092)
    config = json.loads(render_toxiproxy_config(topo.proxies))
    assert {c["name"] for c in config} == {p.name for p in topo.proxies}
    assert all(c["enabled"] is True for c in config)


def test_zoo_cfg_lists_servers_only_for_an_ensemble() -> None:
    members = [ZooKeeperServer(i, "127.0.0.1", 2180 + i, 2880 + i, 3880 + i) for i in (1, 2, 3)]
    cfg = parse_properties(render_zoo_cfg(2, members, data_dir="/zk2", tick_ms=200, max_session_timeout_ms=20000))
    assert cfg["clientPort"] == "2182"
    assert cfg["server.3"] == "127.0.0.1:2883:3883"
    assert cfg["tickTime"] == "200"
    single = parse_properties(render_zoo_cfg(1, members[:1], data_dir="/zk1"))
    assert not any(k.startswith("server.") for k in single)


def test_allocate_ports_returns_distinct_ports() -> None:
    ports = allocate_ports(40)
    assert len(set(ports)) == 40


def test_links_without_a_proxy_are_refused_with_the_reason() -> None:
    topo = _topology(N, 1)
    with pytest.raises(ConfigError, match="reaches itself"):
        topo.proxy(NodeId.broker(2), NodeId.broker(2))
    with pytest.raises(ConfigError, match="ZooKeeper members never open"):
        topo.proxy(NodeId.zookeeper(1), NodeId.broker(1))  # link_name would say "1->1"
    with pytest.raises(ConfigError, match="client->zk1"):
        topo.proxy(CLIENT, NodeId.zookeeper(1))
