"""Leftovers of a SIGKILLed harness (ZooKeeper + Toxiproxy process groups) are killed by the next
run's `ProcessBackend.clean_leftovers()`; a live harness's processes and reused pids are not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from harness.cluster.leftovers import LeftoverRegistry, ProcessRecord, clean_leftovers
from harness.cluster.process import ProcessBackend

pytestmark = pytest.mark.integration

HARNESS = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from harness.cluster.base import ClusterSpec, NodeId
    from harness.cluster.process import ProcessBackend
    leftovers, workdir = Path(sys.argv[1]), Path(sys.argv[2])
    cluster = ProcessBackend(leftovers_dir=leftovers).up(ClusterSpec(brokers=0, zookeepers=1), workdir)
    pids = [cluster.pid(NodeId.zookeeper(1)), cluster.toxiproxy.process.pid]
    print(json.dumps(pids), flush=True)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_processes_of_a_sigkilled_harness_are_killed_by_the_next_clean_leftovers(
    process_backend: ProcessBackend, tmp_path: Path,
) -> None:
    leftovers = tmp_path / "leftovers"
    stderr = tmp_path / "harness.stderr"
    with open(stderr, "wb") as err:
        harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(leftovers), str(tmp_path / "work")],
                                   stdout=subprocess.PIPE, stderr=err, text=True)
    pids: list[int] = []
    try:
        line = harness.stdout.readline() if harness.stdout else ""
        assert line, f"harness subprocess failed:\n{stderr.read_text()[-3000:]}"
        pids = json.loads(line)
        assert len(pids) == 2 and all(_alive(p) for p in pids), line
        assert len(list(leftovers.glob("*.json"))) == 2
        assert clean_leftovers(leftovers) == []  # owner alive: hands off
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        time.sleep(0.2)
        assert all(_alive(p) for p in pids), "children should outlive a SIGKILLed harness (own sessions)"
        cleaned = ProcessBackend.clean_leftovers(leftovers)
        assert sorted(c.pid for c in cleaned) == sorted(pids), (cleaned, pids)
        assert {c.what for c in cleaned} == {"zookeeper:1", "toxiproxy"}
        assert not any(_alive(p) for p in pids)
        assert list(leftovers.glob("*.json")) == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(10)
        for pid in pids:
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_a_reused_pid_whose_command_line_differs_is_not_killed(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        proc = psutil.Process(sleeper.pid)
        dead_owner = subprocess.Popen(["true"])
        dead_owner.wait()
        record = ProcessRecord(sleeper.pid, sleeper.pid, proc.create_time(), ("java", "something-else"),
                               "zookeeper:1", dead_owner.pid, 1.0)
        (tmp_path / f"{dead_owner.pid}-{sleeper.pid}.json").write_text(record.to_json())
        assert clean_leftovers(tmp_path) == []
        assert sleeper.poll() is None
        assert list(tmp_path.glob("*.json")) == []  # stale record dropped
    finally:
        sleeper.kill()
        sleeper.wait()


def test_registry_close_kills_what_is_still_recorded(tmp_path: Path) -> None:
    registry = LeftoverRegistry(tmp_path)
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        registry.register(sleeper.pid, "test-sleeper")
        assert [r.what for r in registry.registered()] == ["test-sleeper"]
        assert clean_leftovers(tmp_path) == []  # this test process owns it and is alive
        registry.close()
        assert sleeper.wait(5) == -signal.SIGKILL
        assert list(tmp_path.glob("*.json")) == []
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


@pytest.mark.parametrize("how", ["sigterm", "exit-without-down"])
def test_a_harness_that_exits_without_teardown_takes_its_processes_along(
    process_backend: ProcessBackend, tmp_path: Path, how: str,
) -> None:
    """SIGTERM (default action) and a plain interpreter exit both run the kill-everything fallback."""
    script = HARNESS.replace("time.sleep(600)", "time.sleep(600 if sys.argv[3] == 'sigterm' else 0)")
    stderr = tmp_path / "harness.stderr"
    with open(stderr, "wb") as err:
        harness = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "l"), str(tmp_path / "w"), how],
                                   stdout=subprocess.PIPE, stderr=err, text=True)
    pids: list[int] = []
    try:
        line = harness.stdout.readline() if harness.stdout else ""
        assert line, f"harness subprocess failed:\n{stderr.read_text()[-3000:]}"
        pids = json.loads(line)
        if how == "sigterm":
            harness.send_signal(signal.SIGTERM)
        assert harness.wait(20) in (0, -signal.SIGTERM)
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(10)
        for pid in pids:
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)


OBSERVER_HARNESS = textwrap.dedent("""
    import sys, time
    from harness.observe.isolated import IsolatedAdminObserver
    observer = IsolatedAdminObserver("127.0.0.1:1", lambda event: None)
    observer.start()
    print(observer._proc.pid, flush=True)
    time.sleep(600)
""")


def test_the_isolated_observer_of_a_sigkilled_harness_is_killed_by_the_next_clean_leftovers(tmp_path: Path) -> None:
    """The observer child (its own session) has a leftover record like the cluster's processes."""
    leftovers = tmp_path / "leftovers"
    stderr = tmp_path / "harness.stderr"
    env = {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(leftovers)}
    with open(stderr, "wb") as err:
        harness = subprocess.Popen([sys.executable, "-c", OBSERVER_HARNESS], stdout=subprocess.PIPE, stderr=err,
                                   text=True, env=env)
    pid = 0
    try:
        line = harness.stdout.readline() if harness.stdout else ""
        assert line, f"harness subprocess failed:\n{stderr.read_text()[-3000:]}"
        pid = int(line)
        assert _alive(pid)
        assert clean_leftovers(leftovers) == []  # owner alive: hands off
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        assert _alive(pid), "the observer child should outlive a SIGKILLed harness (own session)"
        cleaned = clean_leftovers(leftovers)
        assert [(c.pid, c.what) for c in cleaned] == [(pid, "observer:admin")], cleaned
        text = str(cleaned[0])
        assert "\n" not in text and "observer:admin" in text and "harness.observe.isolated" in text
        assert not _alive(pid)
        assert list(leftovers.glob("*.json")) == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(10)
        if pid and _alive(pid):
            os.killpg(pid, signal.SIGKILL)
