"""The watchdog of a frozen harness: when no Python thread has run for `timeout_s`, every thread's stack goes to the
run's `frozen-stacks.txt` and the process exits, so that the run ends as a crash (the lifeline reaps the cluster; the
history on disk stays readable and the verifiers never call the run a pass) instead of hanging until CI's limit.

A C call that waits while holding Python's GIL stops every thread, signal handlers and timeouts included: seen with
confluent-kafka's `consumer_group_metadata()` on a librdkafka client whose main thread had deadlocked
(docs/apache-kafka.md, "A librdkafka consumer that deadlocks"). The standard library's `faulthandler` watches from a C
thread of its own, which needs no GIL: a beat thread re-arms `faulthandler.dump_traceback_later` every `beat_s`, and
once the beats stop for `timeout_s` (no thread can take the GIL) faulthandler writes the stacks and exits with 1.
`faulthandler` holds one such timer per process, so a watchdog's exit cancels any other's.
"""

from __future__ import annotations

import faulthandler
import threading
from pathlib import Path
from types import TracebackType
from typing import IO

FROZEN_STACKS = "frozen-stacks.txt"
DEFAULT_TIMEOUT_S = 180.0
"""Far above any wait of the harness's own that holds the GIL (none is meant to), far below CI's 90 minutes."""


class FreezeWatchdog:
    """A context manager: armed on entry, disarmed on exit (the stacks file removed when nothing was written)."""

    def __init__(self, run_dir: Path, timeout_s: float = DEFAULT_TIMEOUT_S, beat_s: float = 5.0) -> None:
        self.path = Path(run_dir) / FROZEN_STACKS
        self.timeout_s = timeout_s
        self.beat_s = min(beat_s, timeout_s / 4)
        self._file: IO[str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _arm(self) -> None:
        assert self._file is not None
        faulthandler.dump_traceback_later(self.timeout_s, repeat=False, file=self._file, exit=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.beat_s):
            self._arm()  # re-arming replaces the pending timer

    def __enter__(self) -> FreezeWatchdog:
        self._file = self.path.open("w", encoding="utf-8")
        self._arm()
        self._thread = threading.Thread(target=self._beat, name="freeze-watchdog", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        faulthandler.cancel_dump_traceback_later()
        if self._file is not None:
            self._file.close()
            if self.path.stat().st_size == 0:
                self.path.unlink()
