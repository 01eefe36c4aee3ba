"""The engine's view of the cluster, folded from history events (ZooKeeper and Admin observers).

Steady-state probes read it, and dynamic fault targets (`controller`, `leader:t/p`,
`coordinator:g`) resolve against it when a fault fires. Thread-safe: observers call it from
their own threads as an `EventSink`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PartitionView:
    leader: int | None
    leader_epoch: int | None
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass(slots=True)
class ClusterState:
    expected_brokers: tuple[int, ...] = ()
    expected_partitions: frozenset[tuple[str, int]] = frozenset()
    expected_groups: tuple[str, ...] = ()
    controller: int | None = None
    controller_epoch: int | None = None
    live_brokers: set[int] = field(default_factory=set)
    partitions: dict[tuple[str, int], PartitionView] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    coordinators: dict[str, int] = field(default_factory=dict)
    voter_roles: dict[int, str] = field(default_factory=dict)
    """KRaft: each voter's role in its last DescribeQuorum answer (`quorum.state`): leader / follower."""
    events_seen: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def expecting(cls, brokers: Iterable[int], partitions: Mapping[str, int], groups: Iterable[str]) -> ClusterState:
        return cls(
            expected_brokers=tuple(brokers),
            expected_partitions=frozenset((t, p) for t, n in partitions.items() for p in range(n)),
            expected_groups=tuple(groups),
        )

    def leader(self, topic: str, partition: int) -> int | None:
        view = self.partitions.get((topic, partition))
        return None if view is None or view.leader is None or view.leader < 0 else view.leader

    def idle_brokers(self) -> list[int]:
        """Live brokers that lead no partition, ascending (pure followers)."""
        with self._lock:
            leading = {v.leader for v in self.partitions.values() if v.leader is not None}
            return sorted(b for b in self.live_brokers if b not in leading)

    @property
    def controller_live(self) -> bool:
        """A controller is known and alive: in ZooKeeper mode a live broker; in KRaft a voter whose last
        DescribeQuorum answer says it leads the quorum."""
        if self.controller is None:
            return False
        if self.voter_roles:
            return self.voter_roles.get(self.controller) == "leader"
        return self.controller in self.live_brokers

    def __call__(self, event: Mapping[str, Any]) -> None:
        self.apply(event)

    def apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        with self._lock:
            self.events_seen += 1
            if kind == "controller":
                broker = event.get("broker")
                self.controller = None if broker is None or broker < 0 else int(broker)
                if event.get("epoch") is not None:
                    self.controller_epoch = int(event["epoch"])
            elif kind == "quorum.state" and event.get("voter") is not None:
                self.voter_roles[int(event["voter"])] = str(event.get("role"))
            elif kind == "broker.up":
                self.live_brokers.add(int(event["broker"]))
            elif kind == "broker.down":
                self.live_brokers.discard(int(event["broker"]))
            elif kind == "partition.state":
                key = (str(event["topic"]), int(event["partition"]))
                old = self.partitions.get(key)
                replicas = event.get("replicas") or (old.replicas if old else ())
                self.partitions[key] = PartitionView(
                    leader=event.get("leader"), leader_epoch=event.get("leader_epoch"),
                    isr=tuple(event.get("isr") or ()), replicas=tuple(replicas),
                )
            elif kind == "group.state":
                group = str(event["group"])
                self.groups[group] = str(event.get("state"))
                if event.get("coordinator") is not None:
                    self.coordinators[group] = int(event["coordinator"])
