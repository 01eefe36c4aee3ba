"""The legacy reader: the effect of a fault recorded before `fault.start` carried `effect`, from its kind name and
its rendered target, as the verifiers read such histories before (`spark_analysis.facts.fault_effect`). The only place
in the verifiers that knows fault kinds by name; a history with `effect` never comes here.

- `kill`, `stop`, `pause`, `kill_zookeeper`: the targets stop serving (`stop` gracefully, by controlled shutdown);
- `isolate`: each target is cut off from clients and every peer; `isolate_zookeeper`: from ZooKeeper;
  `partition`: every node of its groups is cut off from peers (not from clients);
- `cut` and the toxics: links only, no node (their rendered targets are proxy names).

A rendered target is `describe_target`'s text: `broker 1, controller 101`; the node words the verifiers read
before were `broker`, `controller`, `node` and `voter` (the last two as servers)."""

from __future__ import annotations

from spark_analysis.facts.fault_effect import CutOff, FaultEffect, Node

_DOWN = frozenset({"kill", "stop", "pause", "kill_zookeeper"})
_GRACEFUL = frozenset({"stop"})
_CUT_FROM: dict[str, frozenset[str]] = {
    "isolate": frozenset({"broker", "client", "controller", "zookeeper"}),
    "isolate_zookeeper": frozenset({"zookeeper"}),
    "partition": frozenset({"broker", "controller", "zookeeper"}),
}
_SERVER_WORDS = {"node": "controller", "voter": "controller"}
"""Node words of old renderings read as a server role (either role matches a node id)."""


def legacy_effect(kind: str, target: str) -> FaultEffect:
    """The effect of a fault of `kind` on the rendered `target`, without an `effect` recorded."""
    nodes = _nodes(target)
    cut_from = _CUT_FROM.get(kind)
    cuts = tuple(CutOff(r, i, cut_from) for r, i in nodes) if cut_from is not None else ()
    return FaultEffect(nodes, kind in _DOWN, kind in _GRACEFUL, cuts)


def _nodes(target: str) -> tuple[Node, ...]:
    out: list[Node] = []
    for part in target.split(","):
        words = part.strip().split()
        if len(words) == 2 and words[1].lstrip("-").isdigit():
            role = _SERVER_WORDS.get(words[0], words[0])
            out.append((role, int(words[1])))
    return tuple(out)

