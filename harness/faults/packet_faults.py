"""Faults on packets rather than connections: `packet_loss` drops a random fraction of the packets on a directed
link (both ways of its connections), without closing them (`harness.cluster.packets`: iptables' statistic match on
the link's proxy listener). TCP retransmits what is lost, so the link turns slow and bursty: requests time out and
are retried, fetches fall behind, sessions may expire, while no connection is refused.

Its effect: one `toxics` entry of type `packet_loss` (the links it degrades, `toxicity` = the probability), like a
Toxiproxy toxic: nothing is cut and no node is down."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import PacketControl, link_name
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, ParamSpec, attempt, effect
from harness.faults.resolve import resolve_link

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault


def _packets(env: FaultEnv) -> PacketControl:
    if not isinstance(env.cluster, PacketControl):
        raise HarnessError(f"packet_loss needs the process backend; this cluster ({type(env.cluster).__name__}) "
                           f"cannot drop packets")
    return env.cluster


@dataclass(frozen=True, slots=True)
class PacketLoss:
    """Drop `probability` of the packets of each resolved link; heal: stop dropping."""

    spec: KindSpec

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.link is not None
        packets = _packets(env)
        probability = float(fault.spec.params.get("probability", 0.1))
        for src, dst in resolve_link(fault.link, env.state, env.topology):
            handle = packets.drop_packets(src, dst, probability)
            done.targets.append(link_name(src, dst))
            done.toxics.append((env.cluster.link(src, dst), handle))

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        return attempt([(f"stop dropping packets on {link.name}", partial(_packets(env).stop_dropping, handle))
                        for link, handle in done.toxics])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        p = float(fault.spec.params.get("probability", 0.1))
        return effect(toxics=[{"type": "packet_loss", "stream": "both", "toxicity": p,
                               "attributes": {"probability": p}, "links": list(done.targets)}] if done.targets else [])


PACKET_KINDS: tuple[PacketLoss, ...] = (
    PacketLoss(KindSpec(
        "packet_loss", "Drop a random fraction of the packets on a directed link, both ways, without closing its "
        "connections: TCP retransmits, so requests slow down and time out instead of failing at once.",
        frozenset({"link"}),
        (ParamSpec("probability", "float", "the fraction of packets dropped, in (0, 1]", default=0.1, minimum=0.0),),
        "required", "packets", "stops dropping packets",
        MappingProxyType({"process": "iptables -m statistic --mode random DROP rules on the link proxy's port "
                                     "(loopback; root)",
                          "containers": "not available: needs the process backend"}))),
)
"""The packet kinds, in `kafka-chaos faults` order."""
