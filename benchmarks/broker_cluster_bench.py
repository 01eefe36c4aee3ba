"""Reference-broker cluster benchmark: RF 3 acks=all produce throughput on 3 brokers, and failover times.

Starts a real ZooKeeper (the pyspark jars) and three reference brokers as processes, then:
  1. creates a topic with --partitions partitions, replication factor 3, min.insync.replicas 2,
     produces --messages 100-byte messages with acks=all + idempotence (linger.ms=5) and prints
     msg/s and MB/s (goal on the project machines, 2 cores: >= 20k msg/s);
  2. kill -9 of the controller: time until a new controller with a higher epoch is in ZooKeeper;
  3. kill -9 of a partition leader: time until the partition has a new leader in ZooKeeper, and
     until an acks=all produce to it succeeds again;
  4. SIGTERM of a broker: time until its leaderships moved and until it exited.
ZooKeeper session timeout --session-ms (default 3000): failover after kill -9 is bounded by it.

Usage: .venv/bin/python benchmarks/broker_cluster_bench.py [--messages 200000] [--partitions 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from harness.cluster.zookeeper import ZooKeeperEnsemble
from tests.fixtures.broker import ReferenceCluster


def produce(bs: str, topic: str, n: int) -> tuple[float, int]:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "acks": "all", "enable.idempotence": True,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * 100
    errors: list[object] = []

    def cb(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    p.flush(120)
    return time.perf_counter() - t0, len(errors)


def until(pred: object, timeout_s: float = 30.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            if pred():  # type: ignore[operator]
                return time.monotonic() - t0
        except Exception:
            pass
        time.sleep(0.01)
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=3000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp, \
            ZooKeeperEnsemble(1, Path(tmp) / "zk", tick_ms=200, max_session_timeout_ms=20000) as zk:
        boot = KazooClient(hosts=zk.connect_string)
        boot.start(timeout=10)
        boot.ensure_path("/bench")
        boot.stop()
        boot.close()
        props = {"zookeeper.session.timeout.ms": str(args.session_ms), "log.segment.bytes": str(64 << 20)}
        with ReferenceCluster(Path(tmp), zk.connect_string + "/bench", 3, props) as c:
            bs = c.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bs})
            for f in admin.create_topics([NewTopic("bench", args.partitions, 3)]).values():
                f.result(30)
            produce(bs, "bench", 2000)
            dt, errs = produce(bs, "bench", args.messages)
            rate = args.messages / dt
            print(f"produce RF=3 acks=all idempotent, {args.partitions} partitions, 3 brokers: {args.messages} x 100 B "
                  f"in {dt:.2f} s = {rate:,.0f} msg/s ({rate * 100 / 1e6:.1f} MB/s), errors {errs} "
                  f"[goal >= 20,000 msg/s]")

            old, epoch = c.controller()
            t0 = time.monotonic()
            c[old].kill()
            took = until(lambda: c.controller()[0] not in (-1, old) and c.controller()[1] > epoch)
            print(f"controller failover after kill -9 of {old}: {took:.2f} s (session timeout {args.session_ms} ms), "
                  f"epoch {epoch} -> {c.controller()[1]}")
            c[old].start()

            state = c.partition_state("bench", 0)
            leader = state["leader"]
            c[leader].kill()
            t0 = time.monotonic()
            took = until(lambda: c.partition_state("bench", 0)["leader"] not in (leader, -1))
            p = Producer({"bootstrap.servers": bs, "acks": "all", "message.timeout.ms": 30000,
                          "topic.metadata.refresh.interval.ms": 200})
            ok: list[bool] = []
            p.produce("bench", b"after", partition=0, on_delivery=lambda e, _m: ok.append(e is None))
            p.flush(30)
            write = time.monotonic() - t0
            print(f"partition leader failover after kill -9 of {leader}: new leader in ZooKeeper after {took:.2f} s, "
                  f"first acks=all write acknowledged after {write:.2f} s ({'ok' if ok == [True] else ok})")
            c[leader].start()
            until(lambda: len(c.partition_state("bench", 0)["isr"]) == 3, 30)

            victim = c.partition_state("bench", 0)["leader"]
            t0 = time.monotonic()
            c[victim].terminate()
            moved = until(lambda: all(c.partition_state("bench", q)["leader"] != victim
                                      for q in range(args.partitions)))
            c[victim].wait_exit(30)
            print(f"controlled shutdown (SIGTERM) of {victim}: leaderships moved after {moved:.2f} s, "
                  f"exited after {time.monotonic() - t0:.2f} s")


if __name__ == "__main__":
    main()
