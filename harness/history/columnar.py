"""The recorder's columnar copy of a history, written as the run goes, and reading it back.

`history.jsonl` stays the durable, human-readable record; the copy saves the verifiers from parsing millions of
bulk events again. Next to the history:

    history.columns/
      tier=<type>/part-<first line:012d>.parquet   the bulk events of one segment (`harness.history.bulk`)
      small.jsonl                                  every other line, with its line number
      manifest.jsonl                               one line per committed segment (see `_commit`)

The writer hands over whole lines (`ColumnarCopy.add`); every `chunk_bytes` a background thread splits the chunk
exactly as the verifiers' conversion would (`BulkSplitter`) into the current segment's files. Every `segment_bytes`
(and at the end) it closes the segment's Parquet files, flushes `small.jsonl`, and only then appends the segment's
manifest line: cumulative lines, bytes, CRC-32 of the history's bytes so far, and the size of `small.jsonl`. A crash
(even SIGKILL) therefore leaves a manifest whose complete lines name only finished files. `read_copy` trusts the
copy only when the history's first `end` bytes still have the recorded CRC; the lines after them (a crashed run's
tail, or everything if there is no copy) are split from the history as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import shutil
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.history.bulk import CHUNK_BYTES, BulkSplitter

COLUMNS_DIR = "history.columns"
MANIFEST = "manifest.jsonl"
SMALL = "small.jsonl"
COPY_FORMAT = 1
"""Bumped whenever the copy's layout or its bulk schema changes, so an older copy is ignored, not misread."""
COPY_CHUNK_BYTES = CHUNK_BYTES
"""Bytes of history per chunk: a row group of each bulk type's file (the recorder's default; tests make it small)."""
COPY_SEGMENT_BYTES = 8 * CHUNK_BYTES
"""Bytes of history per segment: one Parquet file per bulk type. Few files keep the checks' reads fast (50 files
per type instead of 7 cost the checks about 25% at 5M events); a crash loses at most a segment of the copy, which
the verifiers then read from the history."""
_LOG = logging.getLogger(__name__)


def part_name(first: int) -> str:
    """The Parquet file of the segment that begins at line `first`, in each of its types' folders."""
    return f"part-{first:012d}.parquet"


class ColumnarCopy:
    """Builds `history.columns/` beside `history` from the lines the writer hands over, in order.

    `add` is cheap (it keeps the line); the splitting happens on the copy's own thread, a chunk at a time, into
    the Parquet files of the current segment (one file per bulk type, a row group per chunk), which is committed
    once it holds `segment_bytes` of history, and at `close`. A failure there stops the copy (logged, kept in
    `error`), never the run: the history is complete either way.
    """

    def __init__(self, history: Path, *, chunk_bytes: int | None = None, segment_bytes: int | None = None) -> None:
        self.dir = history.parent / COLUMNS_DIR
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self._chunk_bytes = chunk_bytes or COPY_CHUNK_BYTES
        self._segment_bytes = segment_bytes or COPY_SEGMENT_BYTES
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._small: BinaryIO = (self.dir / SMALL).open("wb")
        self._manifest = (self.dir / MANIFEST).open("w", encoding="utf-8")
        self._lines = self._end = self._crc = 0
        self._segment: BulkSplitter | None = None
        self._segment_first = self._segment_size = 0
        self._totals = {"arrow_rows": 0, "side_lines": 0, "refused": 0}
        self.error: str | None = None
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="history-columns", daemon=True)
        self._worker.start()

    def add(self, line: bytes) -> bool:
        """Keep one whole line (newline included); True when it completed a chunk, handed to the copy's thread.
        Once the copy has failed, lines are no longer kept: nothing would split them."""
        if self.error is not None:
            return False
        self._pending.append(line)
        self._pending_bytes += len(line)
        if self._pending_bytes < self._chunk_bytes:
            return False
        self._cut()
        return True

    def close(self) -> None:
        """Split what is left, commit the last segment, wait for the copy's thread, close its files."""
        if self._pending:
            self._cut()
        self._queue.put(None)
        self._worker.join()
        for f in (self._small, self._manifest):
            try:
                f.close()
            except OSError as exc:
                self._fail(f"closing {f.name}: {exc}")

    def stop(self, reason: str) -> None:
        """Stop copying (the history itself could not be written, which its writer reports): committed segments
        stay, nothing more is kept."""
        self.error = self.error or reason
        self._pending, self._pending_bytes = [], 0

    def _cut(self) -> None:
        self._queue.put(b"".join(self._pending))
        self._pending, self._pending_bytes = [], 0

    def _work(self) -> None:
        while True:
            chunk = self._queue.get()
            if self.error is None:
                try:
                    if chunk is None:
                        self._commit()
                    else:
                        self._split(chunk)
                except Exception as exc:  # the copy is an optimisation; the history is complete
                    self._fail(f"{type(exc).__name__}: {exc}")
                    self._abandon()
            if chunk is None:
                return

    def _split(self, chunk: bytes) -> None:
        if self._segment is None:
            self._segment_first, self._segment_size = self._lines, 0
            self._segment = BulkSplitter(self.dir, self._small, part=part_name(self._lines))
        self._lines += self._segment.add(self._lines, chunk)
        self._end += len(chunk)
        self._crc = zlib.crc32(chunk, self._crc)
        self._segment_size += len(chunk)
        if self._segment_size >= self._segment_bytes:
            self._commit()

    def _commit(self) -> None:
        """Close the segment's Parquet files, flush `small.jsonl`, then write the segment's manifest line."""
        segment, self._segment = self._segment, None
        if segment is None:
            return
        segment.close()
        self._small.flush()
        for key, n in (("arrow_rows", segment.arrow_rows), ("side_lines", segment.side_lines),
                       ("refused", segment.refused)):
            self._totals[key] += n
        record = {"format": COPY_FORMAT, "first": self._segment_first, "lines": self._lines, "end": self._end,
                  "crc": self._crc, "small": self._small.tell(), "parts": sorted(segment.parts), **self._totals}
        self._manifest.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._manifest.flush()

    def _abandon(self) -> None:
        """Close the unfinished segment's files after a failure; the manifest never names them."""
        segment, self._segment = self._segment, None
        if segment is not None:
            with contextlib.suppress(Exception):
                segment.close()

    def _fail(self, reason: str) -> None:
        self.error = self.error or reason
        _LOG.warning("the columnar copy of the history under %s stopped: %s (the verifiers will parse the history "
                     "itself)", self.dir, reason)


def copy_history(history: Path, *, chunk_bytes: int | None = None, segment_bytes: int | None = None) -> ColumnarCopy:
    """Build the copy of an existing history from its lines, as the recorder does while a run goes; returns the
    closed copy (its `error` says whether it failed)."""
    copy = ColumnarCopy(history, chunk_bytes=chunk_bytes, segment_bytes=segment_bytes)
    with history.open("rb") as lines:
        for line in lines:
            copy.add(line)
    copy.close()
    return copy


@dataclass(frozen=True, slots=True)
class CopiedPrefix:
    """What a usable copy holds: the history's first `lines` lines (`end` bytes), as Parquet parts by type and
    the first `small_bytes` of `small` (`side_lines` lines); `arrow_rows` bulk rows; `refused` chunks Arrow left
    whole to the side file."""

    lines: int
    end: int
    parts: tuple[tuple[str, Path], ...]
    small: Path
    small_bytes: int
    arrow_rows: int
    side_lines: int
    refused: int


@dataclass(frozen=True, slots=True)
class _Segment:
    """One manifest line: the segment's first line and parts; the rest cumulative up to its end."""

    first: int
    lines: int
    end: int
    crc: int
    small: int
    parts: tuple[str, ...]
    arrow_rows: int
    side_lines: int
    refused: int


_COUNTS = ("first", "lines", "end", "crc", "small", "arrow_rows", "side_lines", "refused")


def _parse_segment(record: object) -> _Segment | None:
    if not isinstance(record, dict) or record.get("format") != COPY_FORMAT:
        return None
    parts = record.get("parts")
    if not all(type(record.get(k)) is int for k in _COUNTS) or not isinstance(parts, list) \
            or not all(isinstance(p, str) for p in parts):
        return None
    return _Segment(**{k: record[k] for k in _COUNTS}, parts=tuple(parts))


def _segments(manifest: Path) -> Iterator[_Segment]:
    """The manifest's complete, well-formed, consecutive segment records (a torn last line ends them)."""
    lines = 0
    for text in manifest.read_bytes().split(b"\n"):
        try:
            segment = _parse_segment(json.loads(text))
        except ValueError:
            return
        if segment is None or segment.first != lines:
            return
        lines = segment.lines
        yield segment


def prefix_blocks(path: Path, end: int, block: int = 8 * 1024 * 1024) -> Iterator[bytes]:
    """The first `end` bytes of `path`, in blocks; OSError if the file is shorter."""
    left = end
    with path.open("rb") as stream:
        while left:
            data = stream.read(min(left, block))
            if not data:
                raise OSError(f"{path} ends {left} bytes before byte {end}")
            left -= len(data)
            yield data


def prefix_crc(history: Path, end: int) -> int:
    """CRC-32 of the history's first `end` bytes (OSError if it is shorter)."""
    crc = 0
    for data in prefix_blocks(history, end):
        crc = zlib.crc32(data, crc)
    return crc


def read_copy(history: Path) -> CopiedPrefix | None:
    """The columnar copy beside `history`, if it is complete for a prefix of the history as it is now on disk
    (same bytes: CRC-32), else None. Read-only: works on an archived run."""
    folder = history.parent / COLUMNS_DIR
    try:
        segments = list(_segments(folder / MANIFEST))
        if not segments:
            return None
        last, small = segments[-1], folder / SMALL
        if prefix_crc(history, last.end) != last.crc or small.stat().st_size < last.small:
            return None
        parts = tuple((kind, folder / f"tier={kind}" / part_name(s.first)) for s in segments for kind in s.parts)
        if not all(path.is_file() for _, path in parts):
            return None
    except OSError:
        return None
    return CopiedPrefix(last.lines, last.end, parts, small, last.small, last.arrow_rows, last.side_lines,
                        last.refused)
