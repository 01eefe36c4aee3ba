"""One local child process of the process backend (a broker, a KRaft controller, a ZooKeeper member or
the Toxiproxy server): started from an argv list (never a shell string) in its own process group, its
output appended to a log file, recorded for leftover cleanup (`leftovers.LeftoverRegistry`) while it
runs, and driven by signals sent to the whole group. The harness's one process supervisor.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.lifecycle import signal_group
from harness.errors import BackendError
from harness.waiting import poll_until


def tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log file (or why it could not be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 32768))
            text = fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"<log {path} unreadable: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


def wait_group_stopped(pid: int, timeout_s: float = 5.0) -> bool:
    """After SIGSTOP: wait until every thread of `pid` is in the stopped state (a thread inside an
    uninterruptible syscall, e.g. fsync, stops only when it returns; a thread that ended but is not yet
    reaped, state Z or X, counts as stopped). False on timeout or exit."""
    task_dir = Path(f"/proc/{pid}/task")

    def settled() -> str | None:
        try:
            states = []
            for task in task_dir.iterdir():
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    stat = (task / "stat").read_text()
                    states.append(stat[stat.rindex(")") + 2])
        except (FileNotFoundError, ProcessLookupError):
            return "exited"
        return "stopped" if states and all(s in "tTZX" for s in states) else None

    return poll_until(settled, timeout_s, poll_s=0.005) == "stopped"


class ManagedProcess:
    """A restartable child process in its own process group. Thread-safe; signals go to the group."""

    def __init__(
        self, what: str, argv: Sequence[str], *, cwd: Path, log_path: Path, registry: LeftoverRegistry,
        env: Mapping[str, str] | None = None, start_hint: str = "",
    ) -> None:
        """`start_hint` ends the error raised when the command cannot be executed (what to check)."""
        if not argv or not all(isinstance(a, str) for a in argv):
            raise BackendError(f"{what}: command must be a non-empty list of strings, got {argv!r}")
        self.what = what
        self.argv = tuple(argv)
        self.cwd = cwd
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.start_hint = start_hint
        self._registry = registry
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()
        self.starts = 0

    def __repr__(self) -> str:
        return f"ManagedProcess({self.what}, pid={self.pid}, running={self.is_running()})"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    def is_running(self) -> bool:
        """True while the process exists, paused (SIGSTOP) included."""
        with self._lock:
            return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the process; a BackendError if it is running already or cannot be executed."""
        with self._lock:
            if self.is_running():
                raise BackendError(f"{self.what} is already running (pid {self.pid}); stop or kill it first")
            self._forget()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as log:
                log.write(f"--- kafka-chaos: starting {self.what} at {time.time():.3f}: {list(self.argv)}\n"
                          .encode())
                log.flush()
                try:
                    self._proc = subprocess.Popen(
                        self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                        stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                    )
                except OSError as exc:
                    hint = f"; hint: {self.start_hint}" if self.start_hint else ""
                    raise BackendError(f"could not start {self.what}: {self.argv[0]!r}: {exc}{hint}") from exc
            self.starts += 1
            try:
                self._registry.register(self._proc.pid, self.what)
            except BaseException:
                self._signal(signal.SIGKILL)
                self._reap(10.0)
                raise

    def _forget(self) -> None:
        if self._proc is not None:
            self._registry.unregister(self._proc.pid)

    def _signal(self, sig: signal.Signals) -> bool:
        return signal_group(self._proc, sig)

    def _reap(self, timeout_s: float) -> bool:
        proc = self._proc
        if proc is None:
            return True
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        # Members of the group other than the leader (e.g. a script's children) die with it.
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        self._forget()
        return True

    def wait(self, timeout_s: float) -> int | None:
        """Wait for a process that ends by itself (a tool run): its exit code, or None if it still runs
        after `timeout_s` (the caller kills it)."""
        with self._lock:
            return self._proc.returncode if self._proc is not None and self._reap(timeout_s) else None

    def kill(self) -> None:
        """SIGKILL the process group and reap the leader. No-op when not running."""
        with self._lock:
            self._signal(signal.SIGKILL)
            if not self._reap(10.0):
                raise BackendError(f"{self.what} (pid {self.pid}) survived SIGKILL for 10s")

    def terminate(self, timeout_s: float) -> bool:
        """SIGTERM (+SIGCONT, in case it is paused) and wait up to `timeout_s`; then SIGKILL.

        Returns True when it exited on SIGTERM, False when it had to be SIGKILLed (or was not running).
        """
        with self._lock:
            if not self._signal(signal.SIGTERM):
                self._reap(1.0)
                return False
            self._signal(signal.SIGCONT)
            if self._reap(timeout_s):
                return True
            self._signal(signal.SIGKILL)
            if not self._reap(10.0):
                raise BackendError(f"{self.what} (pid {self.pid}) survived SIGKILL for 10s")
            return False

    def pause(self, timeout_s: float = 5.0) -> bool:
        """SIGSTOP the group and wait up to `timeout_s` until every thread of the leader is stopped;
        whether they all were (`wait_group_stopped`). A BackendError when it is not running."""
        with self._lock:
            if not self._signal(signal.SIGSTOP):
                raise BackendError(f"cannot pause {self.what}: it is not running")
            assert self._proc is not None
            return wait_group_stopped(self._proc.pid, timeout_s)

    def resume(self) -> None:
        with self._lock:
            if not self._signal(signal.SIGCONT):
                raise BackendError(f"cannot resume {self.what}: it is not running")

    def tail(self, lines: int = 20) -> str:
        return tail(self.log_path, lines)

    def exit_description(self) -> str:
        """`pid P exited with code C` / `running as pid P` / `never started`, for error messages."""
        proc = self._proc
        if proc is None:
            return "never started"
        code = proc.poll()
        if code is None:
            return f"running as pid {proc.pid}"
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"code {code}"
        return f"pid {proc.pid} exited with {how}"
