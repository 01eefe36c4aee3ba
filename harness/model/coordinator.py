"""Group coordinator lookup (KAFKA-BEHAVIOUR.md §4): which `__consumer_offsets` partition owns a group.

Kafka computes `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, where `hashCode` is
Java's `String.hashCode` (32-bit signed arithmetic over UTF-16 code units) and `Utils.abs` is
`Math.abs` except that `Integer.MIN_VALUE` maps to 0. The coordinator is the leader of that
partition; there is no election of its own.
"""

from __future__ import annotations

from harness.errors import HarnessError

DEFAULT_OFFSETS_PARTITIONS = 50
"""Kafka's default `offsets.topic.num.partitions`."""
OFFSETS_TOPIC = "__consumer_offsets"
"""The internal topic whose partitions' leaders coordinate the groups and store their generations and offsets."""

_INT_MIN = -(2**31)


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def java_string_hashcode(s: str) -> int:
    """Java's `String.hashCode()`: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as int32."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _to_int32(h)


def kafka_abs(n: int) -> int:
    """Kafka's `Utils.abs`: `Math.abs(n)` for an int32, except `Integer.MIN_VALUE` -> 0."""
    return 0 if n == _INT_MIN else abs(n)


def coordinator_partition(group_id: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The `__consumer_offsets` partition whose leader coordinates `group_id`."""
    if num_partitions <= 0:
        raise HarnessError(
            f"coordinator_partition: num_partitions (offsets.topic.num.partitions) must be > 0, "
            f"got {num_partitions!r} for group {group_id!r}"
        )
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions
