"""The history writer: stamps, flush policy, and a SIGKILLed writer leaves only readable lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.history.events import Controller, Phase, Probe
from harness.history.jsonl import HistoryWriter, read_history

CHILD = r"""
import sys, itertools
from harness.history.events import Send
from harness.history.jsonl import HistoryWriter
w = HistoryWriter(sys.argv[1])
pad = "x" * 300
print("ready", flush=True)
for i in itertools.count():
    w.write(Send(src="producer:p0", producer="p0", value=i, key=pad, topic="t", acks="all"))
"""


def test_writer_stamps_t_and_wall_and_keeps_observer_wall(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:
        w.write(Phase(name="setup"))
        wall = int(time.time() * 1000) + 500
        w.write(Controller(src="zk", broker=1, epoch=1, wall=wall))
    events = read_history(path).events
    assert events[0]["t"] >= 0 and isinstance(events[0]["wall"], int)
    assert events[1]["wall"] == wall and 0.4 <= events[1]["t"] <= 1.5


def test_writer_refuses_a_record_that_is_not_a_typed_event(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "h.jsonl") as w, pytest.raises(TypeError, match=r"harness\.history\.events"):
        w.write({"type": "phase", "src": "engine"})  # type: ignore[arg-type]


def test_events_reach_the_file_within_the_flush_interval(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:
        w.write(Probe(name="x", ok=True, detail="", when="before"))
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not path.read_text():
            time.sleep(0.02)
        assert json.loads(path.read_text())["type"] == "probe"


def test_sigkilled_writer_leaves_every_complete_line_readable(tmp_path: Path) -> None:
    """A child writes events flat out and is killed with SIGKILL mid-write; every complete line parses,
    at most the torn last line is skipped, and the values are a gap-free prefix."""
    path = tmp_path / "history.jsonl"
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 2_000_000):
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    raw = path.read_bytes()
    result = read_history(path)
    complete = raw.count(b"\n")
    assert len(result.events) == complete > 1000
    assert result.skipped_lines in ([], [complete + 1])
    assert [e["value"] for e in result.events] == list(range(len(result.events)))
