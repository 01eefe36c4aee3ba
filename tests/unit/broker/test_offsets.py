"""Unit tests of committed offsets and group metadata in `__consumer_offsets` (Kafka's record formats)."""

from __future__ import annotations

from pathlib import Path

from harness.broker.log import LogSettings, PartitionLog
from harness.broker.offsets import Committed, group_key, group_value, offset_key, offset_value, read_partition
from harness.broker.records import build_batch
from harness.broker.topics import OFFSETS_TOPIC
from harness.model.coordinator import coordinator_partition
from harness.model.group import GroupCoordinator, GroupState


def offsets_log(tmp_path: Path, records: list[tuple[bytes, bytes | None]]) -> PartitionLog:
    plog = PartitionLog(tmp_path / f"{OFFSETS_TOPIC}-0", LogSettings(1 << 20, 4096, 1 << 62))
    for rec in records:
        plog.append(bytearray(build_batch([rec], 1)), 0, 1)
    return plog


def test_key_and_value_bytes_follow_kafka() -> None:
    """OffsetCommitKey v1 and OffsetCommitValue v3 byte layouts; GroupMetadataKey v2."""
    assert offset_key("g", "t", 1) == b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01"
    assert group_key("g") == b"\x00\x02\x00\x01g"
    v = offset_value(Committed(5, 0, "m", 7))
    assert v == b"\x00\x03" + (5).to_bytes(8, "big") + b"\x00\x00\x00\x00\x00\x01m" + (7).to_bytes(8, "big")


def test_replaying_a_partition_gives_the_last_commit_per_partition(tmp_path: Path) -> None:
    """Replaying an offsets partition keeps the last commit per (topic, partition) of each group."""
    plog = offsets_log(tmp_path, [
        (offset_key("g1", "orders", 0), offset_value(Committed(10, 0, "", 1))),
        (offset_key("g1", "orders", 1), offset_value(Committed(20, 0, "x", 1))),
        (offset_key("g1", "orders", 0), offset_value(Committed(11, 0, "", 2))),
    ])
    committed, groups = read_partition(plog)
    assert {tp: c.offset for tp, c in committed["g1"].items()} == {("orders", 0): 11, ("orders", 1): 20}
    assert committed["g1"][("orders", 1)].metadata == "x" and groups == {}


def test_group_generation_is_replayed(tmp_path: Path) -> None:
    """A stored group record gives back its last generation and protocol type."""
    coord = GroupCoordinator()
    coord.restore("g2", 4, "consumer")
    plog = offsets_log(tmp_path, [(group_key("g2"), group_value(coord.describe("g2"), 1))])
    _committed, groups = read_partition(plog)
    assert groups == {"g2": (4, "consumer")}


def test_tombstones_remove_offsets_and_groups(tmp_path: Path) -> None:
    """DeleteGroups' tombstones: after a replay the group has no offsets and no metadata."""
    plog = offsets_log(tmp_path, [
        (offset_key("g3", "orders", 2), offset_value(Committed(3, -1, "", 1))),
        (offset_key("g3", "orders", 2), None),
        (group_key("g3"), None),
    ])
    committed, groups = read_partition(plog)
    assert committed.get("g3", {}) == {} and groups == {"g3": None}
    assert coordinator_partition("g3", 5) in range(5)


def test_group_record_round_trip() -> None:
    """A stored GroupMetadataValue decodes back to generation, protocol, leader and member ids."""
    from harness.broker.offsets import decode_group_record
    from harness.model.group import GroupDescription, MemberDescription

    d = GroupDescription("g", GroupState.STABLE, 3, "consumer", "range", "m1",
                         (MemberDescription("m1", None, "c", "/h", b"meta", b"as"),
                          MemberDescription("m2", "i2", "c", "/h", b"", b"")))
    rec = decode_group_record(group_key("g"), group_value(d, 5))
    assert rec is not None
    assert (rec.group, rec.generation, rec.protocol, rec.leader, rec.members) == ("g", 3, "range", "m1", ("m1", "m2"))
    assert decode_group_record(offset_key("g", "t", 0), b"") is None
