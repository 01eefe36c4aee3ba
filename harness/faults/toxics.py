"""Toxiproxy toxics on links: `latency`, `bandwidth`, `slicer`, `reset_peer`, `timeout` and `limit_data`. Each kind
holds its parameters and the Toxiproxy attribute each one becomes; every toxic also takes `stream` (which
direction of the link) and `toxicity` (the share of connections affected). The heal removes the toxics.

Their effect: the toxics, each with its Toxiproxy type, stream, toxicity, attributes and the links it is on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import link_name
from harness.faults.kind import Applied, FaultEnv, KindSpec, ParamSpec, attempt, effect
from harness.faults.resolve import resolve_link

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault

_STREAM = ParamSpec("stream", "choice", "which direction of the link: upstream (src to dst) or downstream "
                    "(dst's replies)", default="downstream", choices=("upstream", "downstream"))
_TOXICITY = ParamSpec("toxicity", "float", "probability (0..1) that a connection is affected, drawn once per "
                      "connection", default=1.0, minimum=0.0)


@dataclass(frozen=True, slots=True)
class Toxic:
    """A Toxiproxy toxic of type `spec.name` on each link the fault names."""

    spec: KindSpec
    attributes: Mapping[str, str]
    """Experiment parameter name -> Toxiproxy attribute name."""

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.link is not None
        links = resolve_link(fault.link, env.state, env.topology)
        done.targets += [link_name(s, d) for s, d in links]
        stream, toxicity, attributes = self._settings(fault)
        for src, dst in links:
            link = env.cluster.link(src, dst)
            toxic = link.add_toxic(self.spec.name, attributes, stream=stream, toxicity=toxicity,
                                   name=f"f{fault.index}-{self.spec.name}-{stream}")
            done.toxics.append((link, toxic))

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        return attempt([(f"remove {toxic} from {link.name}", lambda lk=link, t=toxic: lk.remove_toxic(t))  # type: ignore[misc]
                        for link, toxic in done.toxics])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        stream, toxicity, attributes = self._settings(fault)
        return effect(toxics=[{"type": self.spec.name, "stream": stream, "toxicity": toxicity,
                               "attributes": attributes, "links": list(done.targets)}])

    def _settings(self, fault: PlannedFault) -> tuple[str, float, dict[str, Any]]:
        params = dict(fault.spec.params)
        stream = str(params.pop("stream", "downstream"))
        toxicity = float(params.pop("toxicity", 1.0))
        return stream, toxicity, {self.attributes[k]: v for k, v in params.items() if k in self.attributes}


def _toxic(name: str, help: str, params: tuple[tuple[ParamSpec, str], ...]) -> Toxic:
    spec = KindSpec(name, help, frozenset({"link"}), (*(p for p, _ in params), _STREAM, _TOXICITY), "required",
                    f"toxic:{name}", "removes the toxic", MappingProxyType({
                        "process": f"Toxiproxy `{name}` toxic on the link's proxy (embedded server or TOXIPROXY_BIN)",
                        "containers": f"Toxiproxy `{name}` toxic on the link's proxy (toxiproxy container)"}))
    return Toxic(spec, MappingProxyType({p.name: attribute for p, attribute in params}))


TOXIC_KINDS: tuple[Toxic, ...] = (
    _toxic("latency", "Delay data on a link.", (
        (ParamSpec("latency_ms", "int", "added delay in milliseconds", required=True, minimum=0), "latency"),
        (ParamSpec("jitter_ms", "int", "random +/- jitter in milliseconds", default=0, minimum=0), "jitter"))),
    _toxic("bandwidth", "Limit a link's bandwidth.", (
        (ParamSpec("rate_kbps", "int", "rate in KB/s", required=True, minimum=0), "rate"),)),
    _toxic("slicer", "Slice data into small pieces with delays between them.", (
        (ParamSpec("average_size", "int", "average slice size in bytes", required=True, minimum=1), "average_size"),
        (ParamSpec("size_variation", "int", "slice size variation in bytes", default=0, minimum=0),
         "size_variation"),
        (ParamSpec("delay_us", "int", "delay between slices in microseconds", default=0, minimum=0), "delay"))),
    _toxic("reset_peer", "Reset connections (TCP RST) after a timeout.", (
        (ParamSpec("timeout_ms", "int", "delay before the reset, ms", default=0, minimum=0), "timeout"),)),
    _toxic("timeout", "Stop all data; close the connection after timeout_ms (0: hold it open forever).", (
        (ParamSpec("timeout_ms", "int", "ms before closing; 0 = black hole", default=0, minimum=0), "timeout"),)),
    _toxic("limit_data", "Close connections after a number of bytes.", (
        (ParamSpec("bytes", "int", "bytes allowed per connection", required=True, minimum=0), "bytes"),)),
)
"""The toxic kinds, in `kafka-chaos faults` order."""
