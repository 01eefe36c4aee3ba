"""One partition's log on disk: segment files, a sparse offset index, appends, reads and recovery.

Layout (Kafka's): `<log.dir>/<topic>-<partition>/<20-digit base offset>.log` holds whole record
batches back to back; `<base>.index` holds 8-byte entries (int32 offset relative to the segment
base, int32 byte position) written every `log.index.interval.bytes` of appended data. Appends are
plain `write(2)`s on unbuffered descriptors, so an acknowledged batch survives kill -9 of the
broker; `log.flush.interval.messages` decides when to fsync (1 = before every acknowledgement).

Recovery at open: the last segment is scanned batch by batch (length bounds, magic 2, CRC32C,
contiguous offsets) and truncated at the first torn or corrupt batch; its index is rebuilt.
Older segments trust their index when it is consistent and are rescanned when it is not.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c

from harness.broker.records import HEADER, HEADER_SIZE, LOG_OVERHEAD, BatchHeader, set_base_offset
from harness.errors import HarnessError

log = logging.getLogger(__name__)
_INDEX_ENTRY = struct.Struct(">ii")
_PEEK = struct.Struct(">qi")
_DELTA = struct.Struct(">i")
_SCAN_CHUNK = 1 << 20


class LogError(HarnessError):
    """A partition log cannot be opened, appended to or read."""


@dataclass(frozen=True, slots=True)
class LogSettings:
    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    flush_interval_messages: int = 2**63 - 1


class Segment:
    """One `.log` file plus its sparse `.index`, open for reading and (if active) appending."""

    def __init__(self, directory: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self.path = directory / f"{base_offset:020d}.log"
        self.index_path = directory / f"{base_offset:020d}.index"
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.next_offset = base_offset
        self.index_offsets = array("q")
        self.index_positions = array("q")
        self.since_index = 0

    def close(self) -> None:
        for fd in (self.fd, self.index_fd):
            try:
                os.close(fd)
            except OSError as exc:  # pragma: no cover - double close
                log.warning("closing %s: %s", self.path, exc)

    def add_index(self, offset: int, position: int, write: bool = True) -> None:
        self.index_offsets.append(offset)
        self.index_positions.append(position)
        if write:
            os.write(self.index_fd, _INDEX_ENTRY.pack(offset - self.base_offset, position))
        self.since_index = 0

    def lookup(self, offset: int) -> int:
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0

    def scan(self, verify: bool, index_interval: int = 4096) -> int:
        """Walk every batch from the start; rebuild the index; returns the byte size of the valid prefix."""
        self.index_offsets, self.index_positions = array("q"), array("q")
        self.since_index = 1 << 62
        pos, expected = 0, self.base_offset
        while pos < self.size:
            h = self._header_at(pos)
            if h is None or h.base_offset != expected:
                break
            if verify:
                body = os.pread(self.fd, h.length - 21, pos + 21)
                if len(body) != h.length - 21 or crc32c.crc32c(body) != h.crc:
                    break
            if self.since_index >= index_interval:
                self.add_index(h.base_offset, pos, write=False)
            self.since_index += h.length
            expected = h.next_offset
            pos += h.length
        self.next_offset = expected
        return pos

    def _header_at(self, pos: int) -> BatchHeader | None:
        raw = os.pread(self.fd, HEADER_SIZE, pos)
        if len(raw) < HEADER_SIZE:
            return None
        f = HEADER.unpack_from(raw)
        length = f[1] + LOG_OVERHEAD
        if f[3] != 2 or f[1] < HEADER_SIZE - LOG_OVERHEAD or pos + length > self.size:
            return None
        return BatchHeader(pos, f[0], length, *f[2:])

    def rewrite_index(self) -> None:
        os.ftruncate(self.index_fd, 0)
        data = b"".join(_INDEX_ENTRY.pack(o - self.base_offset, p)
                        for o, p in zip(self.index_offsets, self.index_positions, strict=True))
        if data:
            os.write(self.index_fd, data)

    def load_index(self) -> bool:
        """Load the on-disk sparse index; False when it is inconsistent with the segment."""
        raw = os.pread(self.index_fd, os.fstat(self.index_fd).st_size, 0)
        if len(raw) % _INDEX_ENTRY.size:
            return False
        last_off, last_pos = -1, -1
        for rel, pos in _INDEX_ENTRY.iter_unpack(raw):
            off = self.base_offset + rel
            if off <= last_off or pos <= last_pos or pos >= self.size:
                return False
            self.add_index(off, pos, write=False)
            last_off, last_pos = off, pos
        return True

    def headers_from(self, pos: int) -> Iterator[BatchHeader]:
        while pos < self.size:
            h = self._header_at(pos)
            if h is None:
                return
            yield h
            pos += h.length


class PartitionLog:
    """The log of one partition: append whole batches, read whole batches, find offsets."""

    def __init__(self, directory: Path, settings: LogSettings) -> None:
        self.dir = directory
        self.settings = settings
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segments: list[Segment] = []
        self.unflushed_messages = 0
        self._open()
        self.high_watermark = self.log_end_offset

    # ---- opening and recovery ----------------------------------------------------------------
    def _open(self) -> None:
        bases = sorted(int(p.stem) for p in self.dir.glob("*.log") if p.stem.isdigit())
        if not bases:
            bases = [0]
        for i, base in enumerate(bases):
            seg = Segment(self.dir, base)
            last = i == len(bases) - 1
            if last:
                valid = seg.scan(verify=True, index_interval=self.settings.index_interval_bytes)
                if valid < seg.size:
                    log.warning("%s: truncating torn/corrupt tail %d -> %d bytes", seg.path, seg.size, valid)
                    os.ftruncate(seg.fd, valid)
                    seg.size = valid
                seg.rewrite_index()
            else:
                seg.next_offset = bases[i + 1]
                if not seg.load_index():
                    seg.scan(verify=False, index_interval=self.settings.index_interval_bytes)
                    seg.rewrite_index()
            self.segments.append(seg)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
        self.segments = []

    # ---- offsets ---------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self.segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    # ---- append ----------------------------------------------------------------------------
    def append(self, batch: bytearray, leader_epoch: int, count: int) -> int:
        """Append one whole batch (its offsets are rewritten); returns its base offset."""
        seg = self.segments[-1]
        if seg.size and seg.size + len(batch) > self.settings.segment_bytes:
            seg = self._roll()
        base = seg.next_offset
        set_base_offset(batch, 0, base, leader_epoch)
        last_delta = _DELTA.unpack_from(batch, 23)[0]
        written = os.write(seg.fd, batch)
        if written != len(batch):
            raise LogError(f"{seg.path}: short write {written}/{len(batch)} bytes")
        if seg.since_index >= self.settings.index_interval_bytes or not seg.index_offsets:
            seg.add_index(base, seg.size)
        seg.since_index += len(batch)
        seg.size += len(batch)
        seg.next_offset = base + last_delta + 1
        self.unflushed_messages += count
        if self.unflushed_messages >= self.settings.flush_interval_messages:
            self.flush()
        return base

    def flush(self) -> None:
        seg = self.segments[-1]
        os.fsync(seg.fd)
        self.unflushed_messages = 0

    def _roll(self) -> Segment:
        old = self.segments[-1]
        os.fsync(old.fd)
        os.fsync(old.index_fd)
        seg = Segment(self.dir, old.next_offset)
        seg.next_offset = old.next_offset
        self.segments.append(seg)
        return seg

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or after `offset` (a batch boundary)."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            seg = self.segments.pop()
            seg.close()
            seg.path.unlink(missing_ok=True)
            seg.index_path.unlink(missing_ok=True)
        seg = self.segments[-1]
        for h in seg.headers_from(seg.lookup(offset)):
            if h.base_offset >= offset:
                os.ftruncate(seg.fd, h.position)
                seg.size = h.position
                break
        seg.scan(verify=False, index_interval=self.settings.index_interval_bytes)
        seg.rewrite_index()
        self.high_watermark = min(self.high_watermark, self.log_end_offset)

    # ---- read ------------------------------------------------------------------------------
    def _segment_for(self, offset: int) -> Segment:
        i = bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1
        return self.segments[max(i, 0)]

    def read(self, offset: int, max_bytes: int, upto: int) -> bytes:
        """Whole batches from the one holding `offset`, below `upto`, about `max_bytes` (≥ 1 batch)."""
        if offset >= upto or offset >= self.log_end_offset:
            return b""
        seg = self._segment_for(offset)
        pos = seg.lookup(offset)
        while pos < seg.size:
            raw = os.pread(seg.fd, 27, pos)
            base, length = _PEEK.unpack_from(raw)
            last_delta = _DELTA.unpack_from(raw, 23)[0]
            if base + last_delta >= offset:
                break
            pos += length + LOG_OVERHEAD
        else:
            return b""
        data = os.pread(seg.fd, max(max_bytes, HEADER_SIZE), pos)
        end, p = 0, 0
        while p + HEADER_SIZE <= len(data):
            base, length = _PEEK.unpack_from(data, p)
            if base >= upto:
                break
            size = length + LOG_OVERHEAD
            if p + size > len(data):
                if p == 0:  # a first batch larger than max_bytes still goes out whole
                    return os.pread(seg.fd, size, pos)
                break
            p += size
            end = p
        return data[:end]

    def batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, Segment]]:
        """Headers of every batch at or after the one holding `start_offset`."""
        for seg in self.segments:
            if seg.next_offset <= start_offset:
                continue
            for h in seg.headers_from(seg.lookup(start_offset)):
                if h.last_offset >= start_offset:
                    yield h, seg

    def read_batch(self, seg: Segment, h: BatchHeader) -> bytes:
        return os.pread(seg.fd, h.length, h.position)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp`, or None."""
        from harness.broker.records import decode_records

        for h, seg in self.batches(0):
            if h.max_timestamp >= timestamp:
                try:
                    for off, ts, _k, _v in decode_records(self.read_batch(seg, h)):
                        if ts >= timestamp:
                            return off, ts
                except Exception:  # an unsupported codec: fall back to the batch
                    return h.base_offset, h.max_timestamp
        return None
