"""Who owns what the harness leaves outside its processes (a mount, an iptables rule): this process, named by its pid
and start time so that a reused pid never passes for it, and whether such an owner still runs."""

from __future__ import annotations

import psutil

_TIME_SLACK_S = 0.05


def started(proc: psutil.Process) -> float:
    """When `proc` started, in seconds since boot: psutil's `create_time` (boot time plus the kernel's start tick)
    less the boot time, both read now. psutil reads the boot time from /proc/stat's `btime`, which is the wall clock
    less the uptime in whole seconds, so a step or a slew of the wall clock moves it by a second at a time (seen on
    these machines: the wall clock ran 0.5% fast of the uptime, `btime` moving every 200 s or so); a wall-clock start
    time recorded before such a move never matched the process again, and its records were dropped unkilled."""
    return proc.create_time() - psutil.boot_time()


def this_owner() -> tuple[int, float]:
    """(pid, start time since boot) of this process."""
    me = psutil.Process()
    return me.pid, started(me)


def same_process(pid: int, create_time: float) -> psutil.Process | None:
    """Process `pid` if it runs and is the one that started at `create_time` (seconds since boot, `started`), else
    None. A zombie does not run: a SIGKILLed harness whose parent has not reaped it yet is one (seen: its power-loss
    mounts were left, the reaper taking it for alive)."""
    try:
        proc = psutil.Process(pid)
        return proc if abs(started(proc) - create_time) < _TIME_SLACK_S and proc.status() != psutil.STATUS_ZOMBIE \
            else None
    except psutil.Error:
        return None


def owner_alive(pid: int, create_time: float) -> bool:
    """Whether process `pid` runs and is the one that started at `create_time` (`same_process`)."""
    return same_process(pid, create_time) is not None


def running(pid: int) -> bool:
    """Whether process `pid` runs, whichever process it is (a zombie does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
