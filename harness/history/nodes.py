"""Who a run names: the cluster's nodes (`NodeId`), the harness's clients (`ClientRef`) and the directed links
between them (`LinkRef`), one type each, shared by the cluster that owns the nodes, the faults that target them
and the history that records them. Each renders as the history writes it and `parse_target` reads it back."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

NodeRole = Literal["broker", "zookeeper", "controller"]
CONTROLLER_ID_BASE = 100
"""A dedicated KRaft controller `controller:c` is Kafka node 100+c (`controller:101` is the first), so node
ids are unique across brokers (1..9) and controllers, and the history names nodes by their Kafka id."""


def voter_ids(controllers: int, combined: bool) -> tuple[int, ...]:
    """A KRaft quorum's node ids: brokers 1..controllers when combined, else 101..100+controllers."""
    base = 0 if combined else CONTROLLER_ID_BASE
    return tuple(base + c for c in range(1, controllers + 1))


@dataclass(frozen=True, slots=True, order=True)
class NodeId:
    """A cluster member: `broker:2`, `zookeeper:1`, `controller:101` (a broker's and a controller's id is its
    Kafka node.id; ZooKeeper members are 1-based)."""

    role: NodeRole
    id: int

    def __str__(self) -> str:
        return f"{self.role}:{self.id}"

    def to_json(self) -> str:
        return str(self)

    @staticmethod
    def broker(broker_id: int) -> NodeId:
        return NodeId("broker", broker_id)

    @staticmethod
    def zookeeper(zk_id: int) -> NodeId:
        return NodeId("zookeeper", zk_id)

    @staticmethod
    def controller(node_id: int) -> NodeId:
        return NodeId("controller", node_id)


@dataclass(frozen=True, slots=True, order=True)
class ClientRef:
    """One of the harness's clients a fault targets: `consumer:<group>/<index>`, `producer:<id>`."""

    role: str
    name: str

    def __str__(self) -> str:
        return f"{self.role}:{self.name}"

    def to_json(self) -> str:
        return str(self)


@dataclass(frozen=True, slots=True, order=True)
class LinkRef:
    """A directed link (a Toxiproxy proxy): from a node or the clients (`client`) to a node. Renders as the
    proxy's name: `1->2`, `1->zk1`, `client->3`, `101->102` (node ids of brokers and controllers never clash,
    see `CONTROLLER_ID_BASE`)."""

    src: NodeId | None
    """None: the clients."""
    dst: NodeId

    def __str__(self) -> str:
        return f"{_end(self.src)}->{_end(self.dst)}"

    def to_json(self) -> str:
        return str(self)


Target: TypeAlias = NodeId | ClientRef | LinkRef
_ZK_END = re.compile(r"zk(\d+)")
_NODE_ROLES: tuple[NodeRole, ...] = ("broker", "zookeeper", "controller")


def _end(node: NodeId | None) -> str:
    if node is None:
        return "client"
    return f"zk{node.id}" if node.role == "zookeeper" else str(node.id)


def _link_end(text: str) -> NodeId:
    m = _ZK_END.fullmatch(text)
    if m:
        return NodeId("zookeeper", int(m.group(1)))
    node = int(text)
    return NodeId("controller" if node > CONTROLLER_ID_BASE else "broker", node)


def parse_target(text: str) -> Target:
    """A target as the history names it, back into a `NodeId`, `ClientRef` or `LinkRef` (a link end's role is
    read from its id: `zkN` a ZooKeeper member, above 100 a dedicated controller, else a broker)."""
    if "->" in text:
        src, dst = text.split("->", 1)
        return LinkRef(None if src == "client" else _link_end(src), _link_end(dst))
    role, _, ident = text.partition(":")
    for node_role in _NODE_ROLES:
        if role == node_role and ident.lstrip("-").isdigit():
            return NodeId(node_role, int(ident))
    return ClientRef(role, ident)
