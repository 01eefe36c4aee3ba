"""A history whose disk is full (`/dev/full`: every write fails with ENOSPC, a real device, nothing faked): the
writer notices the first failed write, says so once with the path and the free bytes, never raises into the
observer or workload thread that called it, and counts what it could not record. The run-level behaviour (stop the
chaos, tear down, run.json `failed`, exit 2) is `tests/integration/process_backend/test_full_disk.py`."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest

from harness.engine.storage import QuietFileHandler, StorageWatch
from harness.errors import StorageError
from harness.history.events import Phase, RunStart

FULL = Path("/dev/full")
pytestmark = pytest.mark.skipif(not os.access(FULL, os.W_OK), reason="needs /dev/full")


def test_the_first_failed_write_is_reported_once_and_later_events_are_counted_not_raised() -> None:
    from harness.history.jsonl import HistoryWriter

    seen: list[StorageError] = []
    noticed = threading.Event()

    def on_failure(failure: StorageError) -> None:
        seen.append(failure)
        noticed.set()

    writer = HistoryWriter(FULL, on_failure=on_failure)
    try:
        writer.write(RunStart(experiment="e", variant="", backend="process", seed=1))  # flushed at once: fails
        assert noticed.wait(5)
        for _ in range(20):
            writer.write(Phase(name="chaos"))
    finally:
        writer.close()
    assert len(seen) == 1
    assert str(seen[0]).startswith("no space left on /dev/full: ")
    assert seen[0].no_space and writer.failure is seen[0]
    assert writer.dropped == 21 and writer.count == 0


def test_a_watch_raises_the_failure_in_the_runner_thread_only_when_asked() -> None:
    watch = StorageWatch()
    watch.check()  # nothing yet
    failure = StorageError("runs/x/history.jsonl", OSError(28, "No space left on device"), 4096)
    threading.Thread(target=watch, args=(failure,)).start()
    with pytest.raises(StorageError, match=r"no space left on runs/x/history.jsonl: 4096 bytes free"):
        for _ in range(100):
            watch.check()
            threading.Event().wait(0.01)


def test_a_log_file_on_a_full_disk_warns_once_instead_of_a_traceback_per_record(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.full-disk")
    handler = QuietFileHandler(str(FULL))
    logger.addHandler(handler)
    try:
        with caplog.at_level(logging.WARNING, logger="harness"):
            for n in range(50):
                logger.warning("record %d", n)
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert handler.broken
    assert "Logging error" not in capfd.readouterr().err
    assert [r.getMessage() for r in caplog.records if r.name == "harness"] == [
        "stopped writing /dev/full: [Errno 28] No space left on device"]
