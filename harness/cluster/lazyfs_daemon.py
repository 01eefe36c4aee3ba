"""The daemon of the power-loss filesystem (`harness.cluster.lazyfs` starts it and talks to it): a FUSE passthrough
with LazyFS's semantics (Jepsen's LazyFS: a power loss loses what was not fsynced), for a Kafka node's log directory.

`python -m harness.cluster.lazyfs_daemon --backing DIR --mount DIR --control SOCKET`: mfusepy over libfuse3,
multithreaded, foreground; it passes every operation through to the same path under the backing directory (the FUSE
file handle is the backing fd), and exits when its mount is unmounted.

The daemon tracks in memory, under one lock, what no fsync has made durable: per file (by inode: renames and links
follow) its size at its last fsync and the old bytes of each write or truncate below that size since; per directory
(by inode) the names created or renamed into it since its last fsync. `crash` (sent once the node is dead) has the
kernel write back dirty mmap pages (syncfs), undoes each file's unsynced writes, truncates it to its durable size and
removes the unsynced entries, deepest first. `fail` injects errors (disk_error) until `clear`. Control: a Unix
socket, one JSON object per line each way. The kernel's entry and attribute caches are off (timeouts 0), so that a
rollback behind its back shows at once.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import fnmatch
import importlib
import json
import os
import random
import resource
import shutil
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_Key = tuple[int, int]  # (st_dev, st_ino)
_OPS = frozenset({"read", "write"})
_UTIME_NOW, _UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
_STRIP = os.O_ACCMODE | os.O_APPEND | os.O_TRUNC | os.O_CREAT | os.O_EXCL | getattr(os, "O_DIRECT", 0)


@dataclass
class _File:
    fd: int  # our own descriptor (a dup), held while the file has unsynced state
    durable: int
    size: int
    undo: list[tuple[int, bytes]] = field(default_factory=list)

    def lost(self) -> int:
        """Bytes an fsync has not made durable: the unsynced tail and every overwritten durable byte, once."""
        spans = sorted((off, min(off + len(old), self.durable)) for off, old in self.undo)
        total, reach = max(0, self.size - self.durable), 0
        for start, end in spans:
            total += max(0, end - max(start, reach))
            reach = max(reach, end)
        return total


@dataclass(frozen=True)
class _Failure:
    error: int
    ops: frozenset[str]
    probability: float
    pattern: str | None
    rng: random.Random


def _where(fd: int) -> str | None:
    link = os.readlink(f"/proc/self/fd/{fd}")
    return None if link.endswith(" (deleted)") else link


def _key(st: os.stat_result) -> _Key:
    return st.st_dev, st.st_ino


def _error(code: int) -> OSError:
    error: OSError = importlib.import_module("mfusepy").FuseOSError(code)
    return error


def _through(call: Callable[..., Any], created: bool = False, gone: bool = False) -> Callable[..., Any]:
    """An operation that is `call` on the backing path, then records the name it `created` or made `gone`."""
    def op(self: LazyOps, path: str, *args: Any) -> Any:
        st = os.lstat(self._b(path)) if gone else None
        result = call(self._b(path), *args)
        if gone:
            self._gone(path, st)
        if created:
            self._created(path)
        return result
    return op


class LazyOps:
    """The operations mfusepy serves (those not defined here are left to libfuse and the kernel, e.g. locks):
    passthrough to `backing`, with the unsynced state tracked under `self._lock`."""

    use_ns = True

    def __init__(self, backing: str, mount: str) -> None:
        self.root, self.mount = backing, mount
        self._lock = threading.RLock()
        self._files: dict[_Key, _File] = {}
        self._dirs: dict[_Key, tuple[int, set[str]]] = {}  # directory -> (our fd of it, unsynced names)
        self._fh: dict[int, _Key] = {}
        self._failure: _Failure | None = None
        self._injected = 0

    def _b(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _inject(self, op: str, path: str | None) -> None:
        f = self._failure
        if f is None or op not in f.ops:
            return
        with self._lock:
            path = path or "/"  # the glob may match with or without the leading / (`*/orders-0/*`, `orders-0/*`)
            if f.pattern is not None and not any(fnmatch.fnmatchcase(p, f.pattern) for p in (path, path[1:])):
                return
            if f.rng.random() >= f.probability:
                return
            self._injected += 1
        raise _error(f.error)

    def _track(self, fd: int, key: _Key) -> _File:
        f = self._files.get(key)
        if f is None:
            size = os.fstat(fd).st_size
            f = self._files[key] = _File(os.dup(fd), size, size)
        return f

    def _created(self, path: str) -> None:
        parent, name = os.path.split(self._b(path))
        with self._lock:
            key = _key(os.stat(parent))
            if key not in self._dirs:
                self._dirs[key] = (os.open(parent, os.O_RDONLY | os.O_DIRECTORY), set())
            self._dirs[key][1].add(name)

    def _gone(self, path: str, st: os.stat_result | None) -> None:
        """`path` (whose stat was `st`) no longer names what it named: forget the name and an unlinked inode."""
        parent, name = os.path.split(self._b(path))
        with self._lock:
            entry = self._dirs.get(_key(os.stat(parent)))
            if entry is not None:
                entry[1].discard(name)
            if st is None:
                return
            f = self._files.get(_key(st))
            if f is not None and os.fstat(f.fd).st_nlink == 0:
                os.close(self._files.pop(_key(st)).fd)
            d = self._dirs.get(_key(st))
            if d is not None and _where(d[0]) is None:
                os.close(self._dirs.pop(_key(st))[0])

    def _truncate(self, fd: int, length: int) -> None:
        with self._lock:
            f = self._track(fd, _key(os.fstat(fd)))
            cut_end = min(f.durable, f.size)
            if length < cut_end:
                f.undo.append((length, os.pread(fd, cut_end - length, length)))
            os.ftruncate(fd, length)
            f.size = length

    # mfusepy's wrapper turns an OSError into -errno (as a FuseOSError would be) and None into 0.
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = os.fstat(fh) if fh is not None and fh in self._fh else os.lstat(self._b(path))
        attrs = {k: getattr(st, k) for k in ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size",
                                             "st_blocks", "st_blksize", "st_rdev")}
        return attrs | {"st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

    def open(self, path: str, flags: int) -> int:
        if flags & os.O_TRUNC:
            self._inject("write", path)
        writable = flags & os.O_ACCMODE != os.O_RDONLY  # O_RDWR: an overwrite's old bytes must be readable
        fd = os.open(self._b(path), (flags & ~_STRIP) | (os.O_RDWR if writable else os.O_RDONLY))
        with self._lock:
            self._fh[fd] = _key(os.fstat(fd))
        if flags & os.O_TRUNC:
            self._truncate(fd, 0)
        return fd

    def create(self, path: str, mode: int, flags: int) -> int:
        self._inject("write", path)
        try:
            fd = os.open(self._b(path), (flags & ~_STRIP) | os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            if flags & os.O_EXCL:
                raise
            return self.open(path, flags)  # not created: it was there
        with self._lock:
            self._fh[fd] = _key(os.fstat(fd))
            self._created(path)
        return fd

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        self._inject("read", path)
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        self._inject("write", path)
        with self._lock:
            f = self._track(fh, self._fh[fh])
            if offset < f.durable and (old := os.pread(fh, min(len(data), f.durable - offset), offset)):
                f.undo.append((offset, old))
            n = os.pwrite(fh, data, offset)
            f.size = max(f.size, offset + n)
        return n

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        self._inject("write", path)
        fd = os.open(self._b(path), os.O_RDWR)  # mfusepy passes no fh on libfuse3: ftruncate comes here too
        try:
            self._truncate(fd, length)
        finally:
            os.close(fd)

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> None:
        if mode != 0:  # KEEP_SIZE, PUNCH_HOLE...: os.posix_fallocate has no mode
            raise _error(errno.EOPNOTSUPP)
        self._inject("write", path)
        with self._lock:
            f = self._track(fh, self._fh[fh])
            os.posix_fallocate(fh, offset, size)
            f.size = max(f.size, offset + size)

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        self._inject("write", path)
        (os.fdatasync if datasync else os.fsync)(fh)
        with self._lock:
            f = self._files.pop(self._fh[fh], None)
            if f is not None:
                os.close(f.fd)

    def flush(self, path: str, fh: int) -> None:  # close(): the kernel has written back dirty mmap pages already
        pass

    def release(self, path: str, fh: int) -> None:
        with self._lock:
            self._fh.pop(fh, None)
        os.close(fh)

    def readdir(self, path: str, fh: int) -> list[tuple[str, dict[str, int], int]]:
        """With inode numbers (use_ino): an entry whose d_ino is 0 is one readdir(3) skips."""
        here = self._b(path)
        dots = [(n, os.lstat(os.path.join(here, n))) for n in (".", "..")]
        with os.scandir(here) as entries:
            return [(n, {"st_ino": st.st_ino, "st_mode": stat.S_IFDIR}, 0) for n, st in dots] + [
                (e.name, {"st_ino": e.inode(), "st_mode": stat.S_IFLNK if e.is_symlink() else
                          stat.S_IFDIR if e.is_dir(follow_symlinks=False) else stat.S_IFREG}, 0) for e in entries]

    def fsyncdir(self, path: str, datasync: int, fh: int) -> None:
        self._inject("write", path)
        fd = os.open(self._b(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
            with self._lock:
                entry = self._dirs.pop(_key(os.fstat(fd)), None)
                if entry is not None:
                    os.close(entry[0])
        finally:
            os.close(fd)

    def rename(self, old: str, new: str) -> None:  # mfusepy drops renameat2's flags
        replaced: os.stat_result | None = None
        with contextlib.suppress(FileNotFoundError):
            replaced = os.lstat(self._b(new))
        os.rename(self._b(old), self._b(new))
        self._gone(old, None)
        self._gone(new, replaced)
        self._created(new)

    def link(self, target: str, source: str) -> None:
        os.link(self._b(source), self._b(target))
        self._created(target)

    mkdir = _through(os.mkdir, created=True)
    symlink = _through(lambda path, source: os.symlink(source, path), created=True)  # path -> source
    rmdir = _through(os.rmdir, gone=True)
    unlink = _through(os.unlink, gone=True)
    readlink = _through(os.readlink)
    chmod = _through(os.chmod)
    chown = _through(os.lchown)

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
        st, now = os.lstat(self._b(path)), time.time_ns()
        ns = [now if t == _UTIME_NOW else cur if t == _UTIME_OMIT else t
              for t, cur in zip(times or (_UTIME_NOW, _UTIME_NOW), (st.st_atime_ns, st.st_mtime_ns), strict=True)]
        os.utime(self._b(path), ns=(ns[0], ns[1]), follow_symlinks=False)

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._b(path))
        return {k: getattr(sv, k) for k in dir(sv) if k.startswith("f_")}

    def access(self, path: str, amode: int) -> None:
        if not os.access(self._b(path), amode):
            raise _error(errno.EACCES)

    def unsynced(self) -> int:
        with self._lock:
            return sum(f.lost() for f in self._files.values())

    def crash(self) -> dict[str, Any]:
        """Lose everything not fsynced; what is left is the new durable state."""
        root = os.open(self.mount, os.O_RDONLY | os.O_DIRECTORY)  # dirty mmap pages come in as writes first
        try:
            if ctypes.CDLL(None, use_errno=True).syncfs(root) != 0:
                raise OSError(ctypes.get_errno(), f"syncfs {self.mount}")
        finally:
            os.close(root)
        with self._lock:  # syncfs starts that writeback but need not wait for it (Linux 6.x FUSE): a close through
            opened = {key: fh for fh, key in self._fh.items()}  # the mount waits (fuse_flush) for an open file's
        for backing in filter(None, map(_where, opened.values())):  # (a mapped file is open until it is unmapped)
            with contextlib.suppress(OSError):
                os.close(os.open(os.path.join(self.mount, os.path.relpath(backing, self.root)), os.O_RDONLY))
        with self._lock:
            lost: dict[str, int] = {}
            for f in self._files.values():
                n = f.lost()
                for offset, old in reversed(f.undo):
                    os.pwrite(f.fd, old, offset)
                os.ftruncate(f.fd, f.durable)
                where = _where(f.fd)
                if n and where is not None:
                    lost[os.path.relpath(where, self.root)] = n
            doomed = [os.path.join(where, name) for fd, names in self._dirs.values()
                      if (where := _where(fd)) is not None for name in names]
            removed: list[str] = []
            for path in sorted(doomed, key=lambda p: -p.count(os.sep)):
                if os.path.lexists(path):
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path)
                    else:
                        os.unlink(path)
                    removed.append(os.path.relpath(path, self.root))
            for fd in [f.fd for f in self._files.values()] + [fd for fd, _ in self._dirs.values()]:
                os.close(fd)
            self._files.clear()
            self._dirs.clear()
        return {"lost": lost, "removed": removed, "lost_bytes": sum(lost.values())}

    def command(self, line: bytes) -> dict[str, Any]:
        """One control request -> its reply; never raises."""
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request is a JSON object with a 'cmd'")
            cmd = req.get("cmd")
            if cmd == "ping":
                return {"ok": True, "unsynced_bytes": self.unsynced()}
            if cmd == "crash":
                return {"ok": True, **self.crash()}
            if cmd == "fail":
                error, ops, p = req.get("errno", errno.EIO), req.get("ops", sorted(_OPS)), req.get("probability", 1)
                pattern, seed = req.get("pattern"), req.get("seed", 0)
                if not (isinstance(error, int) and error > 0 and isinstance(ops, list) and ops and set(ops) <= _OPS
                        and isinstance(p, int | float) and 0 <= p <= 1 and isinstance(pattern, str | None)
                        and isinstance(seed, int)):
                    raise ValueError(f"fail takes errno > 0, ops from {sorted(_OPS)}, probability 0..1, "
                                     f"pattern (a glob) and seed (an int); got {req}")
                with self._lock:
                    self._failure = _Failure(error, frozenset(ops), float(p), pattern, random.Random(seed))
                return {"ok": True}
            if cmd == "clear":
                with self._lock:
                    self._failure, injected, self._injected = None, self._injected, 0
                return {"ok": True, "injected": injected}
            raise ValueError(f"unknown cmd {cmd!r} (ping, crash, fail, clear)")
        except Exception as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _serve(conn: socket.socket, ops: LazyOps) -> None:
    with conn, conn.makefile("rb") as lines:
        for line in lines:
            conn.sendall(json.dumps(ops.command(line)).encode() + b"\n")


def _accept(server: socket.socket, ops: LazyOps) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=_serve, args=(conn, ops), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    for name in ("--backing", "--mount", "--control"):
        args.add_argument(name, type=Path, required=True)
    ns = args.parse_args(argv)
    try:
        fuse: Any = importlib.import_module("mfusepy")
    except (ImportError, OSError) as exc:
        print(f"lazyfs: mfusepy/libfuse3 unusable: {exc}", file=sys.stderr)
        return 2
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # one held fd per unsynced file, beside Kafka's own
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ops = LazyOps(str(ns.backing.resolve()), str(ns.mount.resolve()))
    ns.control.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(ns.control))
    server.listen(16)
    threading.Thread(target=_accept, args=(server, ops), daemon=True, name="lazyfs-control").start()
    try:
        fuse.FUSE(ops, ops.mount, foreground=True, nothreads=False, use_ino=True, fsname="lazyfs", subtype="lazyfs",
                  entry_timeout=0, attr_timeout=0, negative_timeout=0,
                  **({"allow_other": True, "default_permissions": True} if os.geteuid() == 0 else {}))
    finally:
        server.close()
        ns.control.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
