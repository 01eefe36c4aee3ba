"""Unit tests of committed offsets and group metadata in `__consumer_offsets` (Kafka's record formats)."""

from __future__ import annotations

from pathlib import Path

from harness.broker.config import build_config
from harness.broker.offsets import Committed, OffsetStore, group_key, offset_key, offset_value
from harness.broker.topics import OFFSETS_TOPIC, TopicStore
from harness.model.coordinator import coordinator_partition
from harness.model.group import GroupCoordinator, GroupState


def store(tmp_path: Path) -> tuple[TopicStore, OffsetStore]:
    topics = TopicStore(build_config({"log.dirs": str(tmp_path), "offsets.topic.num.partitions": "5"}))
    topics.load()
    topics.create("orders", 3)
    return topics, OffsetStore(topics, 5)


def test_key_and_value_bytes_follow_kafka() -> None:
    """OffsetCommitKey v1 and OffsetCommitValue v3 byte layouts; GroupMetadataKey v2."""
    assert offset_key("g", "t", 1) == b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01"
    assert group_key("g") == b"\x00\x02\x00\x01g"
    v = offset_value(Committed(5, 0, "m", 7))
    assert v == b"\x00\x03" + (5).to_bytes(8, "big") + b"\x00\x00\x00\x00\x00\x01m" + (7).to_bytes(8, "big")


def test_commits_go_to_the_groups_partition_and_survive_a_reload(tmp_path: Path) -> None:
    """Commits land in partition coordinator_partition(group); a fresh store (restart) replays them."""
    topics, offsets = store(tmp_path)
    offsets.commit("g1", [("orders", 0, Committed(10, 0, "", 1)), ("orders", 1, Committed(20, 0, "x", 1))], 1)
    offsets.commit("g1", [("orders", 0, Committed(11, 0, "", 2))], 2)
    p = coordinator_partition("g1", 5)
    assert topics.topics[OFFSETS_TOPIC].partitions[p].log_end_offset == 3
    topics.close()
    topics2 = TopicStore(topics.config)
    topics2.load()
    again = OffsetStore(topics2, 5)
    again.load(GroupCoordinator())
    assert {tp: c.offset for tp, c in again.fetch("g1").items()} == {("orders", 0): 11, ("orders", 1): 20}


def test_group_generation_is_restored_empty(tmp_path: Path) -> None:
    """A stored group comes back Empty with its last generation, so generations keep increasing."""
    topics, offsets = store(tmp_path)
    coord = GroupCoordinator()
    coord.restore("g2", 4, "consumer")
    offsets.store_group(coord.describe("g2"), 1)
    fresh = GroupCoordinator()
    OffsetStore(topics, 5).load(fresh)
    d = fresh.describe("g2")
    assert (d.state, d.generation_id, d.protocol_type) == (GroupState.EMPTY, 4, "consumer")


def test_deleted_group_leaves_tombstones(tmp_path: Path) -> None:
    """DeleteGroups writes tombstones: after a reload the group has no offsets."""
    topics, offsets = store(tmp_path)
    offsets.commit("g3", [("orders", 2, Committed(3, -1, "", 1))], 1)
    offsets.delete_group("g3", 2)
    again = OffsetStore(topics, 5)
    again.load(GroupCoordinator())
    assert again.fetch("g3") == {}


def test_group_record_round_trip() -> None:
    """A stored GroupMetadataValue decodes back to generation, protocol, leader and member ids."""
    from harness.broker.offsets import decode_group_record, group_value
    from harness.model.group import GroupDescription, MemberDescription

    d = GroupDescription("g", GroupState.STABLE, 3, "consumer", "range", "m1",
                         (MemberDescription("m1", None, "c", "/h", b"meta", b"as"),
                          MemberDescription("m2", "i2", "c", "/h", b"", b"")))
    rec = decode_group_record(group_key("g"), group_value(d, 5))
    assert rec is not None
    assert (rec.group, rec.generation, rec.protocol, rec.leader, rec.members) == ("g", 3, "range", "m1", ("m1", "m2"))
    assert decode_group_record(offset_key("g", "t", 0), b"") is None
