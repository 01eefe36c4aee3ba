"""Lifecycle helpers the backends share: bringing a cluster up so that a failure tears the
half-started cluster down (`start_or_teardown`), and signalling a child's whole process group
(`signal_group`, for `process_node.ManagedProcess`). What outlives the interpreter is the business of
`leftovers.LeftoverRegistry` (atexit / SIGTERM fallbacks and the next run's `clean_leftovers()`)."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Protocol, TypeVar

from harness.errors import TeardownError


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
