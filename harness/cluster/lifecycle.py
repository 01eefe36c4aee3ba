"""Lifecycle helpers every backend shares: bringing a cluster up so that a failure tears the
half-started cluster down, and the in-process registry of live child process groups that an
atexit hook kills, so nothing outlives the interpreter that started it."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
from typing import Protocol, TypeVar

from harness.errors import TeardownError

_LIVE: dict[int, str] = {}
_LIVE_LOCK = threading.Lock()


def track_group(pgid: int, what: str) -> None:
    """Remember a running child process group (killed at interpreter exit unless untracked)."""
    with _LIVE_LOCK:
        _LIVE[pgid] = what


def untrack_group(pgid: int) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(pgid, None)


def signal_group(proc: subprocess.Popen[bytes] | None, sig: signal.Signals) -> bool:
    """Send `sig` to the process group of a child started with start_new_session; False when it has
    no running process (never started, exited, or gone between the check and the signal)."""
    if proc is None or proc.poll() is not None:
        return False
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def _kill_tracked_groups() -> None:
    with _LIVE_LOCK:
        pgids = list(_LIVE)
        _LIVE.clear()
    for pgid in pgids:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(_kill_tracked_groups)


class _Startable(Protocol):
    def _start_all(self) -> None: ...

    def down(self) -> None: ...


C = TypeVar("C", bound=_Startable)


def start_or_teardown(cluster: C) -> C:
    """Start every node of `cluster`; on any failure (Ctrl-C included) tear down what started, and
    re-raise the original error with the teardown failure attached as a note."""
    try:
        cluster._start_all()
    except BaseException as exc:
        try:
            cluster.down()
        except TeardownError as td:
            exc.add_note(f"and tearing the half-started cluster down failed too: {td}")
        raise
    return cluster
