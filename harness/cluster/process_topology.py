"""The process backend's link topology: every listener port and every Toxiproxy proxy, drawn at once.

Broker listener ports, KRaft CONTROLLER ports and proxy ports come from one `allocate_ports` draw, all
distinct: a proxy left to bind port 0 could be handed a port just released for a broker. Every proxy
exists before any node starts (docs/design.md "Link-level faults: one listener per source").
"""

from __future__ import annotations

from types import MappingProxyType

from harness.cluster.base import ClusterSpec
from harness.cluster.links import LinkGraph
from harness.cluster.ports import allocate_ports
from harness.cluster.process_toxiproxy import ToxiproxyProcess
from harness.cluster.render import (
    ControllerEndpoint,
    HostPort,
    ProxyRoute,
    Topology,
    ZooKeeperEndpoint,
    broker_listeners,
    plan_routes,
)
from harness.toxiproxy.client import ProxySpec


def route_count(spec: ClusterSpec) -> int:
    """Proxies of a cluster: one per proxied link and channel (`LinkGraph.links`)."""
    return len(LinkGraph.of(spec).links())


def process_topology(spec: ClusterSpec, zks: tuple[ZooKeeperEndpoint, ...], toxiproxy: ToxiproxyProcess,
                     host: str) -> Topology:
    """Draw the ports, create every proxy in `toxiproxy`, and return the topology they make."""
    n = spec.brokers
    graph = LinkGraph.of(spec)
    voters, dialers = graph.voter_nodes(), graph.quorum_dialers()
    sources = graph.voters if graph.migrating else ()  # a migration's controllers dial the brokers too
    per_broker = n + 1 + len(sources)
    listener_ports = n * per_broker + len(voters) * len(dialers)
    ports = allocate_ports(listener_ports + route_count(spec), host)
    brokers = tuple(broker_listeners(k, n, host, ports[(k - 1) * per_broker:k * per_broker], controllers=sources)
                    for k in range(1, n + 1))
    first = n * per_broker
    controllers = tuple(
        ControllerEndpoint(v, host, MappingProxyType(dict(zip(
            dialers, ports[first + i * len(dialers):first + (i + 1) * len(dialers)], strict=True))))
        for i, v in enumerate(voters))
    routes = plan_routes(brokers, zks, controllers)
    created = toxiproxy.create_proxies([ProxySpec(r.name, str(r.upstream), listen=f"{host}:{port}")
                                        for r, port in zip(routes, ports[listener_ports:], strict=True)])
    proxies = tuple(ProxyRoute.of(r, HostPort(host, created[r.name].listen_port)) for r in routes)
    return Topology(brokers, zks, proxies, controllers)
