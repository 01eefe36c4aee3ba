"""The run history: an append-only `history.jsonl`, one JSON event per line.

Owns the writer (thread-safe, stamps `t` and `wall`, flushes at least every 100 ms and on every
phase change, so a run killed with SIGKILL leaves every complete line readable), which takes typed events
(`harness.history.events`), and the tolerant reader (`iter_lines`: a torn last line is handed on as no object,
and `read_history` skips and counts it; unknown fields are kept) used by the verifiers' in-process evaluator
and by tests.
Event types and fields are the classes of `harness.history.events` (docs/design.md's "History" reference is
generated from them); extend, never rename.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, TypeAlias

from harness.errors import StorageError
from harness.history.events import HistoryEvent

if TYPE_CHECKING:  # imported when a writer makes a copy: pyarrow is not for every user of the history
    from harness.history.columnar import ColumnarCopy

Event: TypeAlias = dict[str, Any]
"""One history line read back: a JSON object (`type`, `src`, `t`, `wall` and its class's fields)."""

EventSink: TypeAlias = Callable[[HistoryEvent], None]
"""What observers, workloads and the engine call with each event; the writer stamps `t`/`wall`."""

FLUSH_INTERVAL_S = 0.1


def record_of(event: HistoryEvent) -> Event:
    """The record an event is written as (before the writer stamps `t`, and `wall` if it has none)."""
    return event.to_json()


def _default(value: object) -> object:
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _columnar_copy(path: Path) -> ColumnarCopy | None:
    """The copy beside `path`, or None (logged) if it cannot start: the history never depends on it."""
    try:
        from harness.history.columnar import ColumnarCopy

        return ColumnarCopy(path)
    except (OSError, ImportError) as exc:
        logging.getLogger(__name__).warning("no columnar copy of %s: %s (the verifiers will parse the history "
                                            "itself)", path, exc)
        return None


class HistoryWriter:
    """Appends events to `path`. Use as a context manager; `__call__` makes it an `EventSink`.

    `t` is seconds since the writer opened (monotonic clock), `wall` is epoch milliseconds; an
    event that already carries `wall` (stamped by its observer at observation time) keeps it and
    its `t` is derived from it. Lines are written whole under a lock; the file is flushed by a
    background thread every 100 ms, on every `phase` event, and on close. With `columnar`, the writer also
    builds the columnar copy beside the file (`harness.history.columnar`) as the run goes.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False, columnar: bool = False,
                 on_failure: Callable[[StorageError], None] | None = None) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._on_failure = on_failure
        self.failure: StorageError | None = None
        """The first write that failed (a full disk): from then on events are counted in `dropped`, not written,
        until `resume()`."""
        self.dropped = 0
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._copy: ColumnarCopy | None = None
        if columnar and self._file.tell() == 0:  # a history appended to is not copied
            self._copy = _columnar_copy(self.path)
        self._t0_mono = time.monotonic()
        self._t0_wall_ms = time.time() * 1000.0
        self._dirty = False
        self._count = 0
        self._closed = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="history-flush", daemon=True)
        self._flusher.start()

    @property
    def count(self) -> int:
        """How many events were written so far."""
        return self._count

    def now(self) -> float:
        """Seconds since the run started, on the history's clock."""
        return time.monotonic() - self._t0_mono

    def __call__(self, event: HistoryEvent) -> None:
        self.write(event)

    def write(self, event: HistoryEvent) -> None:
        if not isinstance(event, HistoryEvent):
            raise TypeError(f"a history event is an instance of a class of harness.history.events, "
                            f"not {type(event).__name__}: {event!r:.200}")
        record = record_of(event)
        if "wall" in record:
            record["t"] = round((float(record["wall"]) - self._t0_wall_ms) / 1000.0, 6)
        else:
            record["t"] = round(self.now(), 6)
            record["wall"] = int(self._t0_wall_ms + record["t"] * 1000.0)
        line = json.dumps(record, default=_default, separators=(",", ":")) + "\n"
        failed = None
        with self._lock:
            if self.failure is not None:
                self.dropped += 1
                return
            if self._file.closed:
                return
            try:
                self._file.write(line)
                if self._copy is not None and self._copy.add(line.encode()):
                    self._file.flush()  # the chunk's lines are in the file before its copy is committed
                self._dirty = True
                if record["type"] in ("phase", "run.start", "run.end"):
                    self._flush_locked()
                self._count += 1
            except OSError as exc:
                failed = self._fail_locked(exc)
        if failed is not None:
            self._report(failed)

    def _flush_locked(self) -> None:
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._dirty = False

    def _fail_locked(self, exc: OSError) -> StorageError:
        """The first failed write: stop writing (the file is closed, its unwritten buffer dropped; `resume` reopens
        it), stop the columnar copy, and say so once."""
        self.failure = StorageError.at(self.path, exc)
        self.dropped += 1
        with contextlib.suppress(OSError):
            self._file.close()
        if self._copy is not None:
            self._copy.stop(f"the history could not be written: {self.failure}")
        return self.failure

    def _report(self, failure: StorageError) -> None:
        logging.getLogger(__name__).error("the history stopped: %s", failure)
        if self._on_failure is not None:
            self._on_failure(failure)

    def resume(self) -> bool:
        """After a failure, once space was made: reopen the history, cut a line the failure tore, and write again.
        False (the failure stands) when even that cannot be written."""
        with self._lock:
            if self.failure is None:
                return True
            try:
                with open(self.path, "r+b") as fh:
                    fh.truncate(_complete_length(fh))
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            except OSError:
                return False
            self.failure = None
            return True

    def _flush_loop(self) -> None:
        while not self._closed.wait(FLUSH_INTERVAL_S):
            failed = None
            with self._lock:
                if self._dirty and not self._file.closed and self.failure is None:
                    try:
                        self._flush_locked()
                    except OSError as exc:
                        failed = self._fail_locked(exc)
            if failed is not None:
                self._report(failed)

    def close(self) -> None:
        self._closed.set()
        failed = None
        with self._lock:
            if not self._file.closed:
                try:
                    self._flush_locked()
                    self._file.close()
                except OSError as exc:
                    failed = self._fail_locked(exc) if self.failure is None else None
        if failed is not None:
            self._report(failed)
        if threading.current_thread() is not self._flusher:
            self._flusher.join(timeout=1.0)
        if self._copy is not None:
            copy, self._copy = self._copy, None
            copy.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _complete_length(fh: BinaryIO) -> int:
    """The length of `fh` up to and including its last newline (a write cut short leaves a torn line after it)."""
    end = fh.seek(0, os.SEEK_END)
    pos = end
    while pos > 0:
        step = min(pos, 64 * 1024)
        fh.seek(pos - step)
        block = fh.read(step)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return 0


@dataclass(slots=True)
class ReadResult:
    """What `read_history` found: the complete events, and how many lines it had to skip."""

    events: list[Event] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)
    truncated_tail: bool = False


@dataclass(frozen=True, slots=True)
class HistoryLine:
    """One non-blank line of a history file, as the tolerant reader hands it on."""

    number: int
    """1-based, counting blank lines too."""
    text: str
    """The line as written (UTF-8; undecodable bytes replaced), line ending included."""
    record: Event | None
    """The JSON object the line holds; None when it holds none (torn by a crash mid-write, or not an object)."""


def iter_lines(path: str | os.PathLike[str], *,
               decode: Callable[[str], object] = json.loads) -> Iterator[HistoryLine]:
    """Every non-blank line of `path` with the object `decode` reads from it (a line it refuses with a ValueError,
    or reads as anything but an object, has none). The one line loop over a history: `read_history`, the tests'
    helpers and the verifiers' in-process evaluator (which passes Spark's leniency as `decode`) all read
    through it."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            text = raw.decode("utf-8", "replace")
            if not text.strip():
                continue
            try:
                obj = decode(text)
            except ValueError:
                obj = None
            yield HistoryLine(number, text, obj if isinstance(obj, dict) else None)


def iter_history(path: str | os.PathLike[str]) -> Iterator[tuple[int, Event | None]]:
    """Yield (line number, event or None when the line is not a complete JSON object)."""
    for line in iter_lines(path):
        yield line.number, line.record


def read_history(path: str | os.PathLike[str]) -> ReadResult:
    """Read every complete event; a torn last line (crash mid-write) is skipped, never fatal."""
    result = ReadResult()
    last_bad = 0
    last_line = 0
    for lineno, event in iter_history(path):
        last_line = lineno
        if event is None:
            result.skipped_lines.append(lineno)
            last_bad = lineno
        else:
            result.events.append(event)
    result.truncated_tail = bool(last_bad) and last_bad == last_line
    return result
