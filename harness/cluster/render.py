"""The link topology (one listener per source broker, one proxy per directed link) and the rendering
of the config files both backends start from: `server.properties` and a Toxiproxy proxy list (`zoo.cfg`:
`render_zookeeper`), from the templates in `compose/templates/`. Which links exist is not decided here:
`harness.cluster.links.LinkGraph` says (for the fault resolver too); this module gives them addresses.

Pure functions and frozen values: no processes, no sockets (ports come from `ports.allocate_ports`). See
DESIGN.md "Link-level faults: one listener per source".

Self-links: the ZooKeeper-mode controller does send requests to itself over its inter-broker
listener, but a node can always reach itself, so there is no `k->k` proxy. Broker k advertises
its own `FROMk` listener at its real address; every other `FROMk` (on broker j) is advertised as
proxy `k->j`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from types import MappingProxyType

from harness.cluster.base import CLIENT, LinkSource, NodeId, link_name
from harness.cluster.links import Channel, Dial, LinkGraph, quorum_link_name
from harness.cluster.security import ClusterSecurity
from harness.errors import ConfigError

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "compose" / "templates"
EXTERNAL = "EXTERNAL"

# Properties the topology owns: a spec's broker_config may not override them.
TOPOLOGY_KEYS = frozenset({
    "broker.id", "listeners", "advertised.listeners", "listener.security.protocol.map",
    "inter.broker.listener.name", "zookeeper.connect", "log.dirs", "log.dir",
    "node.id", "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names",
})
CONTROLLER = "CONTROLLER"
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")


def listener_name(source_broker: int) -> str:
    """The listener on every broker that carries traffic from broker `source_broker`: `FROM<k>`."""
    return f"FROM{source_broker}"


@dataclass(frozen=True, slots=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ZooKeeperEndpoint:
    """A ZooKeeper member's client address as the proxies (and observers) reach it."""

    id: int
    host: str
    client_port: int

    @property
    def address(self) -> HostPort:
        return HostPort(self.host, self.client_port)


@dataclass(frozen=True, slots=True)
class BrokerListeners:
    """Broker `broker_id`'s real listener ports: `FROM1…FROMN` and `EXTERNAL`.

    `host` is where proxies reach the broker (their upstream host); `bind_host` is what the broker
    binds to in `listeners=` (the same, except in containers where it binds 0.0.0.0).
    """

    broker_id: int
    host: str
    ports: Mapping[str, int]
    bind_host: str = ""

    def port(self, listener: str) -> int:
        try:
            return self.ports[listener]
        except KeyError as exc:
            raise ConfigError(f"broker:{self.broker_id} has no listener {listener!r}") from exc

    def address(self, listener: str) -> HostPort:
        return HostPort(self.host, self.port(listener))


def controller_listener_name(dialer: NodeId) -> str:
    """The listener on every KRaft voter that carries the quorum traffic of node `dialer`: `CTRL<id>`."""
    return f"CTRL{dialer.id}"


@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    """A KRaft voter's controller listeners: one per node that dials it (`CTRL<d>` for every broker and every
    dedicated controller, itself included), as brokers have one inter-broker listener per source. Kafka 4's
    nodes learn the quorum leader's endpoint for *their* controller listener name from the quorum (KIP-853
    endpoint discovery) and dial that, not the address in `controller.quorum.voters`; so each `CTRL<d>` is
    advertised as proxy `d->v` and traffic from d passes its own proxy whichever address d uses.
    `node` is `controller:<id>` (dedicated) or `broker:<id>` (combined); `host` is where proxies reach it."""

    node: NodeId
    host: str
    ports: Mapping[NodeId, int]
    bind_host: str = ""

    def port(self, dialer: NodeId) -> int:
        try:
            return self.ports[dialer]
        except KeyError as exc:
            raise ConfigError(f"{self.node} has no controller listener for {dialer}") from exc

    def address(self, dialer: NodeId) -> HostPort:
        return HostPort(self.host, self.port(dialer))

    @property
    def own(self) -> HostPort:
        """Its own listener: where it reaches itself, and where observers reach it (no proxy)."""
        return self.address(self.node)


@dataclass(frozen=True, slots=True)
class LinkRoute:
    """One directed link's channel to create a proxy for: name, endpoints, and the upstream it forwards to."""

    name: str
    src: LinkSource
    dst: NodeId
    upstream: HostPort
    channel: Channel = "data"


@dataclass(frozen=True, slots=True)
class ProxyRoute:
    """A created proxy: where Toxiproxy listens, where it forwards, and where the source dials it."""

    name: str
    src: LinkSource
    dst: NodeId
    upstream: HostPort
    listen: HostPort
    advertised: HostPort

    @staticmethod
    def of(route: LinkRoute, listen: HostPort, advertised: HostPort | None = None) -> ProxyRoute:
        return ProxyRoute(route.name, route.src, route.dst, route.upstream, listen, advertised or listen)

    def as_row(self) -> dict[str, str]:
        return {"name": self.name, "listen": str(self.listen), "upstream": str(self.upstream),
                "advertised": str(self.advertised)}


def broker_listeners(broker_id: int, brokers: int, host: str, ports: Sequence[int],
                     bind_host: str = "", controllers: Sequence[int] = ()) -> BrokerListeners:
    """Assign `ports` (N+1 of them, N+1+C in a migration) to `FROM1…FROMN`, `FROM<c>` for each of a migration's
    KRaft `controllers` (which send the ZooKeeper-mode brokers their orders), and `EXTERNAL` of one broker."""
    names = [listener_name(k) for k in (*range(1, brokers + 1), *controllers)] + [EXTERNAL]
    if len(ports) != len(names):
        raise ConfigError(
            f"broker:{broker_id} needs {len(names)} ports ({', '.join(names)}), got {len(ports)}")
    return BrokerListeners(broker_id, host, MappingProxyType(dict(zip(names, ports, strict=True))),
                           bind_host or host)


def link_graph(brokers: Sequence[BrokerListeners], zookeepers: Sequence[ZooKeeperEndpoint],
               controllers: Sequence[ControllerEndpoint] = ()) -> LinkGraph:
    """The members these endpoints make, for the one definition of who dials whom (`harness.cluster.links`)."""
    return LinkGraph(tuple(b.broker_id for b in brokers), tuple(z.id for z in zookeepers),
                     tuple(c.node.id for c in controllers), any(c.node.role == "broker" for c in controllers))


def plan_routes(
    brokers: Sequence[BrokerListeners], zookeepers: Sequence[ZooKeeperEndpoint],
    controllers: Sequence[ControllerEndpoint] = (),
) -> tuple[LinkRoute, ...]:
    """Every proxied link's proxy (`LinkGraph.links`): N*(N-1) broker links `k->j`, N*Z `k->zkI`, N
    `client->j`; in KRaft also each dialer's quorum link to every other voter."""
    by_broker = {b.broker_id: b for b in brokers}
    by_zookeeper = {z.id: z for z in zookeepers}
    by_voter = {c.node: c for c in controllers}
    routes: list[LinkRoute] = []
    for dial in link_graph(brokers, zookeepers, controllers).links():
        src = dial.src if isinstance(dial.src, NodeId) else None
        upstream = (by_voter[dial.dst].address(src) if src and dial.channel == "quorum"
                    else by_zookeeper[dial.dst.id].address if dial.channel == "zookeeper"
                    else by_broker[dial.dst.id].address(listener_name(src.id) if src else EXTERNAL))
        routes.append(LinkRoute(dial.name, dial.src, dial.dst, upstream, dial.channel))
    return tuple(routes)


@dataclass(frozen=True, slots=True)
class Topology:
    """Brokers' real listeners, ZooKeeper members, and every proxy between them."""

    brokers: tuple[BrokerListeners, ...]
    zookeepers: tuple[ZooKeeperEndpoint, ...]
    proxies: tuple[ProxyRoute, ...]
    controllers: tuple[ControllerEndpoint, ...] = ()
    """KRaft voters (empty in ZooKeeper mode)."""
    links: LinkGraph = field(init=False, repr=False, compare=False)
    """Who dials whom among these members (`harness.cluster.links`)."""
    _by_name: Mapping[str, ProxyRoute] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", MappingProxyType({p.name: p for p in self.proxies}))
        object.__setattr__(self, "links", link_graph(self.brokers, self.zookeepers, self.controllers))
        planned = plan_routes(self.brokers, self.zookeepers, self.controllers)
        missing = {r.name for r in planned} - set(self._by_name)
        if missing:
            raise ConfigError(f"topology lacks proxies for links: {', '.join(sorted(missing))}")

    def proxy(self, src: LinkSource, dst: NodeId) -> ProxyRoute:
        """The proxy of link `src->dst`. Only links a connection is opened on have one (`harness.cluster.links`):
        broker->broker (not to itself), broker->ZooKeeper, client->broker, and in KRaft dialer->voter."""
        if isinstance(src, NodeId) and not self.links.dials(src, dst):
            what = f"a link from {src}" if src.role == "zookeeper" else f"{src}->{dst}"
            hint = f"; cut {dst}->{src} instead" if self.links.dials(dst, src) and src.role != "zookeeper" else ""
            raise ConfigError(f"no proxy for {what}: {self.links.refusal(src, dst)}{hint}")
        return self._named(link_name(src, dst))

    def _named(self, name: str) -> ProxyRoute:
        try:
            return self._by_name[name]
        except KeyError as exc:
            raise ConfigError(f"no proxy for link {name!r}; links: {', '.join(self._by_name)}") from exc

    def proxies_between(self, src: LinkSource, dst: NodeId) -> tuple[ProxyRoute, ...]:
        """Every proxy carrying `src`'s traffic to `dst`, one per channel (`LinkGraph.proxied`): its data link,
        and in combined KRaft mode also its quorum link to a voter broker (`k->j.quorum`). A fault on the link
        acts on all of them."""
        channels = self.links.proxied(src, dst)
        if not channels:
            return (self.proxy(src, dst),)
        return tuple(self._named(Dial(src, dst, c).name) for c in channels)

    def voter_addresses(self, src: NodeId) -> dict[int, HostPort]:
        """Voter node id -> the address `src` dials it at: its own proxy to it, or itself directly."""
        return {voter.node.id: self.controller_advertised(voter)[src] for voter in self.controllers}

    def controller_advertised(self, voter: ControllerEndpoint) -> dict[NodeId, HostPort]:
        """Dialer -> where `voter` advertises the dialer's listener `CTRL<d>`: proxy `d->v`, or its own
        listener for itself."""
        return {d: voter.own if d == voter.node else self._by_name[quorum_link_name(d, voter.node)].advertised
                for d in voter.ports}

    def broker(self, broker_id: int) -> BrokerListeners:
        for b in self.brokers:
            if b.broker_id == broker_id:
                return b
        ids = [b.broker_id for b in self.brokers]
        raise ConfigError(f"no broker:{broker_id} in topology (brokers {ids})")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(str(self.proxy(CLIENT, NodeId.broker(b.broker_id)).advertised) for b in self.brokers)

    @property
    def zookeeper_connect(self) -> str:
        """Direct connect string (no proxy), for observers."""
        return ",".join(str(zk.address) for zk in self.zookeepers)

    def broker_zookeeper_connect(self, broker_id: int) -> str:
        """Broker `broker_id`'s connect string: its own proxies `k->zk1…`."""
        return self.zookeeper_connect_of(NodeId.broker(broker_id))

    def zookeeper_connect_of(self, src: NodeId) -> str:
        """The connect string of `src` (a broker, or a migration's KRaft controller): its own proxies `src->zk1…`."""
        return ",".join(str(self.proxy(src, NodeId.zookeeper(zk.id)).advertised) for zk in self.zookeepers)

    def data_sources(self) -> tuple[NodeId, ...]:
        """Who dials the brokers' data listeners `FROM<id>`: every broker, and in a migration every KRaft controller."""
        controllers = tuple(c.node for c in self.controllers) if self.links.migrating else ()
        return (*(NodeId.broker(b.broker_id) for b in self.brokers), *controllers)

    def data_listener_names(self) -> list[str]:
        """A broker's listeners in order: `FROM<id>` of each data source, then `EXTERNAL`."""
        return [listener_name(src.id) for src in self.data_sources()] + [EXTERNAL]

    def advertised_listeners(self, broker_id: int) -> dict[str, HostPort]:
        """Listener -> advertised address on broker j (FROMk: proxy `k->j`, also for a migration's controller k;
        EXTERNAL: `client->j`)."""
        me = self.broker(broker_id)
        out: dict[str, HostPort] = {}
        for src in self.data_sources():
            name = listener_name(src.id)
            if src == NodeId.broker(broker_id):
                out[name] = me.address(name)  # self-link: no proxy (see module docstring)
            else:
                out[name] = self.proxy(src, NodeId.broker(broker_id)).advertised
        out[EXTERNAL] = self.proxy(CLIENT, NodeId.broker(broker_id)).advertised
        return out


def load_template(name: str, templates_dir: Path | None = None) -> str:
    path = (templates_dir or TEMPLATES_DIR) / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config template {path}: {exc}") from exc


def check_property(key: str, value: str, where: str) -> None:
    """A property is one `key=value` line: reject keys and values that would break or add lines."""
    if not _KEY_RE.match(key):
        raise ConfigError(f"{where}: invalid property name {key!r}")
    if any(c in value for c in "\r\n\x00"):
        raise ConfigError(f"{where}: property {key!r} value contains a line break or NUL: {value!r}")


def parse_properties(text: str) -> dict[str, str]:
    """The `key=value` lines of a rendered properties file (comments and blanks skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        key, _, value = s.partition("=")
        out[key.strip()] = value.strip()
    return out


def apply_overrides(text: str, overrides: Mapping[str, str], where: str, header: str) -> str:
    """Replace overridden keys in place; append the others under a `# <header>` comment."""
    for key, value in overrides.items():
        check_property(key, value, where)
    pending = dict(overrides)
    lines: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s and s[0] not in "#!":
            key = s.partition("=")[0].strip()
            if key in pending:
                line = f"{key}={pending.pop(key)}"
        lines.append(line)
    if pending:
        lines += ["", f"# {header}"] + [f"{k}={v}" for k, v in pending.items()]
    return "\n".join(lines) + "\n"


SECURITY_HEADER = "security (cluster.security: harness.cluster.security)"


def protocol_map(names: Sequence[str], security: ClusterSecurity | None, controller: Sequence[str] = ()) -> str:
    """`listener.security.protocol.map` for data listeners `names` and KRaft controller listeners `controller`: every
    listener speaks the run's protocol (`ClusterSecurity.protocol`)."""
    protocol = security.protocol if security is not None else "PLAINTEXT"
    return ",".join(f"{name}:{protocol}" for name in [*names, *controller])


def with_security(text: str, security: ClusterSecurity | None, node: NodeId, names: Sequence[str],
                  controller: Sequence[str], where: str) -> str:
    """`text` with `node`'s security properties (`ClusterSecurity.node_properties`) under their own header."""
    if security is None:
        return text
    return apply_overrides(text, security.node_properties(node, names, controller), where, SECURITY_HEADER)


def render_server_properties(
    topology: Topology, broker_id: int, *, log_dirs: str, overrides: Mapping[str, str] | None = None,
    templates_dir: Path | None = None, security: ClusterSecurity | None = None,
) -> str:
    """Broker `broker_id`'s `server.properties`: template defaults, topology, security, then the spec's
    overrides."""
    overrides = dict(overrides or {})
    owned = sorted(TOPOLOGY_KEYS & set(overrides))
    if owned:
        raise ConfigError(f"broker_config sets {', '.join(owned)}, which the link topology owns "
                          "(DESIGN.md 'Link-level faults'); remove them from the experiment")
    me = topology.broker(broker_id)
    names = topology.data_listener_names()
    advertised = topology.advertised_listeners(broker_id)
    n = len(topology.brokers)
    values = {
        "broker_id": str(broker_id),
        "brokers": str(n),
        "listeners": ",".join(f"{ln}://{me.bind_host}:{me.port(ln)}" for ln in names),
        "advertised_listeners": ",".join(f"{ln}://{advertised[ln]}" for ln in names),
        "listener_security_protocol_map": protocol_map(names, security),
        "inter_broker_listener_name": listener_name(broker_id),
        "zookeeper_connect": topology.broker_zookeeper_connect(broker_id),
        "log_dirs": log_dirs,
        "internal_replication_factor": str(min(3, n)),
        "internal_min_isr": str(min(2, n)),
    }
    for key, value in values.items():
        check_property(key, value, f"broker:{broker_id} server.properties")
    try:
        text = Template(load_template("server.properties.tmpl", templates_dir)).substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"server.properties.tmpl: bad placeholder {exc}") from exc
    text = with_security(text, security, NodeId.broker(broker_id), names, (), f"broker:{broker_id} security")
    return apply_overrides(text, overrides, f"broker:{broker_id} broker_config",
                           "overrides from the experiment's cluster.broker_config")


def render_toxiproxy_config(proxies: Sequence[ProxyRoute]) -> str:
    """The proxy list as Toxiproxy's `-config` JSON (name, listen, upstream, enabled)."""
    return json.dumps([{"name": p.name, "listen": str(p.listen), "upstream": str(p.upstream), "enabled": True}
                       for p in proxies], indent=2) + "\n"
