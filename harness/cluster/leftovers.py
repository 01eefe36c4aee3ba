"""Nothing outlives the harness: a record of every process group the process backend starts, the
atexit / SIGTERM fallbacks that kill them when the harness exits without tearing down, the lifeline
(`harness.cluster.reaper`: a watchdog that kills them within a second or two of a SIGKILL of the harness), and
`clean_leftovers()`, which the reaper and the next run call to kill groups left by a harness that was SIGKILLed
(and to unmount the log directory mounts and delete the packet loss rules it left, `harness.cluster.disks`,
`harness.cluster.packets`).

Each started process gets a record file `<owner-pid>-<pid>.json` in a per-user directory
(`$KAFKA_CHAOS_LEFTOVERS_DIR`, else `$XDG_RUNTIME_DIR/kafka-chaos/leftovers`, else
`/tmp/kafka-chaos-<uid>/leftovers`). A record names the process (pid, process group, start time,
command line) and its owner (the harness's pid and start time). `clean_leftovers()` only touches
records whose owner is dead, and only kills a process whose start time and command line still
match the record (so a reused pid is never killed).

A recorded process that leads its own process group (the backend's children run in sessions of their
own) is killed with its whole group; one that does not (the Spark driver JVM pyspark starts shares the
harness's group) is killed with its descendants only, never its group. A registry made with
`fallbacks=False` only keeps the records on disk: its owner stops those processes itself (gracefully)
when it exits, and `clean_leftovers()` kills them if the owner dies first.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import psutil

from harness.cluster.disks import clean_mount_leftovers
from harness.cluster.owners import owner_alive, same_process, started, this_owner
from harness.cluster.packets import clean_packet_leftovers
from harness.cluster.reaper import start_reaper
from harness.errors import BackendError
from harness.waiting import poll_until

_EXEC_SETTLE_S = 10.0
"""How long `register` waits for a just-started process's command line to appear (see `_settled_cmdline`)."""


def leftovers_dir() -> Path:
    """The per-user directory holding process records (created 0700 if missing)."""
    explicit = os.environ.get("KAFKA_CHAOS_LEFTOVERS_DIR")
    if explicit:
        path = Path(explicit)
    else:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime and Path(runtime).is_dir() and os.access(runtime, os.W_OK):
            path = Path(runtime) / "kafka-chaos" / "leftovers"
        else:
            path = Path("/tmp") / f"kafka-chaos-{os.getuid()}" / "leftovers"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    """One started process as the record file stores it."""

    pid: int
    pgid: int
    create_time: float
    cmdline: tuple[str, ...]
    what: str
    owner_pid: int
    owner_create_time: float

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "pgid": self.pgid, "create_time": self.create_time,
                           "cmdline": list(self.cmdline), "what": self.what, "owner_pid": self.owner_pid,
                           "owner_create_time": self.owner_create_time})

    @staticmethod
    def from_json(text: str) -> ProcessRecord:
        d = json.loads(text)
        return ProcessRecord(int(d["pid"]), int(d["pgid"]), float(d["create_time"]),
                             tuple(str(a) for a in d["cmdline"]), str(d["what"]), int(d["owner_pid"]),
                             float(d["owner_create_time"]))


@dataclass(frozen=True, slots=True)
class CleanedLeftover:
    """A leftover process group that `clean_leftovers()` killed (or, with pid 0, a mount it unmounted)."""

    what: str
    pid: int
    pgid: int
    cmdline: tuple[str, ...]
    owner_pid: int

    def __str__(self) -> str:
        """One line: what it was, its pid (and group, when it led one), the dead harness that left it,
        its command."""
        command = " ".join(self.cmdline)
        if self.pid == 0:  # not a process: a mount (`harness.cluster.disks`)
            return f"{self.what}: {command}"
        if len(command) > 160:
            command = command[:157] + "..."
        group = f", group {self.pgid}" if self.pgid == self.pid else ""
        return f"{self.what} (pid {self.pid}{group}, left by harness {self.owner_pid}): {command}"


def _same_process(
    pid: int, create_time: float, cmdline: Sequence[str] | None = None,
) -> psutil.Process | None:
    """The live process `pid` if it is the one recorded (`owners.same_process`: same start time, no zombie) with the
    same command line, else None."""
    proc = same_process(pid, create_time)
    try:
        if proc is None or (cmdline and tuple(proc.cmdline()) != tuple(cmdline)):  # (): never learned
            return None
        return proc
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None


def _settled_cmdline(proc: psutil.Process, timeout_s: float = _EXEC_SETTLE_S) -> tuple[str, ...]:
    """The command line of a process that was just started.

    `subprocess.Popen` returns once exec closed its close-on-exec pipe, a moment before the kernel
    sets up the new program's arguments: until then /proc/<pid>/cmdline is empty (seen in 10 of 2,000
    starts on a loaded 2-core machine). A record made then held no command line, so `clean_leftovers`
    took the process for another one and spared it. Wait until the arguments are there (bounded: an
    empty command line after `timeout_s` is recorded as such and the start time alone identifies it).
    """
    return poll_until(lambda: tuple(proc.cmdline()), timeout_s, poll_s=0.001) or ()


def _kill_tree(proc: psutil.Process) -> list[psutil.Process]:
    """SIGKILL `proc`, then its descendants (all listed before the first kill, so none escapes by
    being re-parented; the parent first, so it cannot react to its children's deaths). Returns them
    all, for waiting."""
    try:
        family = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        family = [proc]
    for member in family:
        with contextlib.suppress(psutil.Error):
            member.kill()
    return family


def _kill_recorded(record: ProcessRecord, proc: psutil.Process) -> list[psutil.Process]:
    """SIGKILL what `record` names: its process group if it leads one, else the process and its
    descendants (its group is someone else's: the harness's, the shell's). Returns what to wait for."""
    if record.pgid == record.pid:
        with contextlib.suppress(OSError):
            os.killpg(record.pgid, signal.SIGKILL)
        with contextlib.suppress(psutil.Error):
            proc.kill()
        return [proc]
    return _kill_tree(proc)


class LeftoverRegistry:
    """The processes one harness (one cluster) started; kills them all on `kill_all()`, at exit
    and on SIGTERM (unless made with `fallbacks=False`), and leaves a record of each for
    `clean_leftovers()` should the harness die."""

    def __init__(self, directory: Path | None = None, *, fallbacks: bool = True) -> None:
        self.directory = directory or leftovers_dir()
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._records: dict[int, ProcessRecord] = {}
        self._lock = threading.Lock()
        self._owner_pid, self._owner_create_time = this_owner()
        if fallbacks:
            _ACTIVE.add(self)
            _install_fallbacks()
            start_reaper(self.directory)  # the lifeline: a SIGKILLed harness leaves nothing running

    def _path(self, pid: int) -> Path:
        return self.directory / f"{self._owner_pid}-{pid}.json"

    def register(self, pid: int, what: str) -> None:
        """Record a just-started process (killed with its whole group if it leads one, else with its
        descendants). Returns once the record is on disk with the process's command line; no-op if the
        process already died."""
        try:
            proc = psutil.Process(pid)
            cmdline = _settled_cmdline(proc)
            record = ProcessRecord(pid, os.getpgid(pid), started(proc), cmdline, what,
                                   self._owner_pid, self._owner_create_time)
        except (psutil.NoSuchProcess, psutil.ZombieProcess, ProcessLookupError):
            return
        except psutil.AccessDenied as exc:
            raise BackendError(f"cannot read process {pid} ({what}) to record it: {exc}") from exc
        path = self._path(pid)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(record.to_json(), encoding="utf-8")
        tmp.replace(path)
        with self._lock:
            self._records[pid] = record

    def unregister(self, pid: int) -> None:
        """Forget a process that was reaped (or is about to be)."""
        with self._lock:
            self._records.pop(pid, None)
        with contextlib.suppress(FileNotFoundError):
            self._path(pid).unlink()

    def registered(self) -> list[ProcessRecord]:
        with self._lock:
            return list(self._records.values())

    def kill_all(self) -> None:
        """SIGKILL every recorded process (group) that is still ours, and drop all records. Never raises."""
        for record in self.registered():
            proc = _same_process(record.pid, record.create_time)
            if proc is not None:
                _kill_recorded(record, proc)
            self.unregister(record.pid)

    def close(self) -> None:
        """Stop tracking (call after every process was torn down); kills whatever is still recorded."""
        self.kill_all()
        _ACTIVE.discard(self)


_ACTIVE: weakref.WeakSet[LeftoverRegistry] = weakref.WeakSet()
_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def _kill_active() -> None:
    for registry in list(_ACTIVE):
        registry.kill_all()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _kill_active()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _install_fallbacks() -> None:
    """atexit always; a SIGTERM handler only when SIGTERM still has its default action (a program
    with its own SIGTERM handler is expected to exit through it, and atexit then runs)."""
    global _INSTALLED
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        _INSTALLED = True
        atexit.register(_kill_active)
        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, OSError):
                if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                    signal.signal(signal.SIGTERM, _on_sigterm)


def clean_leftovers(directory: Path | None = None, wait_s: float = 5.0) -> list[CleanedLeftover]:
    """Kill the process groups left by harnesses that died without tearing down; drop stale records.

    Records of a live owner are left alone (another harness may be running). A recorded process
    is killed only if its pid still names the same process (start time and command line).
    """
    directory = directory or leftovers_dir()
    cleaned: list[CleanedLeftover] = []
    victims: list[psutil.Process] = []
    for path in sorted(directory.glob("*.json")):
        try:
            record = ProcessRecord.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if owner_alive(record.owner_pid, record.owner_create_time):
            continue
        proc = _same_process(record.pid, record.create_time, record.cmdline)
        if proc is not None:
            victims += _kill_recorded(record, proc)
            cleaned.append(CleanedLeftover(record.what, record.pid, record.pgid, record.cmdline,
                                           record.owner_pid))
        with contextlib.suppress(OSError):
            path.unlink()
    alive = _wait_gone(victims, wait_s)
    # the mounts once the processes that used them are gone, and even if some are not: a lazy unmount detaches
    # a mount in use (seen: a broker stuck on a power-loss mount whose daemon had just been killed outlived 5 s)
    for mount in clean_mount_leftovers(directory):
        cleaned.append(CleanedLeftover(f"log directory mount {mount}", 0, 0, ("umount", "-l", mount), 0))
    for rule in clean_packet_leftovers():
        cleaned.append(CleanedLeftover("packet loss rule", 0, 0, ("iptables", rule.replace("-A", "-D", 1)), 0))
    if alive:
        raise BackendError(f"leftover processes survived SIGKILL for {wait_s}s: {[p.pid for p in alive]}")
    return cleaned


def _wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until each process is gone or a zombie (an unreaped zombie holds no resources); those that are not."""
    alive = procs

    def all_gone() -> bool:
        nonlocal alive
        alive = [p for p in alive if _is_alive(p)]
        return not alive

    poll_until(all_gone, timeout_s, poll_s=0.05)
    return alive


def _is_alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
