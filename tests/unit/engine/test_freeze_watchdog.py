"""`engine.freeze.FreezeWatchdog`: a process whose every Python thread stops (a C call holding the GIL, made here with
ctypes' PyDLL, which keeps the GIL across the call as confluent-kafka's `consumer_group_metadata()` does) writes
every thread's stack to the run's frozen-stacks.txt and exits with 1 once the timeout passes; a process that only
waits with the GIL released runs on, and leaves no file. Each case runs in a subprocess of its own: the watchdog
ends its process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import ctypes, sys, time
from pathlib import Path
from harness.engine.freeze import FreezeWatchdog
with FreezeWatchdog(Path(sys.argv[1]), timeout_s=1.0, beat_s=0.1):
    if sys.argv[2] == "hold":
        ctypes.PyDLL(None).sleep(30)  # libc sleep(3) with the GIL held: no thread can run
    else:
        time.sleep(2.5)  # waits with the GIL released: the beats go on
print("ended normally")
"""


def _run(tmp_path: Path, how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), str(tmp_path), how], cwd=ROOT,
                          capture_output=True, text=True, timeout=25, check=False)


def test_a_gil_held_for_longer_than_the_timeout_writes_every_stack_and_exits(tmp_path: Path) -> None:
    proc = _run(tmp_path, "hold")
    assert proc.returncode == 1 and "ended normally" not in proc.stdout, (proc.returncode, proc.stderr[-500:])
    stacks = (tmp_path / "frozen-stacks.txt").read_text()
    assert stacks.startswith("Timeout (0:00:01)!") and 'File "<string>"' in stacks, stacks[:500]
    assert "_beat" in stacks  # the watchdog's own beat thread is among them, stopped


def test_waiting_with_the_gil_released_is_no_freeze_and_leaves_no_file(tmp_path: Path) -> None:
    proc = _run(tmp_path, "wait")
    assert proc.returncode == 0 and "ended normally" in proc.stdout, proc.stderr[-500:]
    assert not (tmp_path / "frozen-stacks.txt").exists()
