"""What the power-loss filesystem costs a broker, and what a power loss takes (issue 38's figures), measured side by
side in one run: two 3-broker Apache Kafka clusters up at once (process backend, ZooKeeper mode), one with its log
directories plain, one on the power-loss filesystem (`ClusterSpec.lazy_fs`: `harness/cluster/lazyfs.py`, FUSE), as
a run with a power_loss fault gets.

  1. produce throughput, acks=all, idempotent, RF 3, min.insync.replicas 2: --records records of --size bytes as
     fast as one librdkafka producer sends them, into a new topic each round, the two clusters alternately, --rounds
     times; the medians and their ratio;
  2. the power loss itself on the FUSE cluster: a topic written with the default flush and one with flush.messages=1,
     then every broker's power cut at once: how long the fault takes (SIGKILL and the rollback), the bytes each
     node lost and its log segments' share, and how many acknowledged records each topic keeps once the brokers are
     back.

Usage: .venv/bin/python benchmarks/lazyfs_bench.py [--rounds 3] [--records 20000] [--size 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from harness.cluster.base import ClusterSpec, NodeId  # noqa: E402
from harness.cluster.process_backend import ProcessBackend, ProcessCluster  # noqa: E402
from harness.install.kafka import install_kafka  # noqa: E402
from harness.waiting import wait_until  # noqa: E402
from harness.workload.common import LIBRDKAFKA_LOGGER  # noqa: E402

BROKERS = tuple(NodeId.broker(k) for k in (1, 2, 3))


def create(cluster: ProcessCluster, topic: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers,
                                              "logger": LIBRDKAFKA_LOGGER}))
    admin.create_topics([NewTopic(topic, 3, 3, config=config or {})])[topic].result(60)


def produce(cluster: ProcessCluster, topic: str, records: int, size: int) -> float:
    """Records per second, from the first send to the last ack (all acknowledged, or it raises)."""
    producer = Producer(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                                              "enable.idempotence": True, "linger.ms": 5,
                                              "logger": LIBRDKAFKA_LOGGER}))
    failed: list[str] = []
    payload = b"x" * size

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    t0 = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) or failed:
        raise RuntimeError(f"{topic}: {len(failed)} failed, e.g. {failed[:1]}")
    return records / (time.monotonic() - t0)


def stored(cluster: ProcessCluster, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "bench"})
    try:
        return sum(int(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10.0)[1]) for p in range(3))
    finally:
        consumer.close()


def power_loss(cluster: ProcessCluster, records: int, size: int) -> None:
    create(cluster, "unsynced")
    create(cluster, "synced", {"flush.messages": "1"})
    produce(cluster, "unsynced", records, size)
    produce(cluster, "synced", records, size)
    t0 = time.monotonic()
    losses = cluster.power_loss(*BROKERS)
    took = time.monotonic() - t0
    print(f"\n2. a power loss of all 3 brokers, after {records} acknowledged records into each topic")
    print(f"   the fault (SIGKILL, then the rollback), all 3 nodes: {took:.2f} s")
    for node, loss in zip(BROKERS, losses, strict=True):
        logs = sum(n for path, n in loss.lost.items() if path.endswith(".log"))
        print(f"   {node}: {loss.lost_bytes / 1e6:7.1f} MB lost in {len(loss.lost)} files ({logs / 1e6:.1f} MB of "
              f"log segments: records), {len(loss.removed)} entries removed")
    t1 = time.monotonic()
    for node in BROKERS:
        cluster.start(node)
    kept = wait_until("both topics served again", lambda: (stored(cluster, "synced"), stored(cluster, "unsynced"))
                      if stored(cluster, "synced") >= records else None, 180, retry_on=(KafkaException,))
    print(f"   brokers back and serving in {time.monotonic() - t1:.1f} s")
    print(f"   acknowledged records kept: flush.messages=1 {kept[0]}/{records}; default flush {kept[1]}/{records}")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--rounds", type=int, default=3)
    args.add_argument("--records", type=int, default=20000)
    args.add_argument("--size", type=int, default=200)
    ns = args.parse_args()
    kafka = install_kafka("3.9")
    config = {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "6000"}
    with tempfile.TemporaryDirectory(prefix="lazyfs-bench-") as work, \
            ProcessBackend().up(ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=180, broker_config=config),
                                Path(work) / "plain") as plain, \
            ProcessBackend().up(ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=180, broker_config=config,
                                            lazy_fs=True), Path(work) / "fuse") as fuse:
        print(f"Apache Kafka {kafka.version}, two 3-broker clusters up at once (one plain, one on the power-loss "
              f"filesystem), acks=all, idempotent, RF 3; {ns.records} records of {ns.size} B per round, "
              f"{ns.rounds} rounds, alternating")
        rates: dict[str, list[float]] = {"plain": [], "fuse": []}
        for r in range(ns.rounds):
            for name, cluster in (("plain", plain), ("fuse", fuse)):
                create(cluster, f"bench-{r}")
                rates[name].append(produce(cluster, f"bench-{r}", ns.records, ns.size))
        print("\n1. produce throughput, records per second (median of rounds)")
        for name, values in rates.items():
            print(f"   {name:6s} {statistics.median(values):9.0f}/s   rounds: " + ", ".join(f"{v:.0f}" for v in values))
        ratio = statistics.median(rates["fuse"]) / statistics.median(rates["plain"])
        print(f"   on the power-loss filesystem / plain: {ratio:.2f}x")
        power_loss(fuse, ns.records, ns.size)


if __name__ == "__main__":
    main()
