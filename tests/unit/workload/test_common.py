"""Value/key encoding and the decoding of librdkafka's consumer-group metadata (generation source)."""

from __future__ import annotations

import struct

from harness.workload.common import decode_key, decode_value, encode_value, key_for, parse_group_metadata


def cgmd(generation: int, group: str, member: str) -> bytes:
    return b"CGMDv2:" + struct.pack("=i", generation) + group.encode() + b"\0" + member.encode() + b"\0\x01"


def test_values_are_decimal_integers_and_keys_cycle_through_the_key_space() -> None:
    assert encode_value(1_000_000_007) == b"1000000007"
    assert decode_value(b"1000000007") == 1_000_000_007
    assert decode_value(b"not-a-number") == "not-a-number"
    assert decode_value(None) is None
    assert [key_for(n, 3) for n in range(5)] == ["k0", "k1", "k2", "k0", "k1"]
    assert key_for(7, 0) is None
    assert decode_key(b"k2") == "k2" and decode_key(None) is None


def test_group_metadata_yields_generation_and_member_id() -> None:
    md = parse_group_metadata(cgmd(7, "billing", "rdkafka-abc"))
    assert md is not None
    assert (md.group, md.generation, md.member_id) == ("billing", 7, "rdkafka-abc")


def test_group_metadata_before_joining_has_no_generation_or_member() -> None:
    """librdkafka's own blob for a fresh consumer: generation -1, empty member id."""
    md = parse_group_metadata(b"CGMDv2:\xff\xff\xff\xffg1\x00\x00\x01")
    assert md is not None and md.generation is None and md.member_id is None and md.group == "g1"


def test_unknown_group_metadata_layouts_are_not_guessed() -> None:
    assert parse_group_metadata(b"CGMDv9:xxxx") is None
    assert parse_group_metadata(b"CGMDv2:\x01") is None
    assert parse_group_metadata("CGMDv2:") is None
