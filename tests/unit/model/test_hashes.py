"""Java-compatible hashes: String.hashCode + Utils.abs (coordinator, §4) and murmur2 / CRC32 (§6)."""

from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.model.coordinator import coordinator_partition, java_string_hashcode, kafka_abs
from harness.model.partitioner import consistent_partition, murmur2, murmur2_partition, to_positive

# Values printed by OpenJDK 17 on the project machine with a one-off program doing
# `s.hashCode()` and Kafka's `Utils.abs(h) % 50` (GroupMetadataManager.partitionFor).
# Independently documented ones: "hello".hashCode() == 99162322 (classic Java example);
# "Aa" and "BB" collide at 2112 (the textbook String.hashCode collision);
# "polygenelubricants".hashCode() == Integer.MIN_VALUE (well-known case, Java Puzzlers lore),
# which Kafka's Utils.abs maps to 0 where Math.abs would stay negative.
JAVA_VECTORS = [
    ("", 0, 0),
    ("a", 97, 47),
    ("hello", 99162322, 22),
    ("Aa", 2112, 12),
    ("BB", 2112, 12),
    ("polygenelubricants", -2147483648, 0),
    ("test-group", 627841412, 12),
    ("my-group", -1906497762, 12),
    ("billing", -109829509, 9),
    ("console-consumer-12345", 158455506, 6),
    ("kafka-chaos", -1485378023, 23),
    ("gr\u00fcppe", -1233264812, 12),
    ("\u65e5\u672c\u8a9e", 25921943, 43),
    ("emoji-\U0001f600", 1164511306, 6),  # non-BMP: hashed as two UTF-16 surrogate code units
    ("group-0", 293427298, 48),
    ("group-1", 293427299, 49),
    ("group-42", 506311820, 20),
]


@pytest.mark.parametrize(("text", "hashcode", "partition"), JAVA_VECTORS)
def test_java_string_hashcode_and_coordinator_partition_match_java(
    text: str, hashcode: int, partition: int
) -> None:
    assert java_string_hashcode(text) == hashcode
    assert coordinator_partition(text) == partition


def test_kafka_abs_maps_int_min_to_zero() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5


def test_coordinator_partition_respects_partition_count_and_rejects_zero() -> None:
    assert coordinator_partition("hello", 7) == 99162322 % 7
    with pytest.raises(HarnessError, match="num_partitions"):
        coordinator_partition("hello", 0)


# Kafka's own vectors: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
KAFKA_MURMUR2_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), KAFKA_MURMUR2_VECTORS)
def test_murmur2_matches_kafka_utils_test_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected
    assert murmur2_partition(data, 12) == (expected & 0x7FFFFFFF) % 12


def test_to_positive_is_mask_not_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0


def test_consistent_partition_is_crc32_and_none_for_null_or_empty_key() -> None:
    # zlib CRC32 of b"123456789" is the standard check value 0xCBF43926.
    assert consistent_partition(b"123456789", 1000) == 0xCBF43926 % 1000
    assert consistent_partition(None, 3) is None
    assert consistent_partition(b"", 3) is None
    with pytest.raises(HarnessError):
        consistent_partition(b"k", 0)


def _bundled_librdkafka() -> ctypes.CDLL | None:
    libdir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
    found = glob.glob(os.path.join(libdir, "librdkafka*.so*"))
    if not found:
        return None
    lib = ctypes.CDLL(found[0])
    for name in ("rd_kafka_msg_partitioner_murmur2", "rd_kafka_msg_partitioner_consistent"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_void_p,
                       ctypes.c_void_p]
    return lib


_LIB = _bundled_librdkafka()


@pytest.mark.skipif(_LIB is None, reason="confluent-kafka wheel bundles no librdkafka .so to compare with")
@settings(max_examples=300, deadline=None)
@given(key=st.binary(min_size=1, max_size=64), n=st.integers(min_value=1, max_value=1000))
def test_partitioners_match_bundled_librdkafka(key: bytes, n: int) -> None:
    """Our murmur2/consistent partitioners equal librdkafka's own functions (called in-process via ctypes)."""
    assert _LIB is not None
    size = len(key)
    assert murmur2_partition(key, n) == _LIB.rd_kafka_msg_partitioner_murmur2(None, key, size, n, None, None)
    expected = _LIB.rd_kafka_msg_partitioner_consistent(None, key, size, n, None, None)
    assert consistent_partition(key, n) == expected
