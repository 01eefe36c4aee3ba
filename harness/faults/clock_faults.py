"""Faults on time: `clock_skew` steps a broker's (or KRaft controller's) wall clock by ±N seconds for the fault's
duration while its monotonic clock runs on, as an NTP step does; with `strobe_s` it flips the clock between the
step and the real time every `strobe_s` seconds instead, as Jepsen's strobe nemesis does (a clock that an
unhealthy NTP source keeps stepping back and forth) (`harness.cluster.clocks`: libfaketime with a
control file; the heal steps it back). Kafka reads wall time through `Time.milliseconds()` for record and
log-append timestamps, time-based retention and index lookups, and deadlines such as a transaction's timeout;
what it measures with `Time.nanoseconds()` is untouched.

Its effect: the nodes it acts on, and `clocks`, each with the offset its wall clock was stepped by; nothing is down
or cut."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import ClockControl, NodeId
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, ParamSpec, attempt, effect, node_ref
from harness.faults.resolve import resolve_node

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault


MIN_STROBE_S = 3.0
"""The fastest strobe: measured on Apache Kafka 3.9.2 under libfaketime (FAKETIME_CACHE_DURATION=1), a broker's
log-append time followed a step 1.6 s (ahead) and 2.0 s (back) after the control file changed; with a 1 s strobe
its stamps never left the real time in 60 s (aliasing), with 3 s they flipped by turns."""


_STROBE_JOIN_S = 30.0
"""How long the heal waits for a strobe's flip under way (one write of the node's control file)."""


def _clocks(env: FaultEnv) -> ClockControl:
    if not isinstance(env.cluster, ClockControl):
        raise HarnessError(f"clock_skew needs the process backend; this cluster ({type(env.cluster).__name__}) "
                           f"cannot step a node's clock")
    return env.cluster


@dataclass(frozen=True, slots=True)
class ClockSkew:
    """Step the node's wall clock by `offset_s` (or strobe it: step and back every `strobe_s`); heal: step it back."""

    spec: KindSpec
    _strobes: dict[int, tuple[threading.Event, threading.Thread]] = field(default_factory=dict, compare=False)
    """The strobing of each active fault, by its `Applied`: the event that stops it, and its thread."""

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.target is not None
        node = resolve_node(fault.target, env.state, env.topology)
        if not isinstance(node, NodeId) or node.role == "zookeeper":
            raise HarnessError(f"{node}: clock_skew steps a broker's or KRaft controller's clock")
        clocks = _clocks(env)
        done.targets.append(str(node))
        done.nodes.append(node)
        offset, period = int(fault.spec.params.get("offset_s", 3600)), float(fault.spec.params.get("strobe_s", 0))
        clocks.skew_clock(node, offset)
        if period > 0:
            stop = threading.Event()
            thread = threading.Thread(target=_strobe, args=(clocks, node, offset, period, stop), daemon=True,
                                      name=f"strobe-{node}")
            self._strobes[id(done)] = (stop, thread)
            thread.start()

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        strobe = self._strobes.pop(id(done), None)
        if strobe is not None:  # stopped and joined first: a flip under way must not land after the step back
            strobe[0].set()
            strobe[1].join(_STROBE_JOIN_S)
        return attempt([(f"step the clock of {node} back", partial(_clocks(env).skew_clock, node, 0))
                        for node in done.nodes if isinstance(node, NodeId)])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        offset = int(fault.spec.params.get("offset_s", 3600))
        period = float(fault.spec.params.get("strobe_s", 0))
        return effect(nodes=done.nodes, clocks=[{**node_ref(n), "offset_s": offset, **(
            {"strobe_s": period} if period > 0 else {})} for n in done.nodes])


def _strobe(clocks: ClockControl, node: NodeId, offset: int, period: float, stop: threading.Event) -> None:
    """Flip the node's clock between the real time and `offset` every `period` seconds until `stop` (the heal then
    steps it back for good)."""
    stepped = True
    while not stop.wait(period):
        stepped = not stepped
        try:
            clocks.skew_clock(node, offset if stepped else 0)
        except HarnessError:
            return  # the cluster is going: the heal, or the teardown, has the last word


CLOCK_KINDS: tuple[ClockSkew, ...] = (
    ClockSkew(KindSpec(
        "clock_skew", "Step a broker's (or KRaft controller's) wall clock by offset_s seconds, forward or back, while "
        "its monotonic clock runs on (an NTP step): timestamps, retention and wall-time deadlines jump.",
        frozenset({"broker", "controller"}),
        (ParamSpec("offset_s", "int", "seconds to step the wall clock by (negative: back)", default=3600),
         ParamSpec("strobe_s", "float", "flip the clock between the step and the real time every this many seconds "
                   f"({MIN_STROBE_S:g} or more: a node follows a change of its offset 1.6-2 s later); 0: one step",
                   default=0.0, minimum=0.0)),
        "required", "clock", "steps the clock back to the real time",
        MappingProxyType({"process": "libfaketime in every Kafka node, with a control file per node (the run's "
                                     "nodes start under it when the schedule has a clock_skew)",
                          "containers": "not available: needs the process backend"}))),
)
"""The clock kinds, in `kafka-chaos faults` order."""
