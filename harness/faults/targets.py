"""Target expressions of faults, parsed into frozen values; resolved to nodes only when a fault fires.

Node targets: `broker:2`, `zookeeper:1`, `controller`, `leader:<topic>/<p>`, `coordinator:<group>`,
`txn_coordinator:<transactional id>` (the leader of the `__transaction_state` partition that id maps to),
`consumer:<group>/<n>` (n is 0-based), `producer:<id>` (a producer of `workload.producers`: its application
pauses, see the `pause` fault), `random-broker` (drawn from the seed when the schedule is
built), `idle-broker` (the lowest-id live broker that leads no partition when the fault fires: a pure
follower, whose loss only the ISRs show). KRaft adds `controller:<id>` (a voter: `controller:101`, or
`controller:1` for combined broker 1) and `controller:any` (a voter drawn from the seed); there
`controller` is the active quorum leader.
Links: `<src>-><dst>` with src `client`, a broker or a controller target and dst a broker or controller
target, `zookeeper` (every member) or `zookeeper:<n>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

TargetKind = Literal["broker", "zookeeper", "controller", "leader", "coordinator", "txn-coordinator", "consumer",
                     "producer", "random-broker", "any-controller", "idle-broker"]
Role = Literal["broker", "zookeeper", "consumer", "producer", "controller"]

_BROKER_LIKE = ("broker", "controller", "leader", "coordinator", "txn-coordinator", "random-broker", "idle-broker")


@dataclass(frozen=True, slots=True)
class Target:
    """One node target expression. `id` is set for broker/zookeeper/consumer-member targets, `producer` for a
    producer target."""

    kind: TargetKind
    id: int | None = None
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    transactional_id: str | None = None
    producer: str | None = None

    @property
    def role(self) -> Role:
        """`controller` for a KRaft voter named by id (`controller:101`, `controller:any`); the active
        `controller` is broker-like (in ZooKeeper mode it is a broker; in KRaft the resolver decides)."""
        if self.kind == "any-controller" or (self.kind == "controller" and self.id is not None):
            return "controller"
        if self.kind in _BROKER_LIKE:
            return "broker"
        if self.kind == "producer":
            return "producer"
        return "zookeeper" if self.kind == "zookeeper" else "consumer"

    @property
    def is_static(self) -> bool:
        """True when the expression names the same node whatever the cluster's state."""
        return (self.kind in ("broker", "zookeeper", "consumer", "producer")
                or (self.kind == "controller" and self.id is not None))

    def __str__(self) -> str:
        if self.kind in ("broker", "zookeeper") or (self.kind == "controller" and self.id is not None):
            return f"{self.kind}:{self.id}"
        if self.kind == "any-controller":
            return "controller:any"
        if self.kind == "leader":
            return f"leader:{self.topic}/{self.partition}"
        if self.kind == "coordinator":
            return f"coordinator:{self.group}"
        if self.kind == "txn-coordinator":
            return f"txn_coordinator:{self.transactional_id}"
        if self.kind == "consumer":
            return f"consumer:{self.group}/{self.id}"
        if self.kind == "producer":
            return f"producer:{self.producer}"
        return self.kind


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """A directed link `src->dst`. `dst is None` with `all_zookeepers` means every ZooKeeper member."""

    src: Target | None  # None = client
    dst: Target

    def __str__(self) -> str:
        return f"{'client' if self.src is None else self.src}->{self.dst}"


ALL_ZOOKEEPERS = Target("zookeeper", None)
"""The link destination `zookeeper`: one proxy per member, all affected together."""


class TargetSyntaxError(ValueError):
    """The text is not a target expression; the message lists the accepted forms."""


_FORMS = ("broker:<id>, zookeeper:<id>, controller, controller:<id>, controller:any, leader:<topic>/<partition>, "
          "coordinator:<group>, txn_coordinator:<transactional id>, consumer:<group>/<member index>, producer:<id>, "
          "random-broker, idle-broker")
_NAME = r"[A-Za-z0-9._-]+"


def parse_target(text: str) -> Target:
    s = text.strip()
    if s in ("controller", "random-broker", "idle-broker"):
        return Target(s)  # type: ignore[arg-type]
    kind, sep, rest = s.partition(":")
    if not sep:
        raise TargetSyntaxError(f"unknown target; expected one of {_FORMS}")
    if kind == "controller" and rest == "any":
        return Target("any-controller")
    if kind in ("broker", "zookeeper", "controller"):
        if not rest.isdigit() or int(rest) < 1:
            raise TargetSyntaxError(f"{kind} id must be a positive integer, as in {kind}:1")
        return Target(kind, int(rest))  # type: ignore[arg-type]
    if kind == "leader":
        m = re.fullmatch(rf"({_NAME})/(\d+)", rest)
        if not m:
            raise TargetSyntaxError("expected leader:<topic>/<partition>, as in leader:orders/0")
        return Target("leader", topic=m.group(1), partition=int(m.group(2)))
    if kind == "coordinator":
        if not re.fullmatch(_NAME, rest):
            raise TargetSyntaxError("expected coordinator:<group>, as in coordinator:billing")
        return Target("coordinator", group=rest)
    if kind == "txn_coordinator":
        if not re.fullmatch(_NAME, rest):
            raise TargetSyntaxError("expected txn_coordinator:<transactional id>, as in txn_coordinator:payments-tx")
        return Target("txn-coordinator", transactional_id=rest)
    if kind == "consumer":
        m = re.fullmatch(rf"({_NAME})/(\d+)", rest)
        if not m:
            raise TargetSyntaxError("expected consumer:<group>/<member index>, as in consumer:billing/0")
        return Target("consumer", id=int(m.group(2)), group=m.group(1))
    if kind == "producer":
        if not re.fullmatch(_NAME, rest):
            raise TargetSyntaxError("expected producer:<id>, as in producer:payments-api")
        return Target("producer", producer=rest)
    raise TargetSyntaxError(f"unknown target kind {kind!r}; expected one of {_FORMS}")


def parse_link(text: str) -> LinkTarget:
    src_text, sep, dst_text = text.partition("->")
    if not sep:
        raise TargetSyntaxError("a link is <src>-><dst>, as in client->broker:1, broker:1->zookeeper, "
                                "broker:2->leader:orders/0")
    src_text, dst_text = src_text.strip(), dst_text.strip()
    src = None if src_text == "client" else parse_target(src_text)
    if src is not None and src.role not in ("broker", "controller"):
        raise TargetSyntaxError(f"a link starts at client, a broker or a controller, not {src_text!r}")
    dst = ALL_ZOOKEEPERS if dst_text == "zookeeper" else parse_target(dst_text)
    if dst.role in ("consumer", "producer"):
        raise TargetSyntaxError(f"a link ends at a broker, a controller or zookeeper, not {dst_text!r}")
    if src is None and dst.role == "zookeeper":
        raise TargetSyntaxError("clients do not talk to ZooKeeper; use broker:<id>->zookeeper")
    return LinkTarget(src, dst)
