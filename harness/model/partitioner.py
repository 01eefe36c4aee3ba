"""Producer partitioners (KAFKA-BEHAVIOUR.md §6): which partition a keyed record goes to.

- `murmur2` / `murmur2_partition`: the Java client's default for keyed records (and librdkafka's
  `murmur2` / `murmur2_random`): `toPositive(Utils.murmur2(key)) % n`, `toPositive(x) = x & 0x7fffffff`.
- `consistent_partition`: librdkafka's default `consistent_random` (confluent-kafka's default):
  `crc32(key) % n` for a non-empty key. For a null OR empty key librdkafka picks a random
  partition, which no model can predict: `consistent_partition` returns None for those keys, and
  a verifier must accept any partition for such records.
"""

from __future__ import annotations

import zlib

from harness.errors import HarnessError

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2(byte[])`: the 32-bit MurmurHash2 (seed 0x9747b28c) as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    nblocks = length // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = data[4 * nblocks :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's `Utils.toPositive`: `n & 0x7fffffff` (not `abs`)."""
    return n & 0x7FFFFFFF


def _check_count(num_partitions: int, who: str) -> None:
    if num_partitions <= 0:
        raise HarnessError(f"{who}: num_partitions must be > 0, got {num_partitions!r}")


def murmur2_partition(key: bytes, num_partitions: int) -> int:
    """The partition the Java client's default partitioner (and librdkafka `murmur2`) picks for `key`."""
    _check_count(num_partitions, "murmur2_partition")
    return to_positive(murmur2(bytes(key))) % num_partitions


def consistent_partition(key: bytes | None, num_partitions: int) -> int | None:
    """librdkafka `consistent_random`: `crc32(key) % n`; None (random, unpredictable) for a null/empty key."""
    _check_count(num_partitions, "consistent_partition")
    if not key:
        return None
    return zlib.crc32(bytes(key)) % num_partitions
