"""The lifeline: a watchdog process that outlives a SIGKILLed harness by a moment, and kills what it left.

The harness starts one reaper (`start_reaper`, on its first `LeftoverRegistry`) in a session of its own, holding
the read end of a pipe whose write end only the harness holds (nothing else inherits it: every child is started
with `close_fds`). The reaper blocks reading the pipe. However the harness ends, its end closes and the read
returns: after a normal exit the harness has torn down and removed its records, so the reaper finds nothing; after
a SIGKILL (a CI runner cancelling the job) it waits until the owner is gone and runs `clean_leftovers` over the
registry directory, which kills every recorded process group of a dead owner (brokers, controllers, ZooKeeper,
Toxiproxy, the isolated observer, the Spark driver JVM), within a second or two, without a later run. Its own
session keeps it out of a signal sent to the harness's process group. As Ryuk does for Testcontainers, but for
processes (containers keep their labels and the next run's cleanup; docs/design.md "Interrupts and leftovers").

`python -m harness.cluster.reaper DIR OWNER_PID OWNER_CREATE_TIME` is the reaper itself.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

from harness.cluster.owners import owner_alive, this_owner
from harness.waiting import poll_until

OWNER_GONE_S = 10.0
"""How long the reaper waits for its owner to be gone once the lifeline closed (its exit is under way)."""
_LOCK = threading.Lock()
_STARTED: dict[str, subprocess.Popen[bytes]] = {}


def start_reaper(directory: Path) -> None:
    """Start this process's reaper for `directory` (once per directory; a failure to start one is not fatal: the
    next run's `clean_leftovers` remains)."""
    key = str(directory)
    with _LOCK:
        if key in _STARTED and _STARTED[key].poll() is None:
            return
        pid, created = this_owner()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "harness.cluster.reaper", key, str(pid), repr(created)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True, env={**os.environ, "PYTHONPATH": _project_root()})
        except OSError:
            return
        _STARTED[key] = proc  # its stdin (our write end) stays open for the life of this process


def _project_root() -> str:
    root = str(Path(__file__).resolve().parents[2])
    old = os.environ.get("PYTHONPATH")
    return root if not old else f"{root}:{old}"


def reap(directory: Path, owner_pid: int, owner_create_time: float) -> int:
    """Wait for the lifeline to close, then for the owner to be gone, then kill what its records name."""
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    poll_until(lambda: not owner_alive(owner_pid, owner_create_time), OWNER_GONE_S, poll_s=0.05)
    from harness.cluster.leftovers import clean_leftovers

    try:
        clean_leftovers(directory)
    except Exception:  # a survivor: the next run's clean_leftovers tries again
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(reap(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])))
