"""Faults that cut links: `isolate` and `isolate_zookeeper` (a node's links), `partition` (the links between groups
of nodes) and `cut` (one directed link). A cut disables the link's Toxiproxy proxy (open connections close, new
ones are refused); cuts are reference-counted by the injector (`FaultEnv.cut_link`), so overlapping faults that
cut one link heal it only when the last one ends. Which links exist is `harness.cluster.links.LinkGraph`'s.

Their effect: the links cut, and for the node faults among them (isolate, partition) the nodes cut off as a
whole (`unreachable`), each with the roles of the peers it lost (`client` when clients cannot reach it)."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import CLIENT, LinkSource, NodeId, link_name
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, ParamSpec, TargetSlot, attempt, effect
from harness.faults.resolve import isolate_links, partition_links, quorum_links, resolve_link, resolve_node, voter

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault


def _spec(name: str, help: str, targets: set[TargetSlot], params: tuple[ParamSpec, ...], exclusive: str,
          heal: str, process: str, containers: str) -> KindSpec:
    return KindSpec(name, help, frozenset(targets), params, "required", exclusive, heal,
                    MappingProxyType({"process": process, "containers": containers}))


def _role(end: LinkSource) -> str:
    return CLIENT if isinstance(end, str) else end.role


def cut_off(node: NodeId, links: list[tuple[LinkSource, NodeId]]) -> dict[str, Any]:
    """`node` as an `unreachable` entry: the roles at the other end of the cut links it is an end of."""
    peers = {_role(d) if s == node else _role(s) for s, d in links if node in (s, d)}
    return {"role": node.role, "id": node.id, "from": sorted(peers)}


@dataclass(frozen=True, slots=True)
class _Cutting:
    """Cuts the links `_links` names when the fault fires; the heal re-enables them."""

    spec: KindSpec

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        for src, dst in self._links(fault, env, done):
            env.cut_link(src, dst)
            done.cut.append((src, dst))

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        return attempt([(f"enable {link_name(s, d)}", lambda s=s, d=d: env.uncut_link(s, d))  # type: ignore[misc]
                        for s, d in done.cut])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        nodes = [n for n in done.nodes if isinstance(n, NodeId)]
        return effect(nodes=nodes, links=done.cut, unreachable=[cut_off(n, done.cut) for n in nodes])

    def _links(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> list[tuple[LinkSource, NodeId]]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Isolate(_Cutting):
    """Every link of a broker or a KRaft controller, or (`zookeeper_only`) its links to ZooKeeper, or (param
    `from: voters`) a KRaft voter's links to the other voters."""

    zookeeper_only: bool = False

    def _links(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> list[tuple[LinkSource, NodeId]]:
        assert fault.target is not None
        node = resolve_node(fault.target, env.state, env.topology)
        if not isinstance(node, NodeId):
            raise HarnessError(f"{fault.describe()}: isolate needs a broker or a controller, got {node}")
        done.targets.append(str(node))
        done.nodes.append(node)
        if fault.spec.params.get("from") == "voters":
            return quorum_links(node, env.topology)
        return isolate_links(node, env.topology, zookeeper_only=self.zookeeper_only)


class Partition(_Cutting):
    """Every directed link between nodes of different groups (only from earlier to later groups with one_way)."""

    def _links(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> list[tuple[LinkSource, NodeId]]:
        groups = fault.spec.groups
        done.targets += [str(n) for g in groups for n in g]
        done.nodes += [voter(env.topology, t.id or 0) if t.role == "controller" else NodeId(t.role, t.id or 0)  # type: ignore[arg-type]
                       for g in groups for t in g]
        return partition_links(groups, bool(fault.spec.params.get("one_way")), env.topology)


class Cut(_Cutting):
    """One directed link (`broker:1->zookeeper` is one per member)."""

    def _links(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> list[tuple[LinkSource, NodeId]]:
        assert fault.link is not None
        links = resolve_link(fault.link, env.state, env.topology)
        done.targets += [link_name(s, d) for s, d in links]
        return links


LINK_KINDS: tuple[_Cutting, ...] = (
    Isolate(_spec("isolate", "Cut every link of a node. A broker: to and from every other broker, to ZooKeeper or "
                  "the KRaft voters, and from clients. A KRaft controller: to and from the other voters, and from "
                  "the brokers (it loses the quorum leadership after controller.quorum.fetch.timeout.ms).",
                  {"broker", "controller"},
                  (ParamSpec("from", "choice", "what the node is cut off from: every peer and client (all), or, for a "
                             "KRaft controller, only the other voters (voters: brokers and clients still reach it, "
                             "Raft's partitioned leader)", default="all", choices=("all", "voters")),),
                  "links", "re-enables the links",
                  "disables every proxy whose name starts or ends with the broker",
                  "same, on the toxiproxy container")),
    Isolate(_spec("isolate_zookeeper", "Cut a broker's links to every ZooKeeper member: its session expires after "
                  "the session timeout (controller moves, partitions it leads get new leaders).",
                  {"broker"}, (), "links", "re-enables the links", "disables proxies k->zk*",
                  "same, on the toxiproxy container"), zookeeper_only=True),
    Partition(_spec("partition", "Network partition between groups of nodes: every directed link between nodes of "
                    "different groups is cut (only from earlier to later groups with one_way).", {"groups"},
                    (ParamSpec("one_way", "bool", "cut only links from a group to the groups listed after it",
                               default=False),), "links", "re-enables the links",
                    "disables the proxies of the cut links", "same, on the toxiproxy container")),
    Cut(_spec("cut", "Cut one directed link (disable its proxy: open connections close, new ones are "
              "refused).", {"link"}, (), "toxic:cut", "re-enables the proxy",
              "disables the link's proxy", "same, on the toxiproxy container")),
)
"""The link-cutting kinds, in `kafka-chaos faults` order."""
