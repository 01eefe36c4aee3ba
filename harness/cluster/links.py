"""Which directed links a cluster has: who dials whom, and over which channel. The one definition that the
renderer (`harness.cluster.render.plan_routes`: one Toxiproxy proxy per proxied link) and the fault resolver
(`harness.faults.resolve`: the links an isolate, a partition or a link fault cuts) both ask.

A link `src->dst` exists when `src` opens connections to `dst` (docs/design.md "Link-level faults: one
listener per source", "KRaft"):

- broker -> every other broker (`data`: replication and the ZooKeeper-mode controller's requests, over the
  destination's `FROM<src>` listener);
- broker -> every ZooKeeper member (`zookeeper`);
- client -> every broker (`client`, over `EXTERNAL`);
- KRaft: every broker and every dedicated controller -> every other voter (`quorum`). A combined voter is a
  broker, so broker k reaches voter broker j over two channels, `data` and `quorum`: two proxies, one link;
- ZooKeeper member <-> every other member (`peer`): real connections, but not proxied, so no fault cuts them
  (pause or kill a member instead).

- the ZooKeeper-to-KRaft migration (a ZooKeeper cluster with dedicated KRaft controllers, KIP-866): every
  controller -> every ZooKeeper member (`zookeeper`: the metadata copy and the dual writes) and -> every broker
  (`data`: while the brokers are in ZooKeeper mode the active controller sends them LeaderAndIsr, UpdateMetadata
  and StopReplica over the destination's `FROM<controller>` listener), besides the quorum links above.

Nobody dials itself, ZooKeeper never dials a broker, and outside a migration KRaft controllers never dial brokers
(brokers fetch metadata from the controllers). The rule reads only the roles (and, for `quorum` to a broker,
whether it is a voter; for a controller's links, whether the cluster is migrating), so it answers for any two
nodes; `links()` lists every proxied link of this cluster's members.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from harness.cluster.base import CLIENT, ClusterSpec, LinkSource, NodeId, link_name

Channel = Literal["data", "zookeeper", "client", "quorum", "peer"]
PROXIED: tuple[Channel, ...] = ("quorum", "data", "zookeeper", "client")
"""The channels that pass a Toxiproxy proxy."""
_PLAN_ORDER: Mapping[Channel, int] = MappingProxyType({"quorum": 0, "client": 2})
"""`links()` order: quorum links first, clients' last, the rest (per source broker) between."""

_RULES: Mapping[tuple[str, str], Channel] = MappingProxyType({
    ("broker", "broker"): "data",
    ("broker", "zookeeper"): "zookeeper",
    ("client", "broker"): "client",
    ("broker", "controller"): "quorum",
    ("controller", "controller"): "quorum",
    ("zookeeper", "zookeeper"): "peer",
})
"""(dialer role, dialled role) -> the channel; a pair not here is never dialled."""
_MIGRATION_RULES: Mapping[tuple[str, str], Channel] = MappingProxyType({
    ("controller", "zookeeper"): "zookeeper",
    ("controller", "broker"): "data",
})
"""What a migration's KRaft controllers dial besides the quorum (`LinkGraph.migrating`)."""


QUORUM_SUFFIX = ".quorum"
"""Combined KRaft nodes: the proxy of broker k's quorum traffic to voter j is `k->j.quorum`, beside the
data link `k->j` (a voter listens on FROMk for replication and on CTRLk for the quorum)."""


def quorum_link_name(src: LinkSource, voter: NodeId) -> str:
    """The proxy name of `src`'s quorum traffic to `voter`: `1->101`, `101->102`, or `1->2.quorum` when the
    voter is a combined broker (whose data link `1->2` is another proxy)."""
    return link_name(src, voter) + (QUORUM_SUFFIX if voter.role == "broker" else "")


@dataclass(frozen=True, slots=True)
class Dial:
    """One directed link on one channel: `src` opens connections to `dst`."""

    src: LinkSource
    dst: NodeId
    channel: Channel

    @property
    def name(self) -> str:
        """Its proxy's name: `link_name`, or `quorum_link_name` for quorum traffic."""
        return quorum_link_name(self.src, self.dst) if self.channel == "quorum" else link_name(self.src, self.dst)


def _role(src: LinkSource) -> str:
    return CLIENT if isinstance(src, str) else src.role


@dataclass(frozen=True, slots=True)
class LinkGraph:
    """A cluster's members: brokers, ZooKeeper members, and KRaft voters (`voters`, with `combined` saying
    whether they are brokers or dedicated controllers); and, by the rule above, the links between them."""

    brokers: tuple[int, ...]
    zookeepers: tuple[int, ...]
    voters: tuple[int, ...] = ()
    combined: bool = False

    @staticmethod
    def of(spec: ClusterSpec) -> LinkGraph:
        """The members `spec` brings up (no ZooKeeper in KRaft mode)."""
        return LinkGraph(tuple(range(1, spec.brokers + 1)),
                         () if spec.kraft else tuple(range(1, spec.zookeepers + 1)),
                         spec.voter_ids(), spec.combined)

    @property
    def migrating(self) -> bool:
        """A ZooKeeper cluster with dedicated KRaft controllers: the ZooKeeper-to-KRaft migration's cluster."""
        return bool(self.zookeepers and self.voters) and not self.combined

    def voter_node(self, node_id: int) -> NodeId:
        """KRaft voter `node_id` as a node: a broker when combined, else a dedicated controller."""
        return NodeId.broker(node_id) if self.combined else NodeId.controller(node_id)

    def voter_nodes(self) -> tuple[NodeId, ...]:
        return tuple(self.voter_node(v) for v in self.voters)

    def nodes(self) -> tuple[NodeId, ...]:
        """Every node: brokers, dedicated controllers, ZooKeeper members."""
        controllers = () if self.combined else self.voter_nodes()
        return (*(NodeId.broker(b) for b in self.brokers), *controllers,
                *(NodeId.zookeeper(z) for z in self.zookeepers))

    def quorum_dialers(self) -> tuple[NodeId, ...]:
        """The nodes that dial the voters: every broker and every dedicated controller (each voter has one
        controller listener per dialer, its own included)."""
        if not self.voters:
            return ()
        return tuple(n for n in self.nodes() if _RULES.get((n.role, "controller")) == "quorum")

    def channels(self, src: LinkSource, dst: NodeId) -> tuple[Channel, ...]:
        """The channels `src` dials `dst` over (empty: never)."""
        if src == dst:
            return ()
        channel = _RULES.get((_role(src), dst.role))
        if channel is None and self.migrating:
            channel = _MIGRATION_RULES.get((_role(src), dst.role))
        if channel is None:
            return ()
        if channel == "data" and self.combined and dst.id in self.voters:
            return ("data", "quorum")
        return (channel,)

    def proxied(self, src: LinkSource, dst: NodeId) -> tuple[Channel, ...]:
        """The channels of `src->dst` that pass a proxy (one proxy each); empty when no fault can cut it."""
        return tuple(c for c in self.channels(src, dst) if c in PROXIED)

    def dials(self, src: LinkSource, dst: NodeId) -> bool:
        """Whether the link `src->dst` has a proxy: `src` opens connections to `dst` through one."""
        return bool(self.proxied(src, dst))

    def refusal(self, src: LinkSource, dst: NodeId) -> str:
        """Why `src->dst` has no proxy (empty when it has one)."""
        if self.dials(src, dst):
            return ""
        if src == dst:
            return "a node always reaches itself"
        if _role(src) == "zookeeper":
            return ("ZooKeeper members never open connections to brokers, and ZooKeeper peer traffic is not "
                    "proxied (use pause/kill)")
        if _role(src) == "controller" and dst.role == "broker":
            return ("KRaft controllers never dial brokers outside a ZooKeeper-to-KRaft migration (brokers fetch "
                    "metadata from the controllers)")
        return f"{_role(src)}s never dial {dst.role}s"

    def links(self) -> tuple[Dial, ...]:
        """Every proxied link of this cluster, in planning order: the quorum links, then each broker's links to
        the other brokers and to ZooKeeper, then the clients'."""
        sources: tuple[LinkSource, ...] = (*self.nodes(), CLIENT)
        found = [Dial(s, d, c) for s in sources for d in self.nodes() for c in self.proxied(s, d)]
        return tuple(sorted(found, key=lambda dial: _PLAN_ORDER.get(dial.channel, 1)))
