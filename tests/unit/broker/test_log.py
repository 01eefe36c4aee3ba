"""Unit tests of the on-disk partition log: append, read, sparse index, segment roll, recovery."""

from __future__ import annotations

import os
from pathlib import Path

from harness.broker.log import LogSettings, PartitionLog
from harness.broker.records import build_batch, decode_records, iter_headers

SMALL = LogSettings(segment_bytes=4096, index_interval_bytes=512)


def batch(values: list[int]) -> bytearray:
    return bytearray(build_batch([(b"k", str(v).encode()) for v in values], timestamp_ms=1000 + values[0]))


def fill(plog: PartitionLog, n_batches: int, per: int = 5) -> None:
    for i in range(n_batches):
        plog.append(batch(list(range(i * per, (i + 1) * per))), 0, per)
    plog.high_watermark = plog.log_end_offset


def values_from(data: bytes) -> list[tuple[int, int]]:
    out = []
    for h in iter_headers(data):
        for off, _ts, _k, v in decode_records(data[h.position:h.position + h.length]):
            out.append((off, int(v or b"-1")))
    return out


def test_append_assigns_contiguous_offsets_and_read_returns_whole_batches(tmp_path: Path) -> None:
    """Offsets are rewritten on append; a read returns whole batches from the one holding the offset."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 10)
    assert plog.log_end_offset == 50
    data = plog.read(12, 1 << 20, plog.high_watermark)
    got = values_from(data)
    assert got[0] == (10, 10) and got[-1] == (49, 49)
    assert all(off == v for off, v in got)


def test_segments_roll_and_the_sparse_index_is_written(tmp_path: Path) -> None:
    """Small segment.bytes rolls segments; each has an .index with 8-byte entries."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 60)
    logs = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(logs) > 1 and logs[0].name == "00000000000000000000.log"
    assert all(p.with_suffix(".index").stat().st_size % 8 == 0 for p in logs)
    assert any(p.with_suffix(".index").stat().st_size > 8 for p in logs)
    for start in (0, 7, 123, 299):
        first = values_from(plog.read(start, 100, plog.high_watermark))
        assert first[0][0] <= start <= first[-1][0]


def test_read_stops_at_the_high_watermark(tmp_path: Path) -> None:
    """Consumers never see batches at or above the high watermark."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 4)
    got = values_from(plog.read(0, 1 << 20, upto=10))
    assert [o for o, _ in got] == list(range(10))
    assert plog.read(10, 1 << 20, upto=10) == b""


def test_first_batch_larger_than_max_bytes_is_still_returned(tmp_path: Path) -> None:
    """Like Kafka, a fetch returns at least one whole batch even if it exceeds max_bytes."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 2, per=50)
    assert len(values_from(plog.read(0, 10, plog.high_watermark))) == 50


def test_reopen_serves_what_it_had(tmp_path: Path) -> None:
    """A reopened log (restart) has the same end offset and contents, across segments."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 40)
    before = plog.read(0, 1 << 30, plog.high_watermark)
    plog.close()
    again = PartitionLog(tmp_path / "t-0", SMALL)
    assert again.log_end_offset == 200
    assert values_from(again.read(0, 1 << 30, again.high_watermark)) == values_from(before)[: len(
        values_from(again.read(0, 1 << 30, again.high_watermark)))]
    again.append(batch([200, 201]), 0, 2)
    assert again.log_end_offset == 202


def test_recovery_truncates_a_torn_tail(tmp_path: Path) -> None:
    """Half a batch at the end of the active segment (kill -9 mid-write) is cut off at open."""
    plog = PartitionLog(tmp_path / "t-0", LogSettings())
    fill(plog, 3)
    seg = plog.segments[-1].path
    plog.close()
    good = seg.stat().st_size
    with open(seg, "ab") as f:
        f.write(bytes(batch([99, 100]))[:40])
    again = PartitionLog(tmp_path / "t-0", LogSettings())
    assert again.log_end_offset == 15 and seg.stat().st_size == good
    assert again.append(batch([15]), 0, 1) == 15


def test_recovery_truncates_at_a_corrupt_batch(tmp_path: Path) -> None:
    """A batch whose CRC32C does not match ends the valid log; it and everything after is dropped."""
    plog = PartitionLog(tmp_path / "t-0", LogSettings())
    fill(plog, 3)
    seg = plog.segments[-1].path
    plog.close()
    raw = bytearray(seg.read_bytes())
    second = next(h for h in iter_headers(bytes(raw)) if h.base_offset == 5)
    raw[second.position + 70] ^= 0xFF
    seg.write_bytes(bytes(raw))
    again = PartitionLog(tmp_path / "t-0", LogSettings())
    assert again.log_end_offset == 5


def test_inconsistent_index_of_an_old_segment_is_rebuilt(tmp_path: Path) -> None:
    """A garbage .index for a closed segment is detected and rebuilt from the segment."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 60)
    first = plog.segments[0].index_path
    plog.close()
    first.write_bytes(os.urandom(13))
    again = PartitionLog(tmp_path / "t-0", SMALL)
    assert values_from(again.read(3, 100, again.high_watermark))[0][0] <= 3
    assert first.stat().st_size % 8 == 0


def test_flush_every_batch_policy_fsyncs(tmp_path: Path) -> None:
    """flush.interval.messages=1 leaves no unflushed messages after an append."""
    plog = PartitionLog(tmp_path / "t-0", LogSettings(flush_interval_messages=1))
    plog.append(batch([1, 2, 3]), 0, 3)
    assert plog.unflushed_messages == 0


def test_timestamp_lookup_and_truncate(tmp_path: Path) -> None:
    """offset_for_timestamp finds the first record at or after a time; truncate_to cuts at a batch."""
    plog = PartitionLog(tmp_path / "t-0", SMALL)
    fill(plog, 10)
    assert plog.offset_for_timestamp(1000 + 20) == (20, 1020)
    assert plog.offset_for_timestamp(10**12) is None
    plog.truncate_to(25)
    assert plog.log_end_offset == 25
