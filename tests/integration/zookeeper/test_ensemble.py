"""The ZooKeeper launcher with real servers: quorum start, kill -9, SIGSTOP, restart, clean teardown."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.cluster.zookeeper import ZooKeeperEnsemble, free_port, server_mode
from harness.errors import BackendError, HarnessTimeout
from harness.zk import znodes as z

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
    assert not _pid_alive(pid)
    assert not base.exists()
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
    assert log.count("harness: starting member 1") == 2


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
