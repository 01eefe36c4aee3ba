"""The ZooKeeper launcher with real servers: quorum start, kill -9, SIGSTOP, restart, clean teardown,
and the leftover records of its processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient

from harness.cluster.leftovers import LeftoverRegistry, clean_leftovers
from harness.cluster.zookeeper import ZooKeeperEnsemble, four_letter_word, free_port, server_mode
from harness.errors import BackendError, HarnessTimeout
from harness.observe.zookeeper import ZooKeeperObserver
from harness.zk import znodes as z
from tests.fixtures.processes import alive as _alive
from tests.fixtures.processes import leftover_records as _records
from tests.fixtures.zookeeper import EventCollector

pytestmark = pytest.mark.integration


def _write_through(hosts: str, path: str, timeout_s: float = 20.0) -> None:
    """Create `path` through a client on `hosts` (retrying while the quorum re-forms)."""
    client = KazooClient(hosts=hosts, timeout=4.0)
    try:
        client.start(timeout=timeout_s)
        client.retry(client.create, path, b"x", makepath=True)
        assert client.exists(path) is not None
    finally:
        client.stop()
        client.close()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_single_server_serves_standalone_and_takes_the_kafka_skeleton(
    zookeeper: ZooKeeperEnsemble, zk_client: KazooClient
) -> None:
    (member,) = zookeeper.members
    assert member.is_running and member.mode() == "standalone"
    assert zookeeper.connect_string == f"127.0.0.1:{member.client_port}"
    z.ensure_kafka_paths(zk_client)
    for path in z.PERSISTENT_PATHS:
        assert zk_client.exists(path) is not None, path


def test_three_members_form_a_quorum_with_one_leader(zookeeper3: ZooKeeperEnsemble) -> None:
    modes = sorted(m.mode() or "none" for m in zookeeper3.members)
    assert modes == ["follower", "follower", "leader"]
    assert len(zookeeper3.connect_string.split(",")) == 3
    assert [m.id for m in zookeeper3.members] == [1, 2, 3]
    for m in zookeeper3.members:
        assert (m.directory / "data" / "myid").read_text().strip() == str(m.id)


def test_leader_kill_minus_9_then_the_rest_serve_and_it_rejoins(zookeeper3: ZooKeeperEnsemble) -> None:
    leader = zookeeper3.leader()
    assert leader is not None
    pid = leader.pid
    assert pid is not None
    leader.kill()
    assert not leader.is_running and not _pid_alive(pid)
    others = [m for m in zookeeper3.members if m is not leader]
    for m in others:
        m.wait_serving(30)
    _write_through(",".join(m.address for m in others), "/after-leader-kill")
    leader.start()
    leader.wait_serving(30)
    assert leader.mode() == "follower"  # a quorum already has a leader; the restarted member follows


def test_a_paused_member_stops_serving_and_resumes(zookeeper3: ZooKeeperEnsemble) -> None:
    victim = next(m for m in zookeeper3.members if m.mode() == "follower")
    victim.pause()
    try:
        assert victim.is_running
        assert server_mode(victim.host, victim.client_port, timeout_s=0.5) is None
        with pytest.raises(HarnessTimeout, match=f"member {victim.id}") as info:
            victim.wait_serving(0.5)
        assert "log" in str(info.value.last_seen)
        others = [m for m in zookeeper3.members if m is not victim]
        _write_through(",".join(m.address for m in others), "/during-pause")
    finally:
        victim.resume()
    victim.wait_serving(30)


def test_close_kills_every_member_and_removes_its_own_directory() -> None:
    ens = ZooKeeperEnsemble(1, tick_ms=200)
    with ens:
        pid = ens.members[0].pid
        base = ens.base_dir
        assert pid is not None and _pid_alive(pid) and base.is_dir()
        assert [r.pid for r in ens.registry.registered()] == [pid]  # its own registry
    assert not _pid_alive(pid)
    assert not base.exists()
    assert ens.registry.registered() == []
    ens.close()  # idempotent
    with pytest.raises(BackendError, match="closed"):
        ens.start()


def test_explicit_ports_and_a_kept_base_dir_with_logs(tmp_path: Path) -> None:
    ports = [(free_port(), free_port(), free_port())]
    with ZooKeeperEnsemble(1, tmp_path, tick_ms=200, ports=ports) as ens:
        member = ens.members[0]
        assert member.client_port == ports[0][0]
        assert member.mode() == "standalone"
        member.stop()
        assert not member.is_running
        member.start()
        member.wait_serving(30)
    assert (tmp_path / "zk1" / "zoo.cfg").read_text().count(f"clientPort={ports[0][0]}") == 1
    log = (tmp_path / "zk1" / "zookeeper.log").read_text()
    assert log.count("kafka-chaos: starting zookeeper:1") == 2


def test_a_member_that_cannot_start_fails_fast_with_its_log(tmp_path: Path) -> None:
    ens = ZooKeeperEnsemble(1, tmp_path, classpath=str(tmp_path / "no-jars-here"))
    started = time.monotonic()
    with pytest.raises(BackendError, match="not running") as info:
        ens.start(timeout_s=30)
    assert time.monotonic() - started < 20
    assert "QuorumPeerMain" in str(info.value)  # the JVM's complaint, from the member's log
    ens.close()


def test_invalid_sizes_and_port_lists_are_rejected() -> None:
    with pytest.raises(BackendError, match="odd"):
        ZooKeeperEnsemble(2)
    with pytest.raises(BackendError, match="ports"):
        ZooKeeperEnsemble(3, ports=[(1, 2, 3)])


def test_observer_rides_through_the_kill_of_the_member_it_is_connected_to(
    zookeeper3: ZooKeeperEnsemble,
) -> None:
    chroot = "/observer-failover"
    writer = KazooClient(hosts=zookeeper3.connect_string, timeout=4.0)
    writer.start(timeout=20)
    writer.ensure_path(chroot)
    root = KazooClient(hosts=zookeeper3.connect_string + chroot, timeout=4.0)
    root.start(timeout=20)
    events = EventCollector()
    try:
        z.ensure_kafka_paths(root)
        root.create(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(1))
        with ZooKeeperObserver(zookeeper3.connect_string, events, chroot=chroot, session_timeout_s=6.0) as obs:
            events.wait_for(lambda e: e["type"] == "controller" and e["epoch"] == 1)
            sid = f"sid=0x{obs.session_id:x}"
            serving = [m for m in zookeeper3.members if sid in four_letter_word(m.host, m.client_port, "cons")]
            assert len(serving) == 1, [m.id for m in zookeeper3.members]
            serving[0].kill()
            root.retry(root.set, z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(2))
            events.wait_for(lambda e: e["type"] == "controller" and e["epoch"] == 2, timeout_s=30)
            serving[0].start()
            serving[0].wait_serving(30)
        assert not any(e["type"] == "observer.error" for e in events.events)  # same session throughout
    finally:
        root.stop()
        root.close()
        writer.delete(chroot, recursive=True)
        writer.stop()
        writer.close()


def test_members_left_running_are_killed_when_the_interpreter_exits(tmp_path: Path) -> None:
    """The leftover registry's atexit fallback: a script that starts a server and exits on an exception,
    never closing it."""
    script = (
        "import sys\n"
        "from harness.cluster.zookeeper import ZooKeeperEnsemble\n"
        f"ens = ZooKeeperEnsemble(1, {str(tmp_path)!r}, tick_ms=200)\n"
        "ens.start()\n"
        "print(ens.members[0].pid, flush=True)\n"
        "raise SystemExit(3)\n"
    )
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 3, proc.stderr
    pid = int(proc.stdout.strip())
    deadline = time.monotonic() + 5
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _pid_alive(pid)


def test_a_member_has_a_leftover_record_while_it_runs_and_none_once_stopped_or_killed(tmp_path: Path) -> None:
    """Like a broker's: the record names the running JVM (pid, its own group, its command line); a
    graceful stop and a kill -9 each drop it, a restart records the new process, and close drops all."""
    leftovers = tmp_path / "leftovers"
    registry = LeftoverRegistry(leftovers)
    try:
        with ZooKeeperEnsemble(1, tmp_path / "zk", tick_ms=200, registry=registry) as ens:
            member = ens.members[0]
            (first,) = _records(leftovers)
            assert (first.what, first.pid, first.pgid) == ("zookeeper:1", member.pid, member.pid)
            assert first.cmdline == tuple(psutil.Process(first.pid).cmdline())
            assert registry.registered() == [first]
            member.stop()
            assert _records(leftovers) == [] and registry.registered() == []
            member.start()
            member.wait_serving(30)
            (second,) = _records(leftovers)
            assert second.what == "zookeeper:1" and second.pid == member.pid != first.pid
            member.kill()
            assert _records(leftovers) == [] and registry.registered() == []
            member.start()
            assert [r.pid for r in _records(leftovers)] == [member.pid]
        assert _records(leftovers) == [] and registry.registered() == []
    finally:
        registry.close()


SIGKILLED_HARNESS = textwrap.dedent("""
    import sys, time
    from harness.cluster.zookeeper import ZooKeeperEnsemble
    ens = ZooKeeperEnsemble(1, sys.argv[1], tick_ms=200)
    ens.start()
    print(ens.members[0].pid, flush=True)
    time.sleep(600)
""")


def test_the_members_of_a_sigkilled_harness_are_killed_by_the_next_clean_leftovers(tmp_path: Path) -> None:
    """An ensemble without a given registry records its members in the per-user directory
    (`KAFKA_CHAOS_LEFTOVERS_DIR` here), so a JVM that outlives a SIGKILLed harness is found and killed."""
    leftovers = tmp_path / "leftovers"
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(leftovers),
           "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    stderr = tmp_path / "harness.stderr"
    with open(stderr, "wb") as err:
        harness = subprocess.Popen([sys.executable, "-c", SIGKILLED_HARNESS, str(tmp_path / "zk")],
                                   stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    pid = 0
    try:
        line = harness.stdout.readline() if harness.stdout else ""
        assert line, f"harness subprocess failed:\n{stderr.read_text()[-3000:]}"
        pid = int(line)
        assert [(r.what, r.pid) for r in _records(leftovers)] == [("zookeeper:1", pid)]
        assert clean_leftovers(leftovers) == []  # owner alive: hands off
        harness.send_signal(signal.SIGKILL)
        assert harness.wait(10) == -signal.SIGKILL
        assert _alive(pid), "the member should outlive a SIGKILLed harness (own session)"
        cleaned = clean_leftovers(leftovers)
        assert [(c.what, c.pid) for c in cleaned] == [("zookeeper:1", pid)]
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
        assert _records(leftovers) == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(10)
        if pid and _alive(pid):
            os.killpg(pid, signal.SIGKILL)
