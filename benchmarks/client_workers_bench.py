"""The clients as workloads (issue 37's figures), measured side by side in one run on one 3-broker Apache Kafka
cluster (process backend, RF 3, acks=all, idempotent):

  1. events per second that one producer workload records: librdkafka in the harness's process
     (`ProducerWorkload`), the Java client in a worker process (`WorkerProducerWorkload`) and a pinned librdkafka
     (--pinned, confluent-kafka from PyPI) in a `py_worker` process, each asked for more than it can send (--rate)
     for --seconds, alternately, --rounds times;
  2. the time from an ack in the client to its event reaching the history's sink (p50, p99): librdkafka's
     delivery callback stamps and hands the event over on the same thread; the Java worker stamps it with
     System.nanoTime() and the relay hands it over after the pipe; the pinned worker as the in-process one, then
     the pipe;
  3. a worker's start-up, from asking for it to its `ready` line (the client created), Java and pinned: cold (the
     Java worker compiled, or confluent-kafka installed by pip, first, into an empty cache) and warm (cached).

Usage: .venv/bin/python benchmarks/client_workers_bench.py [--rounds 3] [--seconds 10] [--rate 20000] [--pinned 2.16.1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from harness.cluster.base import ClusterSpec  # noqa: E402
from harness.cluster.process_backend import ProcessBackend, ProcessCluster  # noqa: E402
from harness.history.events import Ack, HistoryEvent  # noqa: E402
from harness.install.java_client import install_java_client  # noqa: E402
from harness.install.kafka import install_kafka  # noqa: E402
from harness.install.librdkafka_client import install_librdkafka_client  # noqa: E402
from harness.workload.common import LIBRDKAFKA_LOGGER  # noqa: E402
from harness.workload.java_client import WorkerProducerWorkload, java_client, worker_sources  # noqa: E402
from harness.workload.producer import ProducerWorkload  # noqa: E402


class Recorder:
    """The sink: counts events and, for acks, how long after the client's stamp they arrived."""

    def __init__(self) -> None:
        self.count = 0
        self.delays_ms: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, event: HistoryEvent) -> None:
        now = time.time() * 1000.0
        with self._lock:
            self.count += 1
            if isinstance(event, Ack) and event.wall is not None:
                self.delays_ms.append(now - event.wall)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run_producer(cluster: ProcessCluster, kind: str, topic: str, seconds: float, rate: float,
                 pinned: str) -> tuple[float, Recorder]:
    rec = Recorder()
    if kind == "librdkafka":
        workload: ProducerWorkload | WorkerProducerWorkload = ProducerWorkload(
            cluster.bootstrap_servers, rec, producer_id=f"bench-{kind}", topic=topic, rate=rate)
    else:
        client = java_client(cluster.flavour.version) if kind == "java" else install_librdkafka_client(pinned)
        workload = WorkerProducerWorkload(cluster.bootstrap_servers, rec, client=client,
                                          producer_id=f"bench-{kind}", topic=topic, rate=rate)
    with workload:
        workload.start()
        time.sleep(2.0)  # past the first metadata round trip and the JIT's warm-up
        start, t0 = rec.count, time.monotonic()
        time.sleep(seconds)
        rate_seen = (rec.count - start) / (time.monotonic() - t0)
        workload.stop()
        workload.drain(15.0)
    return rate_seen, rec


def startup(bootstrap: str, version: str, cold: bool, pinned: str | None = None) -> float:
    """Seconds from asking for a producer worker to its ready line: Java, or the pinned librdkafka's with `pinned`
    (cold: into an empty cache: the jars fetched by Maven from ~/.m2 or Central and the worker compiled, or
    confluent-kafka installed by pip from PyPI, then started)."""
    env = dict(os.environ)
    if cold:
        env["KAFKA_CHAOS_CACHE"] = tempfile.mkdtemp(prefix="kafka-chaos-cold-")
    t0 = time.monotonic()
    client: Any = (install_librdkafka_client(pinned, environ=env) if pinned else
                   install_java_client(version, worker_sources(), environ=env))
    workload = WorkerProducerWorkload(bootstrap, lambda _e: None, client=client, producer_id="startup",
                                    topic="bench", rate=1.0)
    workload.start()  # returns on the worker's ready line
    took = time.monotonic() - t0
    workload.close()
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=20000.0)
    ap.add_argument("--pinned", default="2.16.1", help="the pinned librdkafka (confluent-kafka release) to measure")
    args = ap.parse_args()
    kafka = install_kafka("3.9")
    spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=120, broker_config={"min.insync.replicas": "2"})
    with tempfile.TemporaryDirectory(prefix="client-bench-") as work, \
            ProcessBackend().up(spec, Path(work)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER})
        admin.create_topics([NewTopic("bench", 3, 3)])["bench"].result(30)
        del admin
        print(f"Apache Kafka {kafka.version}, 3 brokers, topic bench (3 partitions, RF 3), acks=all, idempotent; "
              f"asked for {args.rate:.0f}/s for {args.seconds:g} s, {args.rounds} rounds each, alternating")
        kinds = ("librdkafka", "java", "pinned")
        rates: dict[str, list[float]] = {k: [] for k in kinds}
        delays: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                seen, rec = run_producer(cluster, kind, "bench", args.seconds, args.rate, args.pinned)
                rates[kind].append(seen)
                delays[kind].extend(rec.delays_ms)
        print("\n1. events recorded per second by one producer workload (send + ack), median of rounds")
        for kind, values in rates.items():
            print(f"   {kind:10s} {statistics.median(values):9.0f}/s   rounds: "
                  + ", ".join(f"{v:.0f}" for v in values))
        for kind in ("java", "pinned"):
            ratio = statistics.median(rates[kind]) / statistics.median(rates["librdkafka"])
            which = f" (confluent-kafka {args.pinned})" if kind == "pinned" else ""
            print(f"   {kind} / librdkafka in process: {ratio:.2f}x{which}")
        print("\n2. ack in the client -> its event at the history's sink (ms)")
        for kind, values in delays.items():
            print(f"   {kind:10s} p50 {pct(values, 0.5):7.3f}   p99 {pct(values, 0.99):7.3f}   ({len(values)} acks)")
        version = kafka.version
        cold = [startup(cluster.bootstrap_servers, version, cold=True) for _ in range(args.rounds)]
        warm = [startup(cluster.bootstrap_servers, version, cold=False) for _ in range(args.rounds)]
        print(f"\n3. Java worker start-up to ready (kafka-clients {version}), median of {args.rounds}")
        print(f"   cold (fetch + compile into an empty cache, then start) {statistics.median(cold):6.2f} s   rounds: "
              + ", ".join(f"{v:.2f}" for v in cold))
        print(f"   warm (cached build)                                    {statistics.median(warm):6.2f} s   rounds: "
              + ", ".join(f"{v:.2f}" for v in warm))
        cold = [startup(cluster.bootstrap_servers, version, cold=True, pinned=args.pinned) for _ in range(args.rounds)]
        warm = [startup(cluster.bootstrap_servers, version, cold=False, pinned=args.pinned) for _ in range(args.rounds)]
        print(f"\n4. pinned librdkafka worker start-up to ready (confluent-kafka {args.pinned}), "
              f"median of {args.rounds}")
        print(f"   cold (pip install into an empty cache, then start)     {statistics.median(cold):6.2f} s   rounds: "
              + ", ".join(f"{v:.2f}" for v in cold))
        print(f"   warm (cached install)                                  {statistics.median(warm):6.2f} s   rounds: "
              + ", ".join(f"{v:.2f}" for v in warm))


if __name__ == "__main__":
    main()
