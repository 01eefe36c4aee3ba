"""TCP port numbers for the servers a backend starts (broker listeners, proxies, ZooKeeper members), chosen
before the servers bind them.

Drawn at random below the kernel's ephemeral port range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999
by default), not with bind(port 0): the kernel hands out bind(0) ports from the ephemeral range, which every
outgoing connection also takes its local port from, so between the draw and the server's own bind a client's
connect could take the port (seen: a reference broker failed with EADDRINUSE on its client listener while three
test workers started clusters at once). Below that range only another server's bind can take one, and so that
two harnesses (test workers, or runs side by side) do not draw the same port before either binds it, a drawn port
is reserved for `RESERVATION_S` by a file in the per-user cache (`ports/<port>`, created exclusively); another
allocator skips a reserved port (seen: a broker's client listener failed with EADDRINUSE because another test
worker's cluster had drawn the same port a moment before).
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import time
from pathlib import Path

from harness.errors import HarnessError
from harness.install.cache import cache_root

PORT_FLOOR = 20000
"""The lowest port drawn (well above the ports services are registered at)."""
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DRAWS = random.SystemRandom()  # not the experiment's seed: port numbers must not change the schedule
RESERVATION_S = 300.0
"""How long a drawn port stays reserved for the server it was drawn for (time enough to start and bind it; a
bound port is skipped anyway, as in use)."""
RESERVATIONS_DIR: Path | None = None
"""Where reservations live (None: `<cache>/ports`); tests point it elsewhere."""


def _reservations() -> Path:
    directory = RESERVATIONS_DIR or cache_root() / "ports"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _expired(mtime: float, now: float) -> bool:
    return now - mtime >= RESERVATION_S


def _reserve(directory: Path, port: int) -> bool:
    """Reserve `port` (False: another allocator holds a reservation younger than RESERVATION_S)."""
    path = directory / str(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                if not _expired(path.stat().st_mtime, time.time()):
                    return False
            except FileNotFoundError:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # expired: take it over
            continue
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(f"{os.getpid()}\n")
        return True
    return False


def _purge_expired(directory: Path) -> None:
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if _expired(entry.stat().st_mtime, now):
                    os.unlink(entry.path)


def ephemeral_range(path: Path | None = None) -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where the file cannot be read)."""
    try:
        low, high = (int(x) for x in (path or EPHEMERAL_RANGE_FILE).read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def allocate_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct TCP ports that were free on `host` a moment ago (all bound at once, then released) and are
    now reserved for RESERVATION_S: drawn below the ephemeral range, or from the kernel (bind to port 0) where that
    range leaves fewer than 1000 ports below it."""
    low, _ = ephemeral_range()
    reservations = _reservations()
    _purge_expired(reservations)
    socks: list[socket.socket] = []
    try:
        if low - PORT_FLOOR < 1000:
            for _ in range(100 * count):
                if len(socks) == count:
                    break
                s = _bound(host, 0)
                if _reserve(reservations, s.getsockname()[1]):
                    socks.append(s)
                else:
                    s.close()
            else:
                raise HarnessError(f"no {count} unreserved ports from the kernel on {host}")
        else:
            tried: set[int] = set()
            while len(socks) < count:
                if len(tried) >= low - PORT_FLOOR:
                    raise HarnessError(f"no {count} free ports on {host} in {PORT_FLOOR}..{low - 1}")
                port = _DRAWS.randrange(PORT_FLOOR, low)
                if port in tried:
                    continue
                tried.add(port)
                try:
                    bound = _bound(host, port)
                except OSError:
                    continue  # in use: draw another
                if _reserve(reservations, port):
                    socks.append(bound)
                else:
                    bound.close()  # another harness drew it a moment ago
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _bound(host: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, port))
    except OSError:
        s.close()
        raise
    return s
