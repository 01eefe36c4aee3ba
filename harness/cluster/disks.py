"""Log directories for disk faults (process backend): with `cluster.log_dir_mb: N`, each Kafka node's log directory
is a tmpfs of N MB (mount(8); root), which the `disk_full` fault fills so that every later write fails with ENOSPC,
and frees again at the heal. With `ClusterSpec.lazy_fs` (a run with a `power_loss` or `disk_error` fault), each log
directory is a FUSE mount of `harness.cluster.lazyfs` over `<dir>.disk` (itself the tmpfs, with log_dir_mb), which
tracks fsyncs so that a power loss can undo every write that was not synced, and fails I/O on demand.

Owns the mounts and their records. Every mount is recorded before it is made, as `mount-<owner pid>-<n>.mount`
(JSON) in the leftovers directory (`harness.cluster.leftovers`), and unmounted at teardown. A mount whose owner is
dead (a SIGKILLed harness) is unmounted by `clean_mount_leftovers`, which `clean_leftovers` runs: the reaper does
within seconds of the SIGKILL, and so does the next run.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from harness.cluster.base import NodeId
from harness.cluster.owners import owner_alive, running, this_owner
from harness.errors import BackendError

if TYPE_CHECKING:
    from harness.cluster.lazyfs import LazyFs
    from harness.cluster.leftovers import LeftoverRegistry

FILLER = ".kafka-chaos-disk-full"
"""The file `fill` writes into a log directory (Kafka loads only sub-directories of a log dir, so it ignores it)."""
_CHUNK = 1 << 20
_MOUNT_TIMEOUT_S = 30.0


def kafka_log_dirs(workdir: Path, node: NodeId, count: int = 1) -> tuple[Path, ...]:
    """A broker's or KRaft controller's log directories in a process cluster's working directory: `data`, then
    `data-1`, `data-2`... when it has several (JBOD, `cluster.log_dirs`); the first holds a KRaft node's metadata
    log."""
    home = workdir / (f"controller-{node.id}" if node.role == "controller" else f"broker-{node.id}")
    return tuple(home / ("data" if i == 0 else f"data-{i}") for i in range(max(1, count)))


def backing_dir(data: Path) -> Path:
    """Where a log directory on the power-loss filesystem keeps its contents: `<dir>.disk`, beside it."""
    return data.with_name(data.name + ".disk")


@dataclass(frozen=True, slots=True)
class MountRecord:
    """One mount made by a harness (a tmpfs, or the power-loss filesystem), as its record file stores it."""

    path: str
    owner_pid: int
    owner_create_time: float

    def to_json(self) -> str:
        return json.dumps({"path": self.path, "owner_pid": self.owner_pid,
                           "owner_create_time": self.owner_create_time})

    @staticmethod
    def from_json(text: str) -> MountRecord:
        d = json.loads(text)
        return MountRecord(str(d["path"]), int(d["owner_pid"]), float(d["owner_create_time"]))


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_MOUNT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(f"{what}: {' '.join(argv)} failed: {exc}") from exc
    if done.returncode != 0:
        raise BackendError(f"{what}: {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")


def is_mounted(path: Path) -> bool:
    target = str(path.resolve())
    return any(p.mountpoint == target for p in psutil.disk_partitions(all=True))


class LogDirMounts:
    """The mounts of one cluster's log directories, tmpfs and power-loss filesystem (a context manager: leaving
    unmounts them all)."""

    def __init__(self, records: Path, processes: LeftoverRegistry | None = None) -> None:
        """`records`: the leftovers directory; `processes`: where the power-loss daemons are registered (so that
        `clean_leftovers` kills a dead owner's)."""
        self._records = records
        self._mounted: dict[Path, Path] = {}  # mount point -> its record file
        self._lazy: dict[Path, LazyFs] = {}
        self._processes = processes
        self._owner = this_owner()

    def mount(self, path: Path, size_mb: int) -> None:
        """Mount a tmpfs of `size_mb` MB at `path` (created if missing)."""
        path = self._record(path, "cluster.log_dir_mb puts each log directory on a tmpfs of its own",
                            "remove log_dir_mb and the disk faults")
        try:
            _run(["mount", "-t", "tmpfs", "-o", f"size={int(size_mb)}m,mode=0755", "kafka-chaos", str(path)],
                 f"log directory {path}")
        except BackendError:
            self._mounted.pop(path).unlink(missing_ok=True)
            raise

    def mount_lazy(self, path: Path, backing: Path) -> None:
        """Mount the power-loss filesystem at `path`, its contents in `backing` (both created if missing)."""
        from harness.cluster.lazyfs import LazyFs

        path = self._record(path, "a power_loss fault puts each log directory on a FUSE filesystem of its own",
                            "remove the power_loss faults")
        backing.mkdir(parents=True, exist_ok=True)
        fs = LazyFs(backing, path, self._records / f"lazyfs-{self._owner[0]}-{len(self._mounted)}.sock",
                    log=path.with_name(path.name + ".lazyfs.log"))
        try:
            fs.start()
        except BackendError:
            self._mounted.pop(path).unlink(missing_ok=True)
            raise
        self._lazy[path] = fs
        if fs.pid is not None and self._processes is not None:  # a dead owner's daemon is killed by
            self._processes.register(fs.pid, f"power-loss filesystem daemon at {path}")  # clean_leftovers

    def lazy(self, path: Path) -> LazyFs:
        """The power-loss filesystem mounted at `path`."""
        fs = self._lazy.get(path.resolve())
        if fs is None:
            raise BackendError(f"{path} is not on the power-loss filesystem (the run has no power_loss fault)")
        return fs

    def _record(self, path: Path, why: str, instead: str) -> Path:
        """Check for root, create `path` and record the mount about to be made there; the resolved path."""
        if os.geteuid() != 0:
            raise BackendError(f"{why}, which needs root to mount (uid {os.geteuid()}); run as root, or {instead}")
        path = path.resolve()
        path.mkdir(parents=True, exist_ok=True)
        record = self._records / f"mount-{self._owner[0]}-{len(self._mounted)}.mount"
        self._records.mkdir(mode=0o700, parents=True, exist_ok=True)
        record.write_text(MountRecord(str(path), *self._owner).to_json(), encoding="utf-8")
        self._mounted[path] = record
        return path

    def unmount_all(self) -> list[tuple[str, BaseException]]:
        """Unmount every mount made here, the latest first (a FUSE mount before the tmpfs under it; lazily: a
        process still holding a file does not keep it); failures are returned, every mount attempted."""
        failures: list[tuple[str, BaseException]] = []
        for path, record in reversed(list(self._mounted.items())):
            try:
                fs = self._lazy.pop(path, None)
                if fs is not None:
                    pid = fs.pid
                    fs.close()
                    if pid is not None and self._processes is not None:
                        self._processes.unregister(pid)
                if is_mounted(path):
                    _run(["umount", "-l", str(path)], f"log directory {path}")
                record.unlink(missing_ok=True)
                del self._mounted[path]
            except Exception as exc:
                failures.append((f"unmount {path}", exc))
        return failures

    def __enter__(self) -> LogDirMounts:
        return self

    def __exit__(self, *exc: object) -> None:
        failures = self.unmount_all()
        if failures:
            raise BackendError("; ".join(f"{what}: {err}" for what, err in failures))


def fill(path: Path) -> int:
    """Take every free byte of the filesystem at `path` with a filler file; the bytes taken."""
    filler = path / FILLER
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        st = os.statvfs(path)
        free = st.f_bavail * st.f_frsize
        if free > 0:
            with contextlib.suppress(OSError):
                os.posix_fallocate(fd, os.fstat(fd).st_size, free)
        zeros = bytes(_CHUNK)
        while True:  # whatever fallocate left (or Kafka freed meanwhile), down to the last block
            try:
                os.write(fd, zeros)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(zeros) == 1:
                    break
                zeros = bytes(max(1, len(zeros) // 16))
        taken = os.fstat(fd).st_size
    finally:
        os.close(fd)
    return taken


def free(path: Path) -> None:
    """Give back what `fill` took."""
    (path / FILLER).unlink(missing_ok=True)


def clean_mount_leftovers(directory: Path) -> list[str]:
    """Unmount the recorded mounts of harnesses that are gone; the mount points unmounted."""
    cleaned: list[str] = []
    for record_path in sorted(directory.glob("mount-*.mount")):
        try:
            record = MountRecord.from_json(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            record_path.unlink(missing_ok=True)
            continue
        if owner_alive(record.owner_pid, record.owner_create_time):
            continue
        path = Path(record.path)
        if is_mounted(path):
            _run(["umount", "-l", str(path)], f"leftover log directory {path}")
            cleaned.append(str(path))
        record_path.unlink(missing_ok=True)
    for socket_path in directory.glob("lazyfs-*-*.sock"):  # a SIGKILLed daemon's control socket
        owner = socket_path.name.split("-")[1]
        if owner.isdigit() and not running(int(owner)):
            socket_path.unlink(missing_ok=True)
    return cleaned
