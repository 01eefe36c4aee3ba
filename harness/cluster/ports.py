"""TCP port numbers for the servers a backend starts (broker listeners, proxies, ZooKeeper members), chosen
before the servers bind them.

Drawn at random below the kernel's ephemeral port range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999
by default), not with bind(port 0): the kernel hands out bind(0) ports from the ephemeral range, which every
outgoing connection also takes its local port from, so between the draw and the server's own bind a client's
connect could take the port (seen: a reference broker failed with EADDRINUSE on its client listener while three
test workers started clusters at once). Below that range only another server's bind can take one.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from harness.errors import HarnessError

PORT_FLOOR = 20000
"""The lowest port drawn (well above the ports services are registered at)."""
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_DRAWS = random.SystemRandom()  # not the experiment's seed: port numbers must not change the schedule


def ephemeral_range(path: Path | None = None) -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where the file cannot be read)."""
    try:
        low, high = (int(x) for x in (path or EPHEMERAL_RANGE_FILE).read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def allocate_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct TCP ports that were free on `host` a moment ago (all bound at once, then released): drawn
    below the ephemeral range, or from the kernel (bind to port 0) where that range leaves fewer than 1000 ports
    below it."""
    low, _ = ephemeral_range()
    socks: list[socket.socket] = []
    try:
        if low - PORT_FLOOR < 1000:
            for _ in range(count):
                socks.append(_bound(host, 0))
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
                    socks.append(_bound(host, port))
                except OSError:
                    continue  # in use: draw another
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
