"""The power-loss filesystem, the harness's side: `LazyFs` owns one mount of `harness.cluster.lazyfs_daemon` (a FUSE
passthrough with LazyFS's semantics: a power loss loses what was not fsynced) over a backing directory. It starts the
daemon and waits for the mount and its control socket, asks it to `crash` (undo every write and entry no fsync made
durable, once the files' user is dead), to `fail` operations with an errno until `clear`, and unmounts it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.cluster.base import UnsyncedLoss
from harness.errors import BackendError, TeardownError


def fuse_mounted(path: Path | str) -> bool:
    """Whether a FUSE filesystem is mounted at `path` (an absolute, resolved path), by /proc/self/mountinfo."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            fields, _, fs = line.partition(" - ")
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields.split()[4])
            if point == str(path) and fs.startswith("fuse"):
                return True
    return False


class LazyFs:
    """One LazyFS mount: `backing` served at `mount` by a daemon listening on `control` (its log: `log`, by default
    beside the socket)."""

    def __init__(self, backing: Path, mount: Path, control: Path, log: Path | None = None) -> None:
        self.backing, self.mount, self.control = backing.resolve(), mount.resolve(), control
        self.log = log or control.with_suffix(".log")
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The daemon's process id, once started."""
        return None if self._proc is None else self._proc.pid

    def start(self, timeout_s: float = 30.0) -> None:
        """Spawn the daemon and return once the mount is up and answers; BackendError (torn down) otherwise."""
        if self._proc is not None:
            raise BackendError(f"LazyFS at {self.mount} is started already (daemon {self._proc.pid})")
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        try:
            for directory in (self.backing, self.mount, self.log.parent):
                directory.mkdir(parents=True, exist_ok=True)
            with open(self.log, "ab") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "harness.cluster.lazyfs_daemon", "--backing", str(self.backing),
                     "--mount", str(self.mount), "--control", str(self.control)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=env)
        except OSError as exc:
            raise BackendError(f"LazyFS at {self.mount}: could not start its daemon: {exc}") from exc
        deadline, last = time.monotonic() + timeout_s, "nothing yet"
        while (code := self._proc.poll()) is None:
            if fuse_mounted(self.mount):
                try:
                    self.ping()
                    return
                except BackendError as exc:
                    last = f"mounted, but ping failed: {exc}"
            else:
                last = f"no FUSE mount at {self.mount} yet"
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if code is not None:
            last = f"the daemon exited with code {code}"
        try:
            tail = "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-10:])
        except OSError as exc:
            tail = f"<unreadable: {exc}>"
        with contextlib.suppress(BackendError):
            self.close()
        raise BackendError(f"LazyFS at {self.mount}: waited up to {timeout_s:g}s for its FUSE mount and control socket "
                           f"{self.control}; last seen: {last}; log {self.log}: {tail!r}; hint: it needs /dev/fuse, "
                           f"libfuse3 (mfusepy) and root (or fusermount3)")

    def _request(self, req: dict[str, Any], timeout_s: float = 30.0) -> dict[str, Any]:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout_s)
                sock.connect(str(self.control))
                sock.sendall(json.dumps(req).encode() + b"\n")
                with sock.makefile("rb") as replies:
                    reply = json.loads(replies.readline() or b"null")
        except (OSError, ValueError) as exc:
            raise BackendError(f"LazyFS at {self.mount}: {req['cmd']} over {self.control} failed: {exc}") from exc
        if not isinstance(reply, dict) or not reply.get("ok"):
            raise BackendError(f"LazyFS at {self.mount}: {req['cmd']} refused: {reply}")
        return reply

    def ping(self) -> int:
        """The bytes an fsync has not made durable yet."""
        return int(self._request({"cmd": "ping"}, 5.0)["unsynced_bytes"])

    def crash(self) -> UnsyncedLoss:
        """Power loss (once the files' user is dead): undo every unsynced write and entry."""
        reply = self._request({"cmd": "crash"}, 300.0)
        lost = {str(k): int(v) for k, v in reply["lost"].items()}
        return UnsyncedLoss(MappingProxyType(lost), tuple(map(str, reply["removed"])))

    def fail(self, error: int = errno.EIO, ops: Iterable[str] = ("read", "write"), probability: float = 1.0,
             pattern: str | None = None, seed: int = 0) -> None:
        """Make matching operations (`write`: write/truncate/fsync/create) fail with `error` until `clear`."""
        self._request({"cmd": "fail", "errno": error, "ops": list(ops), "probability": probability,
                       "pattern": pattern, "seed": seed})

    def clear(self) -> int:
        """Stop injecting errors; how many were injected."""
        return int(self._request({"cmd": "clear"})["injected"])

    def close(self) -> None:
        """Unmount (lazily) and stop the daemon; every step attempted, TeardownError listing what failed."""
        failures: list[tuple[str, BaseException]] = []
        if fuse_mounted(self.mount):
            tried: list[tuple[str, BaseException]] = []
            for argv in (["fusermount3", "-u", "-z", str(self.mount)], ["umount", "-l", str(self.mount)]):
                try:
                    subprocess.run(argv, capture_output=True, timeout=30, check=True)
                    break
                except (OSError, subprocess.SubprocessError) as exc:
                    err = getattr(exc, "stderr", None) or b""
                    tried.append((" ".join(argv), BackendError(f"{exc} {err.decode(errors='replace')}".strip())))
            else:
                failures += tried
        proc, self._proc = self._proc, None
        if proc is not None:
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired as exc:
                    if sig == signal.SIGKILL:
                        failures.append((f"stop the daemon {proc.pid}", exc))
        if fuse_mounted(self.mount):
            failures.append(("unmount", BackendError(f"{self.mount} is still a FUSE mount after the daemon ended")))
        with contextlib.suppress(OSError):
            self.control.unlink(missing_ok=True)
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> LazyFs:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

