"""Rendering for the ZooKeeper-to-KRaft migration (KIP-866): what Kafka's docs ("ZooKeeper to KRaft Migration",
docs/ops.html) add to each node's properties, over the topology's own wiring (`harness.cluster.render`,
`render_kraft`). Pure functions, as the rest of the rendering.

- A migration's KRaft controller is a dedicated controller (`render_kraft_controller`) with
  `zookeeper.metadata.migration.enable=true`, `zookeeper.connect` through its own proxies `c->zk*`, and
  `inter.broker.listener.name=FROM<c>`: the active controller sends the ZooKeeper-mode brokers LeaderAndIsr,
  UpdateMetadata and StopReplica over the listener that name gives, read from each broker's registration
  (`MigrationPropagator`, `ControllerChannelManager`), and Kafka 3.9 refuses a broker registration without it
  (KAFKA-16468). Each broker therefore has a `FROM<c>` listener per controller, advertised as proxy `c->k`.
- A broker in the `migrating` phase keeps its ZooKeeper-mode properties and adds the migration flag, the voters at
  the addresses it dials them at (its own proxies `k->c`), `controller.listener.names=CTRL<k>` (the listener each
  voter keeps for it) and that name in `listener.security.protocol.map`: a ZooKeeper-mode broker gets no automatic
  `CONTROLLER` mapping (`NodeToControllerChannelManager`).

docs/apache-kafka.md "The ZooKeeper-to-KRaft migration, by hand" has the procedure these properties were checked
with on Apache Kafka 3.9.2.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from harness.cluster.base import NodeId
from harness.cluster.render import (
    Topology,
    apply_overrides,
    controller_listener_name,
    listener_name,
    parse_properties,
    protocol_map,
)
from harness.cluster.render_kraft import render_kraft_controller, voters_of
from harness.cluster.security import ClusterSecurity
from harness.errors import ConfigError

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
HEADER = "the ZooKeeper-to-KRaft migration (KIP-866): harness.cluster.render_migration"
BrokerPhase = Literal["zookeeper", "migrating", "kraft"]
"""A broker's part in the migration: a ZooKeeper-mode broker, one that also registers with the KRaft controllers
(`migration_broker_properties`), or a KRaft broker (`kraft_overrides` over `render_kraft.render_kraft_broker`)."""


def kraft_overrides(broker_config: Mapping[str, str]) -> dict[str, str]:
    """The experiment's broker_config for a broker rolled into KRaft: without the ZooKeeper settings and
    `inter.broker.protocol.version`, which Kafka's migration docs remove at that roll (`metadata.version` rules)."""
    return {k: v for k, v in broker_config.items()
            if not k.startswith("zookeeper.") and k != "inter.broker.protocol.version"}


def migration_broker_properties(topology: Topology, broker_id: int,
                                security: ClusterSecurity | None = None) -> dict[str, str]:
    """What broker `broker_id` adds to its ZooKeeper-mode properties for the `migrating` phase."""
    node = NodeId.broker(broker_id)
    controller = controller_listener_name(node)
    return {MIGRATION_FLAG: "true", "controller.quorum.voters": voters_of(topology, node),
            "controller.listener.names": controller,
            "listener.security.protocol.map": protocol_map(topology.data_listener_names(), security, [controller])}


def render_migration_controller(topology: Topology, node_id: int, *, log_dirs: str,
                                overrides: Mapping[str, str] | None = None, templates_dir: Path | None = None,
                                advertise_controllers: bool = True, security: ClusterSecurity | None = None) -> str:
    """A migration's KRaft controller `node_id`: a dedicated controller's properties plus the migration's."""
    if not topology.links.migrating:
        raise ConfigError(f"controller:{node_id}: this topology is no migration's (it needs ZooKeeper and dedicated "
                          "KRaft controllers)")
    text = render_kraft_controller(topology, node_id, log_dirs=log_dirs, overrides=overrides,
                                   templates_dir=templates_dir, advertise_controllers=advertise_controllers,
                                   security=security)
    node = NodeId.controller(node_id)
    inter_broker = listener_name(node_id)
    protocol = security.protocol if security is not None else "PLAINTEXT"
    mapped = parse_properties(text)["listener.security.protocol.map"]
    extra = {MIGRATION_FLAG: "true", "zookeeper.connect": topology.zookeeper_connect_of(node),
             "inter.broker.listener.name": inter_broker,
             "listener.security.protocol.map": f"{mapped},{inter_broker}:{protocol}"}
    return apply_overrides(text, extra, f"{node} server.properties", HEADER)
