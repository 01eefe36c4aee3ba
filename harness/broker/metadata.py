"""The broker's metadata cache: what the controller last told it (UpdateMetadata), as Kafka's MetadataCache.

Owns the controller id and the highest controller epoch accepted (fencing), the live brokers with
their advertised endpoints (per listener name) and those in controlled shutdown, and every
partition's leader, leader epoch, ISR, replicas and offline replicas. Metadata, FindCoordinator
and DescribeCluster answer from here, and followers find their leader's address here. `changed`
wakes waiters (CreateTopics waits for its topic to appear). In standalone mode (no ZooKeeper) the
broker fills it itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.zk.znodes import Endpoint

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline: tuple[int, ...] = ()


def partition_to_json(topic: str, partition: int, info: PartitionInfo) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "leader": info.leader, "leader_epoch": info.leader_epoch,
            "isr": list(info.isr), "replicas": list(info.replicas), "offline": list(info.offline)}


def endpoints_to_json(broker_id: int, endpoints: Iterable[Endpoint]) -> dict[str, Any]:
    return {"id": broker_id, "endpoints": [[e.listener, e.host, e.port, e.security_protocol] for e in endpoints]}


def endpoints_from_json(doc: dict[str, Any]) -> tuple[int, tuple[Endpoint, ...]]:
    return int(doc["id"]), tuple(Endpoint(str(n), str(h), int(p), str(s)) for n, h, p, s in doc["endpoints"])


class MetadataCache:
    """Controller id/epoch, live brokers and partition states as this broker last learned them."""

    def __init__(self) -> None:
        self.controller_id = -1
        self.controller_epoch = 0
        self.brokers: dict[int, tuple[Endpoint, ...]] = {}
        self.shutting_down: frozenset[int] = frozenset()
        self.topics: dict[str, dict[int, PartitionInfo]] = {}
        self._changed: asyncio.Event | None = None

    # ---- queries ---------------------------------------------------------------------------
    def live(self) -> list[int]:
        return sorted(self.brokers)

    def live_not_stopping(self) -> list[int]:
        """Live brokers not in controlled shutdown: the only ones a leader adds to an ISR."""
        return sorted(b for b in self.brokers if b not in self.shutting_down)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.topics.get(topic, {}).get(partition)

    def endpoint(self, broker_id: int, listener: str) -> Endpoint | None:
        eps = self.brokers.get(broker_id, ())
        return next((e for e in eps if e.listener == listener), None)

    def set_brokers(self, brokers: dict[int, tuple[Endpoint, ...]]) -> None:
        self.brokers = dict(brokers)
        self.notify()

    # ---- updates ---------------------------------------------------------------------------
    def apply_update(self, body: dict[str, Any]) -> None:
        """An UpdateMetadata body: brokers (when present replace the live set), partitions, deletions."""
        if "brokers" in body:
            self.brokers = dict(endpoints_from_json(d) for d in body["brokers"])
            self.shutting_down = frozenset(int(b) for b in body.get("shutting_down", ()))
        for d in body.get("partitions", ()):
            self.put(str(d["topic"]), int(d["partition"]), PartitionInfo(
                int(d["leader"]), int(d["leader_epoch"]), tuple(d["isr"]), tuple(d["replicas"]),
                tuple(d.get("offline", ()))))
        for t in body.get("deleted_topics", ()):
            self.topics.pop(str(t), None)
        self.notify()

    def put(self, topic: str, partition: int, info: PartitionInfo) -> None:
        self.topics.setdefault(topic, {})[partition] = info

    def notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_changed(self, timeout_s: float) -> None:
        if self._changed is None:
            self._changed = asyncio.Event()
        ev = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ev.wait(), timeout_s)
