"""Committed offsets and group metadata, stored as records of `__consumer_offsets` (Kafka's formats).

Owns the record formats of Kafka's GroupMetadataManager (keys: OffsetCommitKey v1 = version,
group, topic, partition; GroupMetadataKey v2 = version, group. Values: OffsetCommitValue v3 =
version, offset, leader epoch, metadata, commit timestamp; GroupMetadataValue v3 = version,
protocol type, generation, protocol, leader, state timestamp, members), writing them to the
group's partition `coordinator_partition(group, offsets.topic.num.partitions)` on its leader
(commits wait until replicated), and replaying one partition when this broker becomes its leader:
offsets come back exactly; each group comes back Empty with its last generation, so its members must
re-join (Kafka restores the members too and the group stays Stable: difference 10 of docs/apache-kafka.md).
Losing the leadership unloads the partition.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.broker.log import PartitionLog
from harness.broker.records import build_batch, decode_records
from harness.broker.topics import OFFSETS_TOPIC
from harness.model.coordinator import coordinator_partition
from harness.model.group import GroupDescription

if TYPE_CHECKING:
    from harness.broker.replica import ReplicaManager
    from harness.broker.topics import TopicStore

log = logging.getLogger(__name__)
_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class Committed:
    offset: int
    leader_epoch: int
    metadata: str
    timestamp_ms: int


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> _Writer:
        self.parts.append(_I16.pack(v))
        return self

    def i32(self, v: int) -> _Writer:
        self.parts.append(_I32.pack(v))
        return self

    def i64(self, v: int) -> _Writer:
        self.parts.append(_I64.pack(v))
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.i16(-1)
        raw = v.encode()
        self.parts.append(_I16.pack(len(raw)) + raw)
        return self

    def bytes_(self, v: bytes) -> _Writer:
        self.parts.append(_I32.pack(len(v)) + v)
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _take(self, s: struct.Struct) -> int:
        v = s.unpack_from(self.data, self.pos)[0]
        self.pos += s.size
        return int(v)

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        v = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return v


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _Writer().i16(1).string(group).string(topic).i32(partition).done()


def offset_value(c: Committed) -> bytes:
    return _Writer().i16(3).i64(c.offset).i32(c.leader_epoch).string(c.metadata).i64(c.timestamp_ms).done()


def group_key(group: str) -> bytes:
    return _Writer().i16(2).string(group).done()


def group_value(d: GroupDescription, now_ms: int) -> bytes:
    w = _Writer().i16(3).string(d.protocol_type).i32(d.generation_id).string(d.protocol_name or None)
    w.string(d.leader_id or None).i64(now_ms).i32(len(d.members))
    for m in d.members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
        w.i32(0).i32(0).bytes_(m.metadata).bytes_(m.assignment)
    return w.done()


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A decoded GroupMetadataValue (v0-v3): what an observer of `__consumer_offsets` learns."""

    group: str
    generation: int
    protocol_type: str
    protocol: str | None
    leader: str | None
    members: tuple[str, ...]


def decode_group_record(key: bytes, value: bytes | None) -> GroupRecord | None:
    """The group metadata in one `__consumer_offsets` record, or None (offset commit or tombstone)."""
    k = _Reader(key)
    if k.i16() != 2 or value is None:
        return None
    group = k.string() or ""
    v = _Reader(value)
    version = v.i16()
    protocol_type = v.string() or ""
    generation = v.i32()
    protocol, leader = v.string(), v.string()
    if version >= 2:
        v.i64()
    members = []
    for _ in range(v.i32()):
        members.append(v.string() or "")
        if version >= 3:
            v.string()
        v.string()
        v.string()
        if version >= 1:
            v.i32()
        v.i32()
        for _blob in range(2):
            n = v.i32()
            v.pos += max(n, 0)
    return GroupRecord(group, generation, protocol_type, protocol, leader, tuple(members))


GroupMeta = tuple[int, str] | None
"""A group's last stored (generation, protocol type), or None after a tombstone."""


def read_partition(plog: PartitionLog) -> tuple[dict[str, dict[tuple[str, int], Committed]], dict[str, GroupMeta]]:
    """Replay one `__consumer_offsets` partition: committed offsets and group generations (pure reading)."""
    committed: dict[str, dict[tuple[str, int], Committed]] = {}
    groups: dict[str, GroupMeta] = {}
    for h, seg in plog.batches(0):
        for _off, _ts, key, value in decode_records(plog.read_batch(seg, h)):
            if key is not None:
                _apply(committed, key, value, groups)
    return committed, groups


def _apply(committed: dict[str, dict[tuple[str, int], Committed]], key: bytes, value: bytes | None,
           groups: dict[str, GroupMeta]) -> None:
    r = _Reader(key)
    version = r.i16()
    group = r.string() or ""
    if version in (0, 1):
        tp = (r.string() or "", r.i32())
        if value is None:
            committed.get(group, {}).pop(tp, None)
            return
        v = _Reader(value)
        vv = v.i16()
        offset = v.i64()
        epoch = v.i32() if vv >= 3 else -1
        metadata = v.string() or ""
        ts = v.i64()
        committed.setdefault(group, {})[tp] = Committed(offset, epoch, metadata, ts)
    elif version == 2:
        if value is None:
            groups[group] = None
            return
        v = _Reader(value)
        v.i16()
        protocol_type = v.string() or ""
        groups[group] = (v.i32(), protocol_type)


class NotCoordinator(Exception):
    """This broker no longer leads the group's `__consumer_offsets` partition."""


class OffsetStore:
    """In-memory view of committed offsets of the loaded partitions, backed by `__consumer_offsets`.

    Writes go to the group's partition through the leader's log and, for commits, wait until the
    high watermark passed them (replicated to the ISR), as Kafka's acks=-1 offset appends.
    """

    def __init__(self, num_partitions: int, topics: TopicStore, replicas: ReplicaManager,
                 commit_timeout_ms: int) -> None:
        self.num_partitions = num_partitions
        self.topics = topics
        self.replicas = replicas
        self.commit_timeout_ms = commit_timeout_ms
        self.committed: dict[str, dict[tuple[str, int], Committed]] = {}

    def partition_for(self, group: str) -> int:
        return coordinator_partition(group, self.num_partitions)

    async def load_partition(self, p: int) -> dict[str, GroupMeta]:
        """Read partition `p` (in a worker thread) and merge its offsets; its groups' last generations."""
        plog = self.topics.partition(OFFSETS_TOPIC, p)
        if plog is None:
            return {}
        committed, groups = await asyncio.to_thread(read_partition, plog)
        for g in [g for g in self.committed if self.partition_for(g) == p]:
            del self.committed[g]
        self.committed.update(committed)
        log.info("loaded __consumer_offsets-%d: offsets of %d groups, %d group generations", p, len(committed),
                 sum(1 for m in groups.values() if m))
        return groups

    def unload_partition(self, p: int) -> None:
        for g in [g for g in self.committed if self.partition_for(g) == p]:
            del self.committed[g]

    def _append(self, group: str, records: list[tuple[bytes | None, bytes | None]], now_ms: int) -> tuple[int, int]:
        """Append to the group's partition on its leader; (partition, offset after the batch)."""
        p = self.partition_for(group)
        part = self.replicas.leading(OFFSETS_TOPIC, p)
        plog = self.topics.partition(OFFSETS_TOPIC, p)
        if part is None or plog is None:
            raise NotCoordinator(group)
        plog.append(bytearray(build_batch(records, now_ms)), part.leader_epoch, len(records))
        self.topics.notify(OFFSETS_TOPIC, p)
        self.replicas.maybe_advance_hw(part)
        return p, plog.log_end_offset

    async def _replicated(self, p: int, required: int) -> int:
        part = self.replicas.leading(OFFSETS_TOPIC, p)
        if part is None:
            raise NotCoordinator(str(p))
        return await self.replicas.wait_replicated(part, required, self.commit_timeout_ms / 1000, 1)

    async def commit(self, group: str, offsets: Iterable[tuple[str, int, Committed]], now_ms: int) -> int:
        """Append the commits, wait for replication, then expose them; the produce error code (0 = done)."""
        items = list(offsets)
        if not items:
            return 0
        p, required = self._append(group, [(offset_key(group, t, q), offset_value(c)) for t, q, c in items], now_ms)
        err = await self._replicated(p, required)
        if err == 0:
            mine = self.committed.setdefault(group, {})
            for t, q, c in items:
                mine[(t, q)] = c
        return err

    def store_group(self, desc: GroupDescription, now_ms: int) -> None:
        self._append(desc.group_id, [(group_key(desc.group_id), group_value(desc, now_ms))], now_ms)

    def delete_group(self, group: str, now_ms: int) -> None:
        tombstones: list[tuple[bytes | None, bytes | None]] = [
            (offset_key(group, t, p), None) for t, p in self.committed.get(group, {})]
        tombstones.append((group_key(group), None))
        self._append(group, tombstones, now_ms)
        self.committed.pop(group, None)

    def fetch(self, group: str) -> dict[tuple[str, int], Committed]:
        return self.committed.get(group, {})
