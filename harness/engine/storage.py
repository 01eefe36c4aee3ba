"""The run's own writes when the disk under them fills up: the watch the recorder reports its first failed write
to (the runner stops the chaos at the next tick, heals and tears down, frees the run's reserve, and records the run
as `failed`), and the clients' log handler that goes quiet instead of printing a traceback per record."""

from __future__ import annotations

import logging
import threading

from harness.errors import StorageError


class StorageWatch:
    """Set (from any thread) by the history writer's first failed write; `check()` raises it in the runner's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failure: StorageError | None = None

    def __call__(self, failure: StorageError) -> None:
        with self._lock:
            self.failure = self.failure or failure

    def check(self) -> None:
        """Raise the recorder's failure, if there was one: the run stops here."""
        if self.failure is not None:
            raise self.failure


class QuietFileHandler(logging.FileHandler):
    """A log file that, once a write fails (a full disk), says so once on the `harness` logger and drops the rest:
    the default handler prints a traceback to stderr for every record after that (hundreds in a run)."""

    def __init__(self, filename: str, encoding: str = "utf-8") -> None:
        super().__init__(filename, encoding=encoding)
        self.broken = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.broken:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        if self.broken:
            return
        self.broken = True
        logging.getLogger("harness").warning("stopped writing %s: %s", self.baseFilename, _current_error())
        stream, self.stream = self.stream, None
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


def _current_error() -> str:
    import sys

    exc = sys.exc_info()[1]
    return str(exc) if exc is not None else "a write failed"
