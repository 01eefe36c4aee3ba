"""Notification and admin znodes of ZooKeeper-mode Kafka: ISR change notifications, the legacy
admin requests (preferred replica election, partition reassignment) and `/cluster/id`.

Owns their frozen value types with `encode()` (Kafka's JSON) and tolerant `decode()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.zk._json import ZnodeDecodeError, dumps, int_field, int_list, loads, topic_partitions
from harness.zk.paths import (
    CLUSTER_ID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
)


def _encode_partitions(version: int, partitions: tuple[tuple[str, int], ...]) -> bytes:
    """`{"version":v,"partitions":[{"topic":"t","partition":0}]}`, shared by several admin znodes."""
    return dumps({"version": version, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def _decode_partitions(what: str, data: bytes | str | None) -> tuple[tuple[tuple[str, int], ...], int]:
    obj = loads(what, data)
    return topic_partitions(what, obj.get("partitions"), data), int_field(what, obj, "version", data, 1)


@dataclass(frozen=True, slots=True)
class IsrChangeNotification:
    """`/isr_change_notification/isr_change_<seq>` (PERSISTENT_SEQUENTIAL):
    `{"version":1,"partitions":[{"topic":"t","partition":0}]}`."""

    partitions: tuple[tuple[str, int], ...]
    version: int = 1

    def encode(self) -> bytes:
        return _encode_partitions(self.version, self.partitions)

    @staticmethod
    def decode(data: bytes | str | None) -> IsrChangeNotification:
        return IsrChangeNotification(*_decode_partitions(ISR_CHANGE_NOTIFICATION_PATH, data))


@dataclass(frozen=True, slots=True)
class PreferredReplicaElection:
    """`/admin/preferred_replica_election`: `{"version":1,"partitions":[{"topic":"t","partition":0}]}`."""

    partitions: tuple[tuple[str, int], ...]
    version: int = 1

    def encode(self) -> bytes:
        return _encode_partitions(self.version, self.partitions)

    @staticmethod
    def decode(data: bytes | str | None) -> PreferredReplicaElection:
        return PreferredReplicaElection(*_decode_partitions(PREFERRED_REPLICA_ELECTION_PATH, data))


@dataclass(frozen=True, slots=True)
class ReassignPartitions:
    """`/admin/reassign_partitions` (legacy, pre-2.4 tooling):
    `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}`."""

    assignments: tuple[tuple[str, int, tuple[int, ...]], ...]
    version: int = 1

    def encode(self) -> bytes:
        parts = [{"topic": t, "partition": p, "replicas": list(r)} for t, p, r in self.assignments]
        return dumps({"version": self.version, "partitions": parts})

    @staticmethod
    def decode(data: bytes | str | None) -> ReassignPartitions:
        what = REASSIGN_PARTITIONS_PATH
        obj = loads(what, data)
        raw = obj.get("partitions")
        tps = topic_partitions(what, raw, data)
        items = raw if isinstance(raw, list) else []
        out = tuple(
            (t, p, int_list(what, item.get("replicas"), "replicas", data))
            for (t, p), item in zip(tps, items, strict=True)
        )
        return ReassignPartitions(out, int_field(what, obj, "version", data, 1))


def encode_cluster_id(cluster_id: str) -> bytes:
    """`/cluster/id`: `{"version":"1","id":"<id>"}` (Kafka writes the version as a string)."""
    return dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | str | None) -> str:
    obj = loads(CLUSTER_ID_PATH, data)
    if not isinstance(obj.get("id"), str):
        raise ZnodeDecodeError(CLUSTER_ID_PATH, "missing string 'id'", data)
    return str(obj["id"])
