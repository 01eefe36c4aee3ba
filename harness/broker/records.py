"""Record batches (magic 2) as opaque bytes: header fields, offset rewriting, CRC checks, builders.

The broker never parses records on the produce or fetch path: it reads the 61-byte batch header
(base offset, length, leader epoch, magic, CRC32C, attributes, last offset delta, timestamps,
producer id/epoch/base sequence, record count) and rewrites only the fields outside the CRC
(base offset, partition leader epoch). Building and decoding whole records is only needed for the
broker's own `__consumer_offsets` records and timestamp lookups; kafka-python's record classes do it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from harness.errors import ProtocolError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
_OFFSET_EPOCH = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
COMPRESSION_MASK = 0x07
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed header of one record batch found at `position` in some buffer."""

    position: int
    base_offset: int
    length: int  # whole batch, including the 12-byte log overhead
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Header of the batch at `pos`; raises ProtocolError when it is not a whole magic-2 batch."""
    if len(buf) - pos < HEADER_SIZE:
        raise ProtocolError(f"record batch at byte {pos}: {len(buf) - pos} bytes left, header needs {HEADER_SIZE}")
    f = HEADER.unpack_from(buf, pos)
    length = f[1] + LOG_OVERHEAD
    if f[3] != 2:
        raise ProtocolError(f"record batch at byte {pos}: magic {f[3]} (only magic 2 is supported)")
    if f[1] < HEADER_SIZE - LOG_OVERHEAD or pos + length > len(buf):
        raise ProtocolError(f"record batch at byte {pos}: batchLength {f[1]} does not fit {len(buf) - pos} bytes")
    return BatchHeader(pos, f[0], length, f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12])


def iter_headers(buf: bytes | bytearray | memoryview) -> Iterator[BatchHeader]:
    """Every batch header in a buffer of back-to-back whole batches."""
    pos = 0
    while pos < len(buf):
        h = read_header(buf, pos)
        yield h
        pos += h.length


def crc_ok(buf: bytes | bytearray | memoryview, h: BatchHeader) -> bool:
    """Whether the batch's CRC32C (attributes to end) matches its header."""
    start = h.position + 21
    return bool(crc32c.crc32c(bytes(buf[start:h.position + h.length])) == h.crc)


def set_base_offset(buf: bytearray, pos: int, base_offset: int, leader_epoch: int) -> None:
    """Rewrite baseOffset and partitionLeaderEpoch (both outside the CRC) in place."""
    _OFFSET_EPOCH.pack_into(buf, pos, base_offset)
    _EPOCH.pack_into(buf, pos + 12, leader_epoch)


def build_batch(records: list[tuple[bytes | None, bytes | None]], timestamp_ms: int,
                base_offset: int = 0) -> bytes:
    """An uncompressed batch of (key, value) records, all stamped `timestamp_ms`."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=2**31 - 1)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=timestamp_ms, key=key, value=value, headers=[])
    out = bytearray(builder.build())
    _OFFSET_EPOCH.pack_into(out, 0, base_offset)
    return bytes(out)


def decode_records(batch: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record in one whole batch (decompressing if needed)."""
    return [(r.offset, r.timestamp, r.key, r.value) for r in DefaultRecordBatch(batch)]
