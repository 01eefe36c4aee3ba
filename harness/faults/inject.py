"""Turns planned faults into backend operations and heals them: node signals, consumer-member and
producer actions and Toxiproxy link operations. Records `fault.start` / `fault.end` (or `fault.skipped` when
a target names nothing at firing time); `fault.start` carries the time the action began (a graceful
stop returns only after the broker's controlled shutdown, which the history must show inside the
fault). Link cuts are reference-counted, so overlapping faults that cut the same link (isolate +
partition) heal it only when the last one ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from harness.cluster.base import Cluster, LinkSource, NodeId, link_name
from harness.cluster.links import LinkGraph
from harness.errors import HarnessError
from harness.faults.catalog import CATALOG, TOXIC_ATTRIBUTES
from harness.faults.resolve import (
    MemberRef,
    ProducerRef,
    ResolutionError,
    isolate_links,
    partition_links,
    resolve_link,
    resolve_node,
)
from harness.faults.schedule import PlannedFault
from harness.history.jsonl import EventSink
from harness.history.state import ClusterState


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


@dataclass(slots=True)
class _Active:
    fault: PlannedFault
    targets: list[str]
    heal_steps: list[tuple[str, Callable[[], None]]] = field(default_factory=list)


class FaultInjector:
    def __init__(self, cluster: Cluster, state: ClusterState, topology: LinkGraph, sink: EventSink,
                 members: Mapping[str, MemberControl] | None = None,
                 producers: Mapping[str, ProducerControl] | None = None) -> None:
        self.cluster = cluster
        self.state = state
        self.topology = topology
        self.sink = sink
        self.members = dict(members or {})
        self.producers = dict(producers or {})
        self._active: dict[int | str, _Active] = {}
        self._cuts: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def active(self) -> list[PlannedFault]:
        return [a.fault for a in self._active.values()]

    def inject(self, fault: PlannedFault) -> bool:
        """Apply `fault`; True if it took effect, False if its target named nothing (recorded as skipped)."""
        kind = CATALOG[fault.spec.kind]
        active = _Active(fault, [])
        began_wall_ms = int(time.time() * 1000)  # fault.start is stamped when the action began, not when it returned
        try:
            self._apply(fault, active)
        except ResolutionError as exc:
            self._emit("fault.skipped", fault, targets=[], error=str(exc))
            return False
        except Exception:
            self._run_heal(active, record=False)
            raise
        with self._lock:
            self._active[fault.fault_id] = active
        self._emit("fault.start", fault, targets=active.targets, heal=kind.heal, wall=began_wall_ms)
        return True

    def heal(self, fault: PlannedFault) -> None:
        with self._lock:
            active = self._active.pop(fault.fault_id, None)
        if active is not None:
            self._run_heal(active, record=True)

    def heal_all(self) -> list[tuple[str, BaseException]]:
        """Heal every active fault, latest first; every step is attempted, failures returned."""
        failures: list[tuple[str, BaseException]] = []
        with self._lock:
            pending = sorted(self._active.values(), key=lambda a: -a.fault.start)
            self._active.clear()
        for active in pending:
            failures += self._run_heal(active, record=True)
        return failures

    # -- internals -----------------------------------------------------------------------------

    def _emit(self, kind: str, fault: PlannedFault, *, targets: list[str], **extra: object) -> None:
        brokers = sorted({int(t.split(":")[1]) for t in targets if t.startswith("broker:")})
        self.sink({"src": "engine", "type": kind, "fault_id": fault.fault_id, "kind": fault.spec.kind,
                   "target": targets, "brokers": brokers, "params": dict(fault.spec.params),
                   "description": fault.describe(), **extra})

    def _run_heal(self, active: _Active, *, record: bool) -> list[tuple[str, BaseException]]:
        failures: list[tuple[str, BaseException]] = []
        for name, step in reversed(active.heal_steps):
            try:
                step()
            except Exception as exc:  # every step is attempted; failures are reported together
                failures.append((f"heal {active.fault.describe()}: {name}", exc))
        if record:
            extra = {"error": "; ".join(f"{n}: {e}" for n, e in failures)} if failures else {}
            self._emit("fault.end", active.fault, targets=active.targets, **extra)
        return failures

    def _apply(self, fault: PlannedFault, active: _Active) -> None:
        kind = fault.spec.kind
        if kind in ("kill", "stop", "pause", "kill_zookeeper"):
            assert fault.target is not None
            node = resolve_node(fault.target, self.state, self.topology)
            active.targets.append(str(node))
            if isinstance(node, MemberRef):
                self._member_fault(kind, node, active)
            elif isinstance(node, ProducerRef):
                self._producer_fault(kind, node, active)
            else:
                self._node_fault(kind, node, active)
        elif kind in ("isolate", "isolate_zookeeper"):
            assert fault.target is not None
            node = resolve_node(fault.target, self.state, self.topology)
            if not isinstance(node, NodeId):
                raise HarnessError(f"{fault.describe()}: isolate needs a broker or a controller, got {node}")
            active.targets.append(str(node))
            self._cut(isolate_links(node, self.topology, zookeeper_only=kind == "isolate_zookeeper"), active)
        elif kind == "partition":
            active.targets += [str(n) for g in fault.spec.groups for n in g]
            self._cut(partition_links(fault.spec.groups, bool(fault.spec.params.get("one_way")), self.topology),
                      active)
        elif kind == "cut":
            assert fault.link is not None
            links = resolve_link(fault.link, self.state, self.topology)
            active.targets += [link_name(s, d) for s, d in links]
            self._cut(links, active)
        else:
            assert fault.link is not None
            links = resolve_link(fault.link, self.state, self.topology)
            active.targets += [link_name(s, d) for s, d in links]
            self._toxic(fault, links, active)

    def _node_fault(self, kind: str, node: NodeId, active: _Active) -> None:
        if kind == "pause":
            self.cluster.pause(node)
            active.heal_steps.append((f"resume {node}", lambda: self.cluster.resume(node)))
            return
        (self.cluster.stop if kind == "stop" else self.cluster.kill)(node)
        active.heal_steps.append((f"start {node}", lambda: self.cluster.start(node)))

    def _member_fault(self, kind: str, ref: MemberRef, active: _Active) -> None:
        control = self.members.get(ref.group)
        if control is None:
            raise ResolutionError(f"{ref}: no consumer group {ref.group!r} is running")
        if kind == "pause":
            control.pause_member(ref.index)
            active.heal_steps.append((f"resume {ref}", lambda: control.resume_member(ref.index)))
        else:
            control.kill_member(ref.index)
            active.heal_steps.append((f"restart {ref}", lambda: control.restart_member(ref.index)))

    def _producer_fault(self, kind: str, ref: ProducerRef, active: _Active) -> None:
        control = self.producers.get(ref.producer_id)
        if control is None:
            raise ResolutionError(f"{ref}: no producer {ref.producer_id!r} is running")
        if kind != "pause":
            raise HarnessError(f"{ref}: a producer can only be paused, not given {kind!r}")
        control.pause()
        active.heal_steps.append((f"resume {ref}", control.resume))

    def _cut(self, links: list[tuple[LinkSource, NodeId]], active: _Active) -> None:
        for src, dst in links:
            name = link_name(src, dst)
            link = self.cluster.link(src, dst)
            with self._lock:
                count = self._cuts.get(name, 0)
                self._cuts[name] = count + 1
            if count == 0:
                link.disable()
            active.heal_steps.append((f"enable {name}", lambda n=name, lk=link: self._uncut(n, lk)))  # type: ignore[misc]

    def _uncut(self, name: str, link: object) -> None:
        with self._lock:
            count = self._cuts.get(name, 0) - 1
            if count <= 0:
                self._cuts.pop(name, None)
            else:
                self._cuts[name] = count
        if count <= 0:
            link.enable()  # type: ignore[attr-defined]

    def _toxic(self, fault: PlannedFault, links: list[tuple[LinkSource, NodeId]], active: _Active) -> None:
        params = dict(fault.spec.params)
        stream = str(params.pop("stream", "downstream"))
        toxicity = float(params.pop("toxicity", 1.0))
        names = TOXIC_ATTRIBUTES[fault.spec.kind]
        attributes = {names[k]: v for k, v in params.items() if k in names}
        for src, dst in links:
            link = self.cluster.link(src, dst)
            toxic = link.add_toxic(fault.spec.kind, attributes, stream=stream, toxicity=toxicity,  # type: ignore[arg-type]
                                   name=f"f{fault.index}-{fault.spec.kind}-{stream}")
            active.heal_steps.append((f"remove {toxic} from {link.name}",
                                      lambda lk=link, t=toxic: lk.remove_toxic(t)))  # type: ignore[misc]
