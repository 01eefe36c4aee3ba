"""The power-loss filesystem (`harness.cluster.lazyfs` and its daemon) on a real FUSE mount under tmp_path: what
survives a `crash` (fsynced bytes, entries whose directory was fsynced) and what does not (unsynced tails,
overwrites, creations and renames, bytes written through a shared mapping), error injection, the control socket,
and a clean teardown."""

from __future__ import annotations

import errno
import json
import mmap
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness.cluster.lazyfs import LazyFs, fuse_mounted

pytestmark = [pytest.mark.integration]


@pytest.fixture
def lazy(tmp_path: Path) -> Iterator[LazyFs]:
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
        pytest.skip("needs root, /dev/fuse and fusermount3")
    with LazyFs(tmp_path / "backing", tmp_path / "mnt", tmp_path / "control.sock") as fs:
        yield fs


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_a_fsynced_write_survives_a_crash_and_the_unsynced_tail_is_cut(lazy: LazyFs) -> None:
    """Bytes up to the last fsync stay; the tail appended after it is cut, and the report names file and bytes."""
    log = lazy.mount / "00000.log"
    _write(log, b"a" * 100, sync=True)
    _fsync(lazy.mount)
    _write(log, b"b" * 50, sync=False)
    assert lazy.ping() == 50
    report = lazy.crash()
    assert log.read_bytes() == b"a" * 100
    assert dict(report.lost) == {"00000.log": 50}
    assert report.lost_bytes == 50 and report.removed == ()
    assert (lazy.backing / "00000.log").read_bytes() == b"a" * 100
    assert lazy.ping() == 0


def test_an_unsynced_overwrite_inside_the_durable_region_is_restored(lazy: LazyFs) -> None:
    """A pwrite over fsynced bytes (and a truncate below the durable size) is undone: the old bytes come back."""
    data = bytes(range(256)) * 4
    log = lazy.mount / "index"
    _write(log, data, sync=True)
    _fsync(lazy.mount)
    fd = os.open(log, os.O_RDWR)
    try:
        os.pwrite(fd, b"XXXX", 10)
        os.pwrite(fd, b"YYYYYY", 8)  # overlaps the first overwrite: counted once
        os.ftruncate(fd, 500)
        os.pwrite(fd, b"Z" * 1000, 400)  # past the new end, and past the durable size
    finally:
        os.close(fd)
    report = lazy.crash()
    assert log.read_bytes() == data
    assert dict(report.lost) == {"index": 1400 - len(data) + (len(data) - 400) + 6}


def test_a_file_created_in_a_directory_not_fsynced_since_is_gone_after_a_crash(lazy: LazyFs) -> None:
    """Creating a file is durable only once its directory is fsynced: fsyncing the file alone is not enough."""
    topic = lazy.mount / "orders-0"
    topic.mkdir()
    _fsync(lazy.mount)
    _write(topic / "lost.log", b"x" * 10, sync=True)
    report = lazy.crash()
    assert not (topic / "lost.log").exists() and topic.is_dir()
    assert report.removed == ("orders-0/lost.log",)

    _write(topic / "kept.log", b"y" * 10, sync=True)
    _fsync(topic)
    report = lazy.crash()
    assert (topic / "kept.log").read_bytes() == b"y" * 10
    assert os.listdir(topic) == ["kept.log"]
    assert report.removed == () and report.lost_bytes == 0


def test_an_unsynced_directory_goes_with_everything_in_it(lazy: LazyFs) -> None:
    """A directory created but never made durable in its parent is removed with its (even fsynced) contents."""
    deep = lazy.mount / "a" / "b"
    deep.mkdir(parents=True)
    _write(deep / "f", b"z" * 5, sync=True)
    _fsync(deep)
    report = lazy.crash()
    assert not (lazy.mount / "a").exists()
    assert report.removed == ("a/b", "a")  # deepest first
    assert os.listdir(lazy.backing) == []


def test_a_rename_into_a_directory_not_fsynced_since_is_undone(lazy: LazyFs) -> None:
    """The new name of a rename exists after a crash only if its directory was fsynced after the rename, as
    Kafka's checkpoint files do (write, fsync, rename, fsync the directory)."""
    topic = lazy.mount / "orders-0"
    topic.mkdir()
    _write(lazy.mount / "moved", b"m" * 3, sync=True)
    _fsync(lazy.mount)
    (lazy.mount / "moved").rename(topic / "moved")
    report = lazy.crash()
    assert os.listdir(topic) == [] and os.listdir(lazy.mount) == ["orders-0"]
    assert report.removed == ("orders-0/moved",) and report.lost_bytes == 0

    _write(topic / "checkpoint.tmp", b"c" * 7, sync=True)
    (topic / "checkpoint.tmp").rename(topic / "checkpoint")
    _fsync(topic)
    report = lazy.crash()
    assert os.listdir(topic) == ["checkpoint"] and report.removed == ()
    assert (topic / "checkpoint").read_bytes() == b"c" * 7


def test_bytes_written_through_a_shared_mapping_survive_only_if_synced(lazy: LazyFs) -> None:
    """A MAP_SHARED mapping works on the mount (no direct_io): msync + fsync makes its bytes durable; bytes
    written through it after that are written back at unmap and rolled back by the crash."""
    index = lazy.mount / "00000.index"
    fd = os.open(index, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 2 * mmap.PAGESIZE)
    os.fsync(fd)
    _fsync(lazy.mount)
    mapping = mmap.mmap(fd, 2 * mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    mapping[0:8] = b"durable!"
    mapping.flush()
    os.fsync(fd)
    mapping[mmap.PAGESIZE:mmap.PAGESIZE + 6] = b"lost!!"
    mapping.close()
    os.close(fd)
    assert lazy.ping() > 0
    report = lazy.crash()
    data = index.read_bytes()
    assert data[:8] == b"durable!" and data[mmap.PAGESIZE:] == bytes(mmap.PAGESIZE)
    assert "00000.index" in report.lost


def test_dirty_pages_of_a_mapping_still_open_at_the_crash_are_pushed_and_rolled_back(lazy: LazyFs) -> None:
    """The crash first has the kernel write back dirty mmap pages (syncfs), so that they are undone with the
    rest and not written after the rollback when the mapping goes."""
    index = lazy.mount / "00000.timeindex"
    fd = os.open(index, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, mmap.PAGESIZE)
    os.fsync(fd)
    _fsync(lazy.mount)
    mapping = mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        mapping[0:4] = b"late"
        report = lazy.crash()
    finally:
        mapping.close()
        os.close(fd)
    assert report.lost == {"00000.timeindex": mmap.PAGESIZE}
    assert lazy.ping() == 0
    assert index.read_bytes() == bytes(mmap.PAGESIZE)
    assert (lazy.backing / "00000.timeindex").read_bytes() == bytes(mmap.PAGESIZE)


def test_injected_errors_hit_matching_files_only_until_cleared(lazy: LazyFs) -> None:
    """`fail` with probability 1 and a glob: reads and writes of matching files fail with EIO, others work;
    `clear` says how many were injected, and I/O works again."""
    (lazy.mount / "orders-0").mkdir()
    _write(lazy.mount / "orders-0" / "0.log", b"log", sync=False)
    _write(lazy.mount / "meta.properties", b"meta", sync=False)
    lazy.fail(errno.EIO, ops=["read", "write"], probability=1.0, pattern="*/orders-0/*", seed=1)
    with pytest.raises(OSError) as read_error:
        (lazy.mount / "orders-0" / "0.log").read_bytes()
    with pytest.raises(OSError) as write_error:
        _write(lazy.mount / "orders-0" / "0.log", b"more", sync=False)
    assert read_error.value.errno == errno.EIO and write_error.value.errno == errno.EIO
    assert (lazy.mount / "meta.properties").read_bytes() == b"meta"
    _write(lazy.mount / "meta.properties", b"!", sync=True)
    assert lazy.clear() >= 2
    assert (lazy.mount / "orders-0" / "0.log").read_bytes() == b"log"
    assert lazy.clear() == 0


def test_many_small_appends_in_a_tree_are_all_synced_by_one_fsync(lazy: LazyFs) -> None:
    """Java-like use: a directory tree, 1000 small appends, then fsync: nothing is left unsynced."""
    topic = lazy.mount / "data" / "orders-0"
    topic.mkdir(parents=True)
    fd = os.open(topic / "00000000000000000000.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for i in range(1000):
            os.write(fd, b"%08d" % i)
        assert lazy.ping() == 8000
        os.fdatasync(fd)
        assert lazy.ping() == 0
    finally:
        os.close(fd)
    assert os.path.getsize(topic / "00000000000000000000.log") == 8000


def test_the_control_socket_answers_bad_input_and_the_daemon_lives_on(lazy: LazyFs) -> None:
    """Malformed lines, unknown commands and bad arguments get ok false; the daemon keeps serving."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(lazy.control))
        replies = sock.makefile("rb")
        for line in (b"not json", b"[1]", b'{"cmd": "reboot"}', b'{"cmd": "fail", "probability": 3}',
                     b'{"cmd": "fail", "ops": ["delete"]}', b'{"cmd": "fail", "errno": "EIO"}'):
            sock.sendall(line + b"\n")
            reply = json.loads(replies.readline())
            assert reply["ok"] is False and reply["error"], line
        sock.sendall(b'{"cmd": "ping"}\n')
        assert json.loads(replies.readline()) == {"ok": True, "unsynced_bytes": 0}
    assert lazy.ping() == 0
    _write(lazy.mount / "f", b"ok", sync=True)


def test_close_leaves_no_mount_and_no_daemon(lazy: LazyFs) -> None:
    """close() unmounts, the daemon is gone and so is its socket; closing again is harmless."""
    assert lazy._proc is not None
    pid = lazy._proc.pid
    lazy.close()
    assert not fuse_mounted(lazy.mount)
    assert str(lazy.mount) not in Path("/proc/self/mountinfo").read_text()
    assert not psutil.pid_exists(pid)
    assert not lazy.control.exists()
    lazy.close()


def test_the_daemon_exits_by_itself_when_its_mount_is_unmounted(lazy: LazyFs) -> None:
    """An unmount from outside ends the daemon, which removes its control socket."""
    assert lazy._proc is not None
    subprocess.run(["fusermount3", "-u", str(lazy.mount)], check=True, timeout=30)
    assert lazy._proc.wait(timeout=10) == 0
    assert not lazy.control.exists()
