"""Resolves a fault's target expression to concrete nodes, links or consumer members at the moment
the fault fires, from the engine's observed `ClusterState`."""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.base import CLIENT, LinkSource, NodeId
from harness.engine.state import ClusterState
from harness.errors import HarnessError
from harness.faults.targets import LinkTarget, Target


class ResolutionError(HarnessError):
    """A target names nothing right now (no controller, a leaderless partition, an unknown coordinator)."""


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A consumer-group member driven by the harness: `consumer:<group>/<index>`."""

    group: str
    index: int

    def __str__(self) -> str:
        return f"consumer:{self.group}/{self.index}"


@dataclass(frozen=True, slots=True)
class Topology:
    brokers: tuple[int, ...]
    zookeepers: tuple[int, ...]


def resolve_node(t: Target, state: ClusterState) -> NodeId | MemberRef:
    if t.kind == "broker":
        return NodeId.broker(t.id or 0)
    if t.kind == "zookeeper":
        return NodeId.zookeeper(t.id or 0)
    if t.kind == "consumer":
        return MemberRef(t.group or "", t.id or 0)
    if t.kind == "controller":
        if state.controller is None:
            raise ResolutionError(f"{t}: no controller is known right now (last epoch {state.controller_epoch})")
        return NodeId.broker(state.controller)
    if t.kind == "leader":
        leader = state.leader(t.topic or "", t.partition or 0)
        if leader is None:
            raise ResolutionError(f"{t}: the partition has no leader right now")
        return NodeId.broker(leader)
    if t.kind == "coordinator":
        coord = state.coordinators.get(t.group or "")
        if coord is None:
            raise ResolutionError(f"{t}: the group's coordinator has not been observed yet")
        return NodeId.broker(coord)
    raise ResolutionError(f"{t}: unresolved target kind {t.kind!r} (random-broker resolves in the schedule)")


def _broker(t: Target, state: ClusterState) -> NodeId:
    node = resolve_node(t, state)
    if not isinstance(node, NodeId) or node.role != "broker":
        raise ResolutionError(f"{t}: expected a broker")
    return node


def resolve_link(link: LinkTarget, state: ClusterState, topo: Topology) -> list[tuple[LinkSource, NodeId]]:
    """The directed proxy links a link expression names (`broker:1->zookeeper` is one per member)."""
    src: LinkSource = CLIENT if link.src is None else _broker(link.src, state)
    if link.dst.kind == "zookeeper":
        ids = topo.zookeepers if link.dst.id is None else (link.dst.id,)
        return [(src, NodeId.zookeeper(i)) for i in ids]
    dst = _broker(link.dst, state)
    if src == dst:
        raise ResolutionError(f"{link}: both ends resolve to {dst}; a broker has no link to itself")
    return [(src, dst)]


def isolate_links(broker: NodeId, topo: Topology, *, zookeeper_only: bool = False) -> list[tuple[LinkSource, NodeId]]:
    """Every link of `broker`: to ZooKeeper, and (unless zookeeper_only) to/from every broker and from clients."""
    out: list[tuple[LinkSource, NodeId]] = [(broker, NodeId.zookeeper(z)) for z in topo.zookeepers]
    if zookeeper_only:
        return out
    for other in topo.brokers:
        if other != broker.id:
            out += [(broker, NodeId.broker(other)), (NodeId.broker(other), broker)]
    out.append((CLIENT, broker))
    return out


def partition_links(groups: tuple[tuple[Target, ...], ...], one_way: bool) -> list[tuple[LinkSource, NodeId]]:
    """Links between nodes of different groups. ZooKeeper never dials brokers, so a cut between a broker
    and a ZooKeeper member is the broker's proxy to it, whichever way the partition points; ZooKeeper
    members reach each other directly (no proxy), so cuts between them are not possible."""
    nodes = [[NodeId(t.role, t.id or 0) for t in g] for g in groups]  # type: ignore[arg-type]
    out: list[tuple[LinkSource, NodeId]] = []
    for i, gi in enumerate(nodes):
        for j, gj in enumerate(nodes):
            if i == j or (one_way and j < i):
                continue
            for a in gi:
                for b in gj:
                    if a.role == "broker":
                        pair: tuple[LinkSource, NodeId] = (a, b)
                    elif b.role == "broker":
                        pair = (b, a)
                    else:
                        continue
                    if pair not in out:
                        out.append(pair)
    return out
