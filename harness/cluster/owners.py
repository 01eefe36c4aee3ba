"""Who owns what the harness leaves outside its processes (a mount, an iptables rule): this process, named by its pid
and start time so that a reused pid never passes for it, and whether such an owner still runs."""

from __future__ import annotations

import psutil

_TIME_SLACK_S = 0.05


def this_owner() -> tuple[int, float]:
    """(pid, start time) of this process."""
    me = psutil.Process()
    return me.pid, me.create_time()


def owner_alive(pid: int, create_time: float) -> bool:
    """Whether process `pid` runs and is the one that started at `create_time`. A zombie does not run: a SIGKILLed
    harness whose parent has not reaped it yet is one (seen: its power-loss mounts were left, the reaper taking it for
    alive)."""
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - create_time) < _TIME_SLACK_S and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def running(pid: int) -> bool:
    """Whether process `pid` runs, whichever process it is (a zombie does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
