"""Resolves a fault's target expression to concrete nodes, links, consumer members or producers at the
moment the fault fires, from the engine's observed `ClusterState`. Which links exist (who dials whom) is
`harness.cluster.links.LinkGraph`, the definition the renderer plans its proxies from."""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.base import CLIENT, LinkSource, NodeId
from harness.cluster.links import LinkGraph
from harness.errors import HarnessError
from harness.faults.targets import LinkTarget, Target
from harness.history.state import ClusterState


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
class ProducerRef:
    """A producer workload driven by the harness: `producer:<id>`."""

    producer_id: str

    def __str__(self) -> str:
        return f"producer:{self.producer_id}"


def voter(topo: LinkGraph, node_id: int) -> NodeId:
    """KRaft voter `node_id` as a node (a broker when combined, else a dedicated controller)."""
    if node_id not in topo.voters:
        raise ResolutionError(f"controller:{node_id} is not a voter (voters {list(topo.voters)})")
    return topo.voter_node(node_id)


def resolve_node(t: Target, state: ClusterState, topo: LinkGraph | None = None) -> NodeId | MemberRef | ProducerRef:
    if t.kind == "producer":
        return ProducerRef(t.producer or "")
    if t.kind == "broker":
        return NodeId.broker(t.id or 0)
    if t.kind == "zookeeper":
        return NodeId.zookeeper(t.id or 0)
    if t.kind == "consumer":
        return MemberRef(t.group or "", t.id or 0)
    if t.kind == "controller" and t.id is not None:
        if topo is None or not topo.voters:
            raise ResolutionError(f"{t}: only a KRaft cluster has controller nodes")
        return voter(topo, t.id)
    if t.kind == "controller":
        if state.controller is None:
            raise ResolutionError(f"{t}: no controller is known right now (last epoch {state.controller_epoch})")
        if topo is not None and state.controller in topo.voters:  # KRaft; a migration's KRaft controller
            return voter(topo, state.controller)
        return NodeId.broker(state.controller)
    if t.kind == "leader":
        leader = state.leader(t.topic or "", t.partition or 0)
        if leader is None:
            raise ResolutionError(f"{t}: the partition has no leader right now")
        return NodeId.broker(leader)
    if t.kind == "idle-broker":
        idle = state.idle_brokers()
        if not idle:
            raise ResolutionError(f"{t}: every live broker leads a partition right now "
                                  f"(live {sorted(state.live_brokers)})")
        return NodeId.broker(idle[0])
    if t.kind == "coordinator":
        coord = state.coordinators.get(t.group or "")
        if coord is None:
            raise ResolutionError(f"{t}: the group's coordinator has not been observed yet")
        return NodeId.broker(coord)
    if t.kind == "txn-coordinator":
        return NodeId.broker(_txn_coordinator(t, state))
    raise ResolutionError(f"{t}: unresolved target kind {t.kind!r} (random-broker resolves in the schedule)")


TRANSACTION_STATE_TOPIC = "__transaction_state"


def transaction_state_partition(transactional_id: str, partitions: int) -> int:
    """The `__transaction_state` partition that owns `transactional_id`: Kafka's
    `TransactionStateManager.partitionFor`, `Utils.abs(transactionalId.hashCode) % partitions`, with Java's
    `String.hashCode` (31-based over UTF-16 code units, 32-bit overflow) and `Utils.abs` (MIN_VALUE -> 0)."""
    h = 0
    units = transactional_id.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


def _txn_coordinator(t: Target, state: ClusterState) -> int:
    seen = [p for (topic, p) in state.partitions if topic == TRANSACTION_STATE_TOPIC]
    if not seen:
        raise ResolutionError(f"{t}: {TRANSACTION_STATE_TOPIC} has not been observed yet (Kafka creates it at the "
                              "first InitProducerId)")
    partition = transaction_state_partition(t.transactional_id or "", max(seen) + 1)
    leader = state.leader(TRANSACTION_STATE_TOPIC, partition)
    if leader is None:
        raise ResolutionError(f"{t}: {TRANSACTION_STATE_TOPIC}/{partition} has no leader right now")
    return leader


def _node(t: Target, state: ClusterState, topo: LinkGraph) -> NodeId:
    node = resolve_node(t, state, topo)
    if not isinstance(node, NodeId) or node.role not in ("broker", "controller"):
        raise ResolutionError(f"{t}: expected a broker or a controller")
    return node


def resolve_link(link: LinkTarget, state: ClusterState, topo: LinkGraph) -> list[tuple[LinkSource, NodeId]]:
    """The directed proxy links a link expression names (`broker:1->zookeeper` is one per member)."""
    src: LinkSource = CLIENT if link.src is None else _node(link.src, state, topo)
    if link.dst.kind == "zookeeper":
        ids = topo.zookeepers if link.dst.id is None else (link.dst.id,)
        return [(src, NodeId.zookeeper(i)) for i in ids]
    dst = _node(link.dst, state, topo)
    if src == dst:
        raise ResolutionError(f"{link}: both ends resolve to {dst}; a node has no link to itself")
    if isinstance(src, NodeId) and not topo.dials(src, dst):
        raise ResolutionError(f"{link}: {src} never dials {dst}: {topo.refusal(src, dst)}; so that link has no "
                              f"proxy, cut {dst}->{src} instead")
    return [(src, dst)]


def isolate_links(node: NodeId, topo: LinkGraph, *, zookeeper_only: bool = False) -> list[tuple[LinkSource, NodeId]]:
    """Every proxied link of `node` (a broker or a KRaft controller): to ZooKeeper, and (unless zookeeper_only)
    to and from every other node that it dials or that dials it, and from clients if they dial it."""
    zookeepers = [NodeId.zookeeper(z) for z in topo.zookeepers]
    out: list[tuple[LinkSource, NodeId]] = [(node, zk) for zk in zookeepers if topo.dials(node, zk)]
    if zookeeper_only:
        return out
    for other in topo.nodes():
        if other.role != "zookeeper":
            out += [pair for pair in ((node, other), (other, node)) if topo.dials(*pair)]
    return out + ([(CLIENT, node)] if topo.dials(CLIENT, node) else [])


def quorum_links(node: NodeId, topo: LinkGraph) -> list[tuple[LinkSource, NodeId]]:
    """The proxied links between KRaft voter `node` and the other voters, both ways: the voter is cut off from the
    quorum while brokers and clients still reach it (Raft's partitioned leader, KIP-595's check quorum)."""
    voters = topo.voter_nodes()
    if node not in voters:
        raise ResolutionError(f"{node} is not a KRaft voter (voters {[str(v) for v in voters]}); only a voter can be "
                              "cut off from the other voters")
    return [pair for other in voters if other != node for pair in ((node, other), (other, node)) if topo.dials(*pair)]


def partition_links(groups: tuple[tuple[Target, ...], ...], one_way: bool,
                    topo: LinkGraph | None = None) -> list[tuple[LinkSource, NodeId]]:
    """Links between nodes of different groups, each cut at the proxy of whichever side dials the other:
    ZooKeeper never dials brokers and KRaft controllers never dial brokers, so a cut between those is the
    broker's proxy, whichever way the partition points; ZooKeeper members reach each other directly (no
    proxy), so cuts between them are not possible."""
    topo = topo or LinkGraph((), ())
    nodes = [[voter(topo, t.id or 0) if t.role == "controller" else NodeId(t.role, t.id or 0)  # type: ignore[arg-type]
              for t in g] for g in groups]
    out: list[tuple[LinkSource, NodeId]] = []
    for i, gi in enumerate(nodes):
        for j, gj in enumerate(nodes):
            if i == j or (one_way and j < i):
                continue
            for a in gi:
                for b in gj:
                    pair: tuple[LinkSource, NodeId] | None = (
                        (a, b) if topo.dials(a, b) else (b, a) if topo.dials(b, a) else None)
                    if pair is not None and pair not in out:
                        out.append(pair)
    return out
