"""Reference-broker throughput: produce and consume rates (100-byte messages, linger 5 ms) and request round trip.

Starts one reference broker as a real process (no ZooKeeper unless --zookeeper is given) on a
free port in a temporary directory, then with confluent-kafka:
  1. produces N 100-byte messages (acks=all + idempotence by default, linger.ms=5) and prints msg/s and MB/s,
  2. consumes them all back with a fresh consumer group and prints msg/s,
  3. measures the per-request round trip as the latency of synchronous single-message produces
     (acks=1, linger.ms=0; p50/p99 over 500) and of Metadata requests (list_topics).
Goal on the project machines: >= 100k msg/s produce on one broker.

Usage: .venv/bin/python benchmarks/broker_throughput.py [--messages 500000] [--acks 1|all]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.fixtures.broker import ReferenceBroker


def produce(bs: str, topic: str, n: int, acks: str) -> float:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "acks": acks, "enable.idempotence": acks == "all",
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * 100
    errors = []

    def cb(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, key=str(i % 1000).encode(), on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    left = p.flush(120)
    elapsed = time.perf_counter() - t0
    if errors or left:
        raise SystemExit(f"produce failed: {len(errors)} errors ({errors[:3]}), {left} unflushed")
    return elapsed


def consume(bs: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": bs, "group.id": f"bench-{time.time()}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.subscribe([topic])
    got = 0
    t0 = time.perf_counter()
    first = None
    while got < n and time.perf_counter() - t0 < 300:
        msgs = c.consume(10000, 1.0)
        if msgs and first is None:
            first = time.perf_counter()
        got += sum(1 for m in msgs if m.error() is None)
    elapsed = time.perf_counter() - (first or t0)
    c.close()
    if got < n:
        raise SystemExit(f"consumed only {got}/{n}")
    return elapsed


def round_trips(bs: str, topic: str) -> tuple[list[float], list[float]]:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0, "acks": 1})
    produce_ms = []
    for i in range(500):
        t0 = time.perf_counter()
        p.produce(topic, b"y" * 100, key=str(i).encode(), partition=0)
        p.flush(10)
        produce_ms.append((time.perf_counter() - t0) * 1000)
    admin = AdminClient({"bootstrap.servers": bs})
    admin.list_topics(timeout=10)
    meta_ms = []
    for _ in range(200):
        t0 = time.perf_counter()
        admin.list_topics(topic, timeout=10)
        meta_ms.append((time.perf_counter() - t0) * 1000)
    return produce_ms, meta_ms


def pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--acks", default="all", choices=["1", "all"])
    ap.add_argument("--flush-every-batch", action="store_true", help="log.flush.interval.messages=1")
    args = ap.parse_args(argv)
    overrides = {"log.flush.interval.messages": "1"} if args.flush_every_batch else {}
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as tmp, \
            ReferenceBroker(Path(tmp), zookeeper_connect="", overrides=overrides) as broker:
        bs = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("bench", args.partitions, 1)])["bench"].result(30)
        n = args.messages
        t_prod = produce(bs, "bench", n, args.acks)
        t_cons = consume(bs, "bench", n)
        produce_ms, meta_ms = round_trips(bs, "bench")
        print(f"reference broker, 1 broker, {args.partitions} partitions, 100-byte values, linger.ms=5, "
              f"acks={args.acks}, idempotent={args.acks == 'all'}, flush policy: "
              f"{'fsync every batch' if args.flush_every_batch else 'OS page cache'}")
        print(f"produce : {n} msgs in {t_prod:.2f} s = {n / t_prod:,.0f} msg/s ({n * 100 / t_prod / 1e6:.1f} MB/s)")
        print(f"consume : {n} msgs in {t_cons:.2f} s = {n / t_cons:,.0f} msg/s")
        print(f"round trip, 1-message produce acks=1: p50 {statistics.median(produce_ms):.2f} ms, "
              f"p99 {pct(produce_ms, 0.99):.2f} ms")
        print(f"round trip, Metadata: p50 {statistics.median(meta_ms):.2f} ms, p99 {pct(meta_ms, 0.99):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
