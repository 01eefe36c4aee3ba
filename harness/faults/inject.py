"""Applies planned faults and heals them, each by its kind (`harness.faults.catalog.CATALOG`: the kind's
`apply`, `heal` and `describe`; the injector is the `FaultEnv` they act through). Records `fault.start` /
`fault.end` (or `fault.skipped` when a target names nothing at firing time); `fault.start` carries the time
the action began (a graceful stop returns only after the broker's controlled shutdown, which the history must
show inside the fault) and the fault's effect as data (`effect`: the kind's `describe`). Link cuts are
reference-counted, so overlapping faults that cut the same link (isolate + partition) heal it only when the
last one ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.cluster.base import Cluster, Link, LinkSource, NodeId, link_name
from harness.cluster.links import LinkGraph
from harness.faults.catalog import CATALOG
from harness.faults.kind import Applied, BringsNodesBack, MemberControl, ProducerControl
from harness.faults.resolve import ResolutionError
from harness.faults.schedule import PlannedFault
from harness.history.events import FaultEnd, FaultSkipped, FaultStart
from harness.history.events_base import parse_targets
from harness.history.jsonl import EventSink
from harness.history.state import ClusterState

__all__ = ["FaultInjector", "MemberControl", "ProducerControl"]


@dataclass(slots=True)
class _Active:
    fault: PlannedFault
    done: Applied = field(default_factory=Applied)


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
        self._held: dict[NodeId, int] = {}
        self._lock = threading.Lock()
        self._links_lock = threading.Lock()

    @property
    def active(self) -> list[PlannedFault]:
        return [a.fault for a in self._active.values()]

    def inject(self, fault: PlannedFault) -> bool:
        """Apply `fault`; True if it took effect, False if its target named nothing (recorded as skipped)."""
        kind = CATALOG[fault.spec.kind]
        active = _Active(fault)
        began_wall_ms = int(time.time() * 1000)  # fault.start is stamped when the action began, not when it returned
        try:
            kind.apply(fault, self, active.done)
        except ResolutionError as exc:
            self._emit(FaultSkipped, fault, targets=[], error=str(exc))
            return False
        except Exception:
            self._run_heal(active, record=False)
            raise
        with self._lock:
            self._active[fault.fault_id] = active
        self._emit(FaultStart, fault, targets=active.done.targets, heal=kind.spec.heal, wall=began_wall_ms,
                   effect=kind.describe(fault, active.done), took_ms=max(0, int(time.time() * 1000) - began_wall_ms))
        return True

    def skip(self, fault: PlannedFault, why: str) -> None:
        """Record that `fault` was not carried out, and why (`fault.skipped`); nothing is done."""
        self._emit(FaultSkipped, fault, targets=[], error=why)

    def heal(self, fault: PlannedFault) -> None:
        with self._lock:
            active = self._active.pop(fault.fault_id, None)
        if active is not None:
            self._run_heal(active, record=True)

    def heal_all(self, *, teardown: bool = False) -> list[tuple[str, BaseException]]:
        """Heal every active fault, latest first; every step is attempted, failures returned. At `teardown` (every
        node is stopped next) a fault that would only start its nodes again (`BringsNodesBack`) ends with them
        left down."""
        failures: list[tuple[str, BaseException]] = []
        with self._lock:
            pending = sorted(self._active.values(), key=lambda a: -a.fault.start)
            self._active.clear()
        for active in pending:
            kind = CATALOG[active.fault.spec.kind]
            if teardown and isinstance(kind, BringsNodesBack) and kind.brings_nodes_back():
                self._emit(FaultEnd, active.fault, targets=active.done.targets, left_down=True)
                continue
            failures += self._run_heal(active, record=True)
        return failures

    # -- internals -----------------------------------------------------------------------------

    def _emit(self, event: type[FaultStart | FaultEnd | FaultSkipped], fault: PlannedFault, *, targets: list[str],
              **extra: Any) -> None:
        nodes = parse_targets(targets)
        brokers = tuple(sorted({n.id for n in nodes if isinstance(n, NodeId) and n.role == "broker"}))
        self.sink(event(fault_id=fault.fault_id, kind=fault.spec.kind, target=nodes, brokers=brokers,
                        params=dict(fault.spec.params), description=fault.describe(), **extra))

    def _run_heal(self, active: _Active, *, record: bool) -> list[tuple[str, BaseException]]:
        failures = [(f"heal {active.fault.describe()}: {name}", exc)
                    for name, exc in CATALOG[active.fault.spec.kind].heal(self, active.done)]
        if record:
            extra = {"error": "; ".join(f"{n}: {e}" for n, e in failures)} if failures else {}
            self._emit(FaultEnd, active.fault, targets=active.done.targets, **extra)
        return failures

    # -- FaultEnv: reference-counted node holds and link cuts -----------------------------------

    def hold_down(self, node: NodeId) -> None:
        """Count one more active fault holding `node` down (a kill or stop that took it down, or found it down)."""
        with self._links_lock:
            self._held[node] = self._held.get(node, 0) + 1

    def release(self, node: NodeId) -> bool:
        """One fault holding `node` down healed: True when it was the last (its heal starts the node), False while
        another still holds it (that one's heal will)."""
        with self._links_lock:
            count = self._held.get(node, 0) - 1
            if count <= 0:
                self._held.pop(node, None)
                return True
            self._held[node] = count
            return False

    def cut_link(self, src: LinkSource, dst: NodeId) -> None:
        """Disable `src->dst` unless another active fault already cut it."""
        name = link_name(src, dst)
        link = self.cluster.link(src, dst)
        with self._links_lock:  # the count and the link change together (faults act from lanes of their own)
            count = self._cuts.get(name, 0)
            self._cuts[name] = count + 1
            if count == 0:
                link.disable()

    def uncut_link(self, src: LinkSource, dst: NodeId) -> None:
        """Enable `src->dst` when no other active fault still cuts it."""
        name = link_name(src, dst)
        with self._links_lock:
            count = self._cuts.get(name, 0) - 1
            if count <= 0:
                self._cuts.pop(name, None)
                link: Link = self.cluster.link(src, dst)
                link.enable()
            else:
                self._cuts[name] = count
