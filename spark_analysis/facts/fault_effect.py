"""What a fault did, as data: `FaultEffect`, read from `fault.start`'s `effect` (written by the fault kind's
`describe`, `harness.faults.kind`) or, for a history recorded before `effect` existed, by the legacy reader
(`spark_analysis.facts.faults_legacy`). The verifiers ask it their questions (which nodes did the fault stop, which did
it cut off, from whom) and never a fault's kind name.

    {"nodes": [{"role": "broker", "id": 2}], "down": true, "graceful": false,
     "unreachable": [{"role": "broker", "id": 2, "from": ["broker", "client", "zookeeper"]}],
     "links": [{"src": "client", "dst": "broker:2", "proxy": "client->2"}],
     "toxics": [{"type": "latency", "stream": "downstream", "toxicity": 1.0, "attributes": {"latency": 100},
                 "links": ["1->2"]}],
     "clocks": [{"role": "broker", "id": 1, "offset_s": 3600}],
     "lost": [{"role": "broker", "id": 1, "bytes": 9000, "log_bytes": 4096, "files": 5, "removed": 0,
               "segments": [["data/orders-0/00000000000000000000.log", 4096]]}]}   # power_loss only
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SERVERS = ("broker", "controller")
"""The roles of the nodes that serve Kafka: brokers and KRaft controllers (a node id names one or the other)."""
CLIENTS = "client"
"""The peer role of the harness's clients in `unreachable`'s `from`."""

Node = tuple[str, Any]
"""(role, id): an int id for brokers, controllers and ZooKeeper members; text for consumer members and producers."""


@dataclass(frozen=True, slots=True)
class CutOff:
    """A node a fault cut off as a whole, and the roles of the peers it lost (`client`: clients cannot reach it)."""

    role: str
    id: Any
    peers: frozenset[str]


@dataclass(frozen=True, slots=True)
class FaultEffect:
    nodes: tuple[Node, ...] = ()
    """The nodes the fault acts on."""
    down: bool = False
    """They stop serving: killed, stopped or frozen."""
    graceful: bool = False
    """They stop by a controlled shutdown (a broker moves its leaderships first)."""
    unreachable: tuple[CutOff, ...] = ()
    links: tuple[Mapping[str, Any], ...] = ()
    """The directed links cut: {"src", "dst", "proxy"}."""
    toxics: tuple[Mapping[str, Any], ...] = ()
    """The Toxiproxy toxics added: {"type", "stream", "toxicity", "attributes", "links"}."""
    clocks: tuple[Mapping[str, Any], ...] = ()
    """The wall clocks stepped: {"role", "id", "offset_s"} (clock_skew; the monotonic clocks run on)."""
    lost: tuple[Mapping[str, Any], ...] = ()
    """What a power loss undid on each node, not fsynced: {"role", "id", "bytes", "log_bytes" (of log segments:
    records), "files", "removed", "segments" ([path, bytes], the largest)} (power_loss)."""

    @property
    def loses_unsynced(self) -> bool:
        """Whether this fault undid writes a node had not fsynced (a power loss): what a replica acknowledged from
        its page cache before it is gone from that replica."""
        return bool(self.lost)

    @property
    def steps_a_clock_ahead(self) -> bool:
        """Whether this fault stepped a node's wall clock forward: deadlines Kafka computes from wall time (a
        transaction's timeout at its coordinator) then fall due early."""
        return any(isinstance(c.get("offset_s"), (int, float)) and c["offset_s"] > 0 for c in self.clocks)

    def stopped(self, roles: Iterable[str] = SERVERS) -> set[int]:
        """Ids of the nodes of `roles` this fault stops serving (abruptly or gracefully)."""
        return _ids(self.nodes, roles) if self.down else set()

    @property
    def graceful_stop(self) -> bool:
        """Whether this fault stops its nodes by a controlled shutdown."""
        return self.down and self.graceful

    def stopped_gracefully(self, roles: Iterable[str] = ("broker",)) -> set[int]:
        """Ids of the nodes of `roles` this fault stops by a controlled shutdown."""
        return self.stopped(roles) if self.graceful else set()

    def cut_off(self, roles: Iterable[str] = SERVERS, peer: str | None = None) -> set[int]:
        """Ids of the nodes of `roles` this fault cuts off (from `peer` only, if given)."""
        wanted = set(roles)
        return {int(c.id) for c in self.unreachable if c.role in wanted and isinstance(c.id, int)
                and (peer is None or peer in c.peers)}

    def cuts(self, src: str, dst: str) -> bool:
        """Whether this fault cuts the directed link `src -> dst` (node names as in `links`: "broker:3")."""
        return any(link.get("src") == src and link.get("dst") == dst for link in self.links)

    def takes_away(self, node: int, roles: Iterable[str] = SERVERS) -> bool:
        """Whether this fault takes node `node` away: stops it or cuts it off (e.g. a controller lost)."""
        roles = tuple(roles)
        return node in self.stopped(roles) or node in self.cut_off(roles)

    def takes_from_clients(self, broker: int) -> bool:
        """Whether this fault takes broker `broker` from clients without handing its work over first: stops it
        abruptly, or cuts clients off from it (its leaderships are lost, not moved)."""
        return ((broker in self.stopped(("broker",)) and not self.graceful)
                or broker in self.cut_off(("broker",), CLIENTS))

    @staticmethod
    def read(value: object) -> FaultEffect | None:
        """The effect of a `fault.start` event's `effect` (an object, or its JSON text as Spark keeps it); None
        when it has none (a history recorded before `effect`) or it is not an object."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if not isinstance(value, Mapping):
            return None
        cuts = tuple(CutOff(str(c.get("role")), _id(c.get("id")), frozenset(str(p) for p in c.get("from") or ()))
                     for c in _objects(value.get("unreachable")))
        return FaultEffect(tuple((str(n.get("role")), _id(n.get("id"))) for n in _objects(value.get("nodes"))),
                           bool(value.get("down")), bool(value.get("graceful")), cuts,
                           _objects(value.get("links")), _objects(value.get("toxics")),
                           _objects(value.get("clocks")), _objects(value.get("lost")))


def _objects(value: object) -> tuple[Mapping[str, Any], ...]:
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()


def _id(value: object) -> Any:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return value
    text = str(value)
    return int(text) if text.lstrip("-").isdigit() else text


def _ids(nodes: Iterable[Node], roles: Iterable[str]) -> set[int]:
    wanted = set(roles)
    return {int(i) for r, i in nodes if r in wanted and isinstance(i, int)}
