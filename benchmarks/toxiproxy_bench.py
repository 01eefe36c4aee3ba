"""Embedded Toxiproxy pass-through cost on loopback, no toxics, versus a direct connection.

Prints throughput (MB/s, 1 MB = 10^6 bytes) of a bulk one-way transfer and round-trip latency
p50/p99 of small ping-pongs, direct and through the proxy, and the latency the proxy adds.
Goals: >= 100 MB/s through the proxy, <= 1 ms added p99.

    .venv/bin/python benchmarks/toxiproxy_bench.py [--mode subprocess|thread|both] [--mb 512] [--pings 3000]
        [--repeat N]

`subprocess` runs the server as `python -m harness.toxiproxy.server --port 0` (as the process backend
does); `thread` runs `EmbeddedToxiproxy` in this process (shares the GIL with the load generator).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.toxiproxy.server import EmbeddedToxiproxy

CHUNK = 256 * 1024


class _Upstream:
    """Thread-per-connection TCP server: 'sink' connections discard, 'echo' ones echo (first byte picks)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = 0
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = bytearray(CHUNK)
        try:
            mode = conn.recv(1)
            if mode == b"s":
                n = 1
                while n:
                    n = conn.recv_into(buf)
                    self.received += n
                conn.sendall(b"k")  # never reached: closed by the client; kept for symmetry
            else:
                while True:
                    data = conn.recv(65536)
                    if not data:
                        return
                    conn.sendall(data)
        except OSError:
            return
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.close()


def throughput(port: int, total_bytes: int) -> float:
    """MB/s of sending `total_bytes` to the sink at 127.0.0.1:port (time until the sink got them all)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"s")
    payload = b"x" * (1 << 20)
    sent = 0
    start = time.perf_counter()
    while sent < total_bytes:
        sock.sendall(payload)
        sent += len(payload)
    sock.shutdown(socket.SHUT_WR)
    with contextlib.suppress(OSError):
        sock.recv(1)  # returns when the far end has read everything and closed
    elapsed = time.perf_counter() - start
    sock.close()
    return sent / elapsed / 1e6


def round_trips(port: int, count: int, size: int = 64) -> list[float]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"e")
    msg = b"p" * size
    samples = []
    for i in range(count + 100):
        start = time.perf_counter()
        sock.sendall(msg)
        got = 0
        while got < size:
            got += len(sock.recv(size - got))
        if i >= 100:  # warm-up
            samples.append(time.perf_counter() - start)
    sock.close()
    return samples


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0


@contextlib.contextmanager
def _server(mode: str) -> Iterator[str]:
    if mode == "thread":
        with EmbeddedToxiproxy(port=0) as tp:
            yield tp.url
        return
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-m", "harness.toxiproxy.server", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        yield line.split()[3]
    finally:
        proc.terminate()
        proc.wait(10)


def _create_proxy(url: str, upstream_port: int) -> int:
    body = json.dumps({"name": "bench", "upstream": f"127.0.0.1:{upstream_port}", "listen": "127.0.0.1:0"})
    req = urllib.request.Request(f"{url}/proxies", data=body.encode(), method="POST")
    with urllib.request.urlopen(req) as resp:
        return int(json.loads(resp.read())["listen"].rsplit(":", 1)[1])


def run(mode: str, megabytes: int, pings: int) -> None:
    upstream = _Upstream()
    try:
        with _server(mode) as url:
            proxy_port = _create_proxy(url, upstream.port)
            total = megabytes * 1_000_000
            direct_tp = throughput(upstream.port, total)
            proxy_tp = throughput(proxy_port, total)
            direct = round_trips(upstream.port, pings)
            proxied = round_trips(proxy_port, pings)
    finally:
        upstream.close()
    print(f"[{mode}] throughput, no toxics, {megabytes} MB one way:")
    print(f"  direct {direct_tp:8.1f} MB/s   via proxy {proxy_tp:8.1f} MB/s   (goal >= 100 MB/s)")
    d50, d99, p50, p99 = _pct(direct, 0.5), _pct(direct, 0.99), _pct(proxied, 0.5), _pct(proxied, 0.99)
    print(f"[{mode}] round trip, 64 B ping-pong x {pings}:")
    print(f"  direct    p50 {d50:.3f} ms  p99 {d99:.3f} ms")
    print(f"  via proxy p50 {p50:.3f} ms  p99 {p99:.3f} ms  mean {statistics.mean(proxied) * 1000:.3f} ms")
    print(f"  added     p50 {p50 - d50:.3f} ms  p99 {p99 - d99:.3f} ms  (goal <= 1 ms at p99)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["subprocess", "thread", "both"], default="both")
    parser.add_argument("--mb", type=int, default=512, help="megabytes per throughput run")
    parser.add_argument("--pings", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=1, help="runs per mode (figures vary on a busy host)")
    args = parser.parse_args()
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for mode in (["subprocess", "thread"] if args.mode == "both" else [args.mode]):
        for _ in range(args.repeat):
            run(mode, args.mb, args.pings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
