"""What a fault kind is: its specification (`KindSpec`: parameters, valid targets, duration rule, overlap class,
what each backend does) and its behaviour (`FaultKind`: `apply`, `heal`, `describe`). Each family of kinds lives
in a module of its own (`node_faults`, `link_faults`, `toxics`); `harness.faults.catalog` registers them.

`apply` acts on the cluster through a `FaultEnv` (the injector) and notes in an `Applied` what it did, as it goes,
so that `heal` can undo a partial apply too. `describe` gives the fault's effect as data, recorded in
`fault.start` as `effect` (docs/design.md, "History: one JSON object per line"):

    {"nodes": [{"role": "broker", "id": 2}],   # the nodes the fault acts on (consumer members and producers too)
     "down": true,                             # those nodes stop serving (killed, stopped or frozen)
     "graceful": false,                        # they stop by a controlled shutdown (leaderships moved first)
     "unreachable": [{"role": "broker", "id": 2, "from": ["broker", "client", "zookeeper"]}],
                                               # nodes cut off as a whole, and the roles of the peers cut
     "links": [{"src": "client", "dst": "broker:2", "proxy": "client->2"}],   # the directed links cut
     "toxics": [{"type": "latency", "stream": "downstream", "toxicity": 1.0, "attributes": {"latency": 100},
                 "links": ["1->2"]}],
     "clocks": [{"role": "broker", "id": 1, "offset_s": 3600}],   # wall clocks stepped (clock_skew)
     "lost": [{"role": "broker", "id": 1, "bytes": 9000, "log_bytes": 4096, "files": 5, "removed": 0,
               "segments": [["data/orders-0/00000000000000000000.log", 4096]]}]}
                                               # what a power loss undid, not fsynced (power_loss)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from harness.cluster.base import CLIENT, LinkSource, NodeId, link_name

if TYPE_CHECKING:
    from harness.cluster.base import Cluster, Link
    from harness.cluster.links import LinkGraph
    from harness.faults.resolve import MemberRef, ProducerRef
    from harness.faults.schedule import PlannedFault
    from harness.history.state import ClusterState

ParamType = Literal["int", "float", "bool", "choice", "text"]
TargetSlot = Literal["broker", "zookeeper", "consumer", "producer", "controller", "link", "groups"]
DurationRule = Literal["required", "optional", "forbidden"]


@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    type: ParamType
    help: str
    default: float | int | bool | str | None = None
    required: bool = False
    minimum: float | None = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KindSpec:
    """What validation, `kafka-chaos faults` and the schedule know of a kind. `exclusive` names the overlap class:
    two faults of kinds with the same non-empty class may not overlap in time on the same (static) target."""

    name: str
    help: str
    targets: frozenset[TargetSlot]
    params: tuple[ParamSpec, ...]
    duration: DurationRule
    exclusive: str
    heal: str
    """What healing does, in words (`fault.start`'s `heal`)."""
    backends: Mapping[str, str]
    several: bool = False
    """Whether one fault may act on several nodes at once (`targets:`, a list): a correlated power loss."""

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)


@runtime_checkable
class BringsNodesBack(Protocol):
    """A kind whose heal starts its nodes again (kill, stop). At teardown, which stops every node next, the injector
    ends such a fault without starting them (`fault.end` with `left_down`): a broker's start waits for its
    registration, seconds a signalled run would spend only to stop it again."""

    def brings_nodes_back(self) -> bool: ...


class MemberControl(Protocol):
    """What a consumer-group workload offers to faults targeting `consumer:<group>/<n>`."""

    def kill_member(self, n: int) -> None: ...

    def pause_member(self, n: int) -> None: ...

    def resume_member(self, n: int) -> None: ...

    def restart_member(self, n: int) -> None: ...


class ProducerControl(Protocol):
    """What a producer workload offers to faults targeting `producer:<id>`: its application's sending held
    and let go again."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class FaultEnv(Protocol):
    """What a kind acts through (the injector): the cluster, what is known of it, the clients the harness drives,
    and reference-counted link cuts and node holds (overlapping faults that cut one link, or take one node down,
    heal it when the last one ends)."""

    cluster: Cluster
    state: ClusterState
    topology: LinkGraph
    members: dict[str, MemberControl]
    producers: dict[str, ProducerControl]

    def cut_link(self, src: LinkSource, dst: NodeId) -> None: ...

    def uncut_link(self, src: LinkSource, dst: NodeId) -> None: ...

    def hold_down(self, node: NodeId) -> None: ...

    def release(self, node: NodeId) -> bool: ...


@dataclass(slots=True)
class Applied:
    """What one fault did, noted as it was done: the targets recorded in the history, the nodes (or members,
    producers) acted on, the links cut and the toxics added (link, toxic name)."""

    targets: list[str] = field(default_factory=list)
    nodes: list[NodeId | MemberRef | ProducerRef] = field(default_factory=list)
    cut: list[tuple[LinkSource, NodeId]] = field(default_factory=list)
    toxics: list[tuple[Link, str]] = field(default_factory=list)


class FaultKind(Protocol):
    """A fault kind's behaviour. `apply` raises `ResolutionError` when the target names nothing right now."""

    @property
    def spec(self) -> KindSpec: ...

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None: ...

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]: ...

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]: ...


def node_ref(node: object) -> dict[str, Any]:
    """A node, consumer member or producer as effect data: `{"role": "broker", "id": 2}`,
    `{"role": "consumer", "id": "g/0"}`, `{"role": "producer", "id": "api"}`."""
    if isinstance(node, NodeId):
        return {"role": node.role, "id": node.id}
    role, _, ident = str(node).partition(":")
    return {"role": role, "id": ident}


def link_ref(src: LinkSource, dst: NodeId) -> dict[str, str]:
    return {"src": CLIENT if isinstance(src, str) else str(src), "dst": str(dst), "proxy": link_name(src, dst)}


def effect(*, nodes: list[Any] | None = None, down: bool = False, graceful: bool = False,
           unreachable: list[dict[str, Any]] | None = None, links: list[tuple[LinkSource, NodeId]] | None = None,
           toxics: list[dict[str, Any]] | None = None, clocks: list[dict[str, Any]] | None = None,
           lost: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The `effect` of `fault.start`, every key present (see the module doc)."""
    return {"nodes": [node_ref(n) for n in nodes or []], "down": down, "graceful": graceful,
            "unreachable": unreachable or [], "links": [link_ref(s, d) for s, d in links or []],
            "toxics": toxics or [], "clocks": clocks or [], "lost": lost or []}


def attempt(steps: list[tuple[str, Callable[[], None]]]) -> list[tuple[str, BaseException]]:
    """Run every step (a heal's), latest first; failures are returned, not raised."""
    failures: list[tuple[str, BaseException]] = []
    for name, step in reversed(steps):
        try:
            step()
        except Exception as exc:  # every step is attempted; failures are reported together
            failures.append((name, exc))
    return failures
