"""KRaft rendering: each node's `server.properties` (brokers, dedicated controllers, combined nodes) from
`compose/templates/kraft-*.properties.tmpl`, the cluster id `kafka-storage format` writes, and the
`kafka.tools.StorageTool format` command line.

Pure functions over the `Topology` of `harness.cluster.render` (which plans the quorum proxies): every
node names the voters at the addresses it dials them at (`Topology.voter_addresses`), so the quorum's
directed links are separate proxies as the brokers' links are (docs/design.md, "KRaft").
"""

from __future__ import annotations

import base64
import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template

from harness.cluster.base import NodeId
from harness.cluster.render import (
    TOPOLOGY_KEYS,
    ControllerEndpoint,
    Topology,
    apply_overrides,
    check_property,
    controller_listener_name,
    listener_name,
    load_template,
    protocol_map,
    with_security,
)
from harness.cluster.security import ClusterSecurity
from harness.errors import ConfigError

_OVERRIDES_HEADER = "overrides from the experiment's cluster.broker_config"


def kraft_cluster_id(seed: int) -> str:
    """A cluster id (16 bytes, base64url without padding: 22 characters, as `kafka-storage random-uuid`
    prints) derived from the experiment's seed, so a run is reproducible down to its cluster id. As Kafka's
    `Uuid.randomUuid` does, it never starts with "-" (`kafka-storage format -t -W...` reads that as an option and
    exits 1: 1.4% of seeds did, found by the false-fail hunt) and is never a reserved id (all zeros, or 1)."""
    for attempt in itertools.count():
        salt = f"/{attempt}" if attempt else ""
        digest = hashlib.sha256(f"kafka-chaos/cluster-id/{seed}{salt}".encode()).digest()[:16]
        text = base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
        if not text.startswith("-") and int.from_bytes(digest, "big") > 1:
            return text
    raise AssertionError("unreachable")


def voters_of(topology: Topology, node: NodeId) -> str:
    """`controller.quorum.voters` of `node`: each voter at the address `node` dials it at."""
    return ",".join(f"{vid}@{addr}" for vid, addr in sorted(topology.voter_addresses(node).items()))


def _controller_listeners(topology: Topology, voter: ControllerEndpoint) -> tuple[list[str], list[str], list[str]]:
    """A voter's controller listeners: (listeners, advertised listeners, names with its own first)."""
    advertised = topology.controller_advertised(voter)
    dialers = sorted(voter.ports, key=lambda d: (d != voter.node, d))
    bind = voter.bind_host or voter.host
    return ([f"{controller_listener_name(d)}://{bind}:{voter.port(d)}" for d in dialers],
            [f"{controller_listener_name(d)}://{advertised[d]}" for d in dialers],
            [controller_listener_name(d) for d in dialers])


def _check_overrides(overrides: Mapping[str, str], where: str) -> None:
    owned = sorted(TOPOLOGY_KEYS & set(overrides))
    if owned:
        raise ConfigError(f"{where}: broker_config sets {', '.join(owned)}, which the link topology owns "
                          "(docs/design.md 'Link-level faults'); remove them from the experiment")


@dataclass(frozen=True, slots=True)
class _Secured:
    """What `with_security` needs of one node: the run's security, the node, its data and controller listeners."""

    security: ClusterSecurity | None
    node: NodeId
    names: Sequence[str]
    controller: Sequence[str]


def _render(template: str, values: dict[str, str], where: str, overrides: Mapping[str, str],
            templates_dir: Path | None, secured: _Secured) -> str:
    for key, value in values.items():
        check_property(key, value, where)
    try:
        text = Template(load_template(template, templates_dir)).substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"{template}: bad placeholder {exc}") from exc
    text = with_security(text, secured.security, secured.node, secured.names, secured.controller,
                         f"{where} security")
    return apply_overrides(text, overrides, f"{where} broker_config", _OVERRIDES_HEADER)


def render_kraft_broker(topology: Topology, broker_id: int, *, log_dirs: str,
                        overrides: Mapping[str, str] | None = None, templates_dir: Path | None = None,
                        advertise_controllers: bool = True, security: ClusterSecurity | None = None) -> str:
    """Broker `broker_id`'s properties; a combined voter also has its controller listeners `CTRL<d>`, advertised
    only where the release has controller endpoint discovery (`advertise_controllers`, Kafka 3.9+, KIP-853:
    before it a broker may not advertise a controller listener, and every node dials the voters at the
    addresses of its own `controller.quorum.voters`, which are its own proxies already). A broker rolled into KRaft
    during a migration keeps its `FROM<c>` listeners: until the controllers leave the migration, the active one
    sends the ZooKeeper-mode brokers LeaderAndIsr naming every leader at its `inter.broker.listener.name`, KRaft
    brokers' included (`MigrationPropagator`), and one leader without it wedges the propagation (docs/apache-kafka.md,
    "The ZooKeeper-to-KRaft migration, by hand")."""
    overrides = dict(overrides or {})
    where = f"broker:{broker_id} server.properties"
    _check_overrides(overrides, where)
    node = NodeId.broker(broker_id)
    me = topology.broker(broker_id)
    names = topology.data_listener_names()  # in a migration also FROM<c>: see the docstring
    advertised = topology.advertised_listeners(broker_id)
    listeners = [f"{ln}://{me.bind_host}:{me.port(ln)}" for ln in names]
    published = [f"{ln}://{advertised[ln]}" for ln in names]
    controller_names = [controller_listener_name(node)]
    voter = next((c for c in topology.controllers if c.node == node), None)
    if voter is not None:
        own, adv, controller_names = _controller_listeners(topology, voter)
        listeners += own
        if advertise_controllers:
            published += adv
    n = len(topology.brokers)
    values = {
        "node_id": str(broker_id), "brokers": str(n),
        "process_roles": "broker,controller" if voter is not None else "broker",
        "voters": voters_of(topology, node),
        "listeners": ",".join(listeners),
        "advertised_listeners": ",".join(published),
        "controller_listener_names": ",".join(controller_names),
        "listener_security_protocol_map": protocol_map(names, security, controller_names),
        "inter_broker_listener_name": listener_name(broker_id),
        "log_dirs": log_dirs,
        "internal_replication_factor": str(min(3, n)),
        "internal_min_isr": str(min(2, n)),
    }
    secured = _Secured(security, node, names, controller_names)
    return _render("kraft-broker.properties.tmpl", values, where, overrides, templates_dir, secured)


def render_kraft_controller(topology: Topology, node_id: int, *, log_dirs: str,
                            overrides: Mapping[str, str] | None = None, templates_dir: Path | None = None,
                            advertise_controllers: bool = True, security: ClusterSecurity | None = None) -> str:
    """Dedicated controller `node_id`'s properties (the experiment's broker_config applies to every node).
    Without `advertise_controllers` (releases before 3.9, KIP-853) no advertised.listeners is written: those
    releases refuse one on a controller ("must be empty when process.roles=controller")."""
    overrides = dict(overrides or {})
    where = f"controller:{node_id} server.properties"
    _check_overrides(overrides, where)
    node = NodeId.controller(node_id)
    me = next((c for c in topology.controllers if c.node == node), None)
    if me is None:
        raise ConfigError(f"{node} is not a voter of this topology (voters "
                          f"{[str(c.node) for c in topology.controllers]})")
    listeners, advertised, names = _controller_listeners(topology, me)
    values = {
        "node_id": str(node_id), "voter_ids": ",".join(str(c.node.id) for c in topology.controllers),
        "voters": voters_of(topology, node),
        "listeners": ",".join(listeners),
        "advertised_listeners": f"advertised.listeners={','.join(advertised)}" if advertise_controllers else
        "# advertised.listeners: none before Kafka 3.9 (KIP-853); nodes dial controller.quorum.voters",
        "controller_listener_names": ",".join(names),
        "listener_security_protocol_map": protocol_map((), security, names),
        "log_dirs": log_dirs,
    }
    secured = _Secured(security, node, (), names)
    return _render("kraft-controller.properties.tmpl", values, where, overrides, templates_dir, secured)


def storage_format_args(cluster_id: str, properties: str, features: Mapping[str, int] | None = None,
                        security: ClusterSecurity | None = None) -> list[str]:
    """The arguments after `java ... -cp <libs>` that format one node's log directory (what
    `bin/kafka-storage.sh format -t <id> -c <file>` runs); `--ignore-formatted` keeps a restart harmless; each of
    `features` is a `--feature name=level` (Kafka 3.8+); a SCRAM run's users are `--add-scram` (Kafka 3.5+)."""
    args = ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", properties, "--ignore-formatted"]
    for name, level in sorted((features or {}).items()):
        args += ["--feature", f"{name}={level}"]
    return args + (security.format_scram_args() if security is not None else [])
