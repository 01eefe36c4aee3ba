"""`harness.cluster.owners`: whether the owner of a mount or a rule still runs. A zombie does not: a SIGKILLed harness
whose parent has not reaped it yet is one, and its power-loss mounts must be cleaned then, not once it is reaped."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

from harness.cluster.owners import owner_alive, started, this_owner
from harness.waiting import wait_until


def test_this_process_owns_and_runs() -> None:
    assert owner_alive(*this_owner())


def test_an_exited_child_not_yet_reaped_is_a_zombie_and_no_live_owner() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    created = started(psutil.Process(child.pid))
    try:
        wait_until("the child a zombie", lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE or None,
                   30.0)
        assert not owner_alive(child.pid, created)
    finally:
        child.wait(10)
    assert not owner_alive(child.pid, created)


def test_another_process_on_the_same_pid_is_not_the_owner() -> None:
    pid, created = this_owner()
    assert not owner_alive(pid, created - 10.0)


def test_a_wall_clock_that_moves_the_boot_time_leaves_a_live_owner_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """psutil's create_time is the boot time (/proc/stat's btime: the wall clock less the uptime, in whole seconds)
    plus the start tick; a wall clock running fast of the uptime moves btime by a second every few minutes (seen: 0.5%
    here), and an owner recorded before that no longer matched its own start time."""
    pid, created = this_owner()
    boot, create = psutil.boot_time(), psutil.Process.create_time
    monkeypatch.setattr(psutil, "boot_time", lambda: boot + 1.0)
    monkeypatch.setattr(psutil.Process, "create_time", lambda self: create(self) + 1.0)
    assert owner_alive(pid, created)

