"""How fast does the ZooKeeperObserver see a controller change? (goal: p99 <= 100 ms)

Starts a real single-node ZooKeeper (or uses --hosts), runs a ZooKeeperObserver, and from a
second kazoo client deletes and re-creates `/controller` N times with a new broker id each time,
as a controller failover does. For each change it measures the delay from just before the create
to the moment the sink receives the `controller` event naming the new broker, and also how far
the event's `wall` stamp (the watch firing) lies after the create. Prints percentiles.

    .venv/bin/python benchmarks/zk_observer_latency.py [--changes 200] [--hosts H:P]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from kazoo.client import KazooClient

from harness.cluster.zookeeper import ZooKeeperEnsemble
from harness.observe.zookeeper import ZooKeeperObserver
from harness.zk import znodes as z


class LatencySink:
    """Records when each controller event arrives; lets the driver wait for a given broker."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.arrivals: dict[int, tuple[float, float]] = {}  # broker -> (arrival ms, event wall ms)

    def __call__(self, event: Mapping[str, Any]) -> None:
        now = time.time() * 1000.0
        if event["type"] == "controller":
            with self.cond:
                self.arrivals.setdefault(int(event["broker"]), (now, float(event["wall"])))
                self.cond.notify_all()

    def wait(self, broker: int, timeout_s: float) -> tuple[float, float] | None:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while broker not in self.arrivals:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.arrivals[broker]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


@contextlib.contextmanager
def zookeeper(hosts: str | None) -> Iterator[str]:
    if hosts:
        yield hosts
        return
    with ZooKeeperEnsemble(1, tick_ms=200) as ens:
        yield ens.connect_string


def run(hosts: str, changes: int) -> int:
    chroot = f"/bench-{int(time.time() * 1000)}"
    writer = KazooClient(hosts=hosts, timeout=5.0)
    writer.start(timeout=15)
    writer.ensure_path(chroot)
    root = KazooClient(hosts=hosts + chroot, timeout=5.0)
    root.start(timeout=15)
    sink = LatencySink()
    delays: list[float] = []
    stamps: list[float] = []
    missed = 0
    try:
        z.ensure_kafka_paths(root)
        root.create(z.CONTROLLER_EPOCH_PATH, z.encode_controller_epoch(1))
        root.create(z.CONTROLLER_PATH, z.ControllerRegistration(100000).encode(), ephemeral=True)
        with ZooKeeperObserver(hosts, sink, chroot=chroot, session_timeout_s=10.0) as obs:
            sink.wait(100000, 10)
            for i in range(1, changes + 1):
                root.delete(z.CONTROLLER_PATH)
                t0 = time.time() * 1000.0
                root.create(z.CONTROLLER_PATH, z.ControllerRegistration(i).encode(), ephemeral=True)
                got = sink.wait(i, 5.0)
                if got is None:
                    missed += 1
                    continue
                delays.append(got[0] - t0)
                stamps.append(got[1] - t0)
            obs.wait_idle()
    finally:
        root.stop()
        root.close()
        with contextlib.suppress(Exception):
            writer.delete(chroot, recursive=True)
        writer.stop()
        writer.close()
    if not delays:
        print("no controller change was observed")
        return 1
    print(f"controller changes: {changes}, observed: {len(delays)}, missed: {missed}")
    print(
        "create -> sink receives event (ms): "
        f"p50 {pct(delays, 50):.2f}  p90 {pct(delays, 90):.2f}  p99 {pct(delays, 99):.2f}  "
        f"max {max(delays):.2f}  mean {statistics.fmean(delays):.2f}"
    )
    print(
        "create -> event wall stamp (ms):    "
        f"p50 {pct(stamps, 50):.2f}  p99 {pct(stamps, 99):.2f}  max {max(stamps):.2f}"
    )
    ok = pct(delays, 99) <= 100.0 and missed == 0
    print(f"goal p99 <= 100 ms: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--hosts", default=None, help="an existing ZooKeeper (default: start one)")
    args = parser.parse_args(argv)
    with zookeeper(args.hosts) as hosts:
        return run(hosts, args.changes)


if __name__ == "__main__":
    sys.exit(main())
