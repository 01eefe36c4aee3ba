"""Apache Kafka on the process backend (and on the containers backend where a Docker API answers, e.g.
Podman's after `eval "$(compose/podman/setup.sh --env)"`): the figures of the Apache Kafka issue (docs/
apache-kafka.md; they were measured beside the reference broker, retired since).

  1. cluster up: time until 3 brokers + 1 ZooKeeper + Toxiproxy are up and every broker answers
     Metadata through its own client proxy (`ProcessBackend.up`), --rounds times per broker flavour;
  2. controller failover after kill -9 of the controller: time until ZooKeeper's /controller names
     another broker, beside zookeeper.session.timeout.ms (--session-ms), --rounds times per flavour;
  3. with --experiments: the wall time of each shipped experiment (`kafka-chaos run`, verification
     included) on each flavour.

Usage: .venv/bin/python benchmarks/apache_kafka_bench.py [--rounds 3] [--session-ms 6000] [--experiments]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kazoo.client import KazooClient  # noqa: E402

from harness.cluster.base import ClusterSpec, NodeId  # noqa: E402
from harness.cluster.process_backend import ProcessBackend, ProcessCluster  # noqa: E402
from harness.cluster.select import docker_api  # noqa: E402
from harness.install.kafka import install_kafka  # noqa: E402

FLAVOURS = ("apache-kafka",)
"""The brokers measured (the reference broker, measured beside it once, was retired)."""


def controller(zk: KazooClient) -> int | None:
    try:
        data, _ = zk.get("/controller")
    except Exception:
        return None
    return int(json.loads(data.decode())["brokerid"])


def failover(cluster: ProcessCluster) -> float:
    """kill -9 of the controller; seconds until /controller names another live broker."""
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        deadline = time.monotonic() + 60
        while (old := controller(zk)) is None:
            assert time.monotonic() < deadline, "no controller"
            time.sleep(0.05)
        t0 = time.monotonic()
        cluster.kill(NodeId.broker(old))
        while controller(zk) in (None, old):
            assert time.monotonic() < t0 + 120, "no new controller within 120 s"
            time.sleep(0.02)
        took = time.monotonic() - t0
        cluster.start(NodeId.broker(old))
        return took
    finally:
        zk.stop()
        zk.close()


def containers_up_seconds(broker: str) -> float:
    """Seconds from `ContainersBackend().up()` until 3 brokers (+1 ZooKeeper, Toxiproxy) answer."""
    from harness.cluster.containers import ContainersBackend

    spec = ClusterSpec(brokers=3, zookeepers=1, broker=broker, ready_timeout_s=180.0,
                       broker_config={"zookeeper.session.timeout.ms": "6000"})
    with tempfile.TemporaryDirectory(prefix="bench-containers-") as work:
        t0 = time.monotonic()
        cluster = ContainersBackend().up(spec, Path(work))
        took = time.monotonic() - t0
        cluster.down()
    return took


def summary(xs: list[float]) -> str:
    return f"median {statistics.median(xs):6.2f} s  (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--experiments", action="store_true", help="also time every shipped experiment")
    args = ap.parse_args()
    kafka = install_kafka()
    print(f"Apache Kafka: {kafka.describe()}")
    up: dict[str, list[float]] = {f: [] for f in FLAVOURS}
    fail: dict[str, list[float]] = {f: [] for f in FLAVOURS}
    spec_config = {"zookeeper.session.timeout.ms": str(args.session_ms)}
    for r in range(args.rounds):
        for flavour in FLAVOURS:
            with tempfile.TemporaryDirectory(prefix=f"bench-{flavour}-") as work:
                t0 = time.monotonic()
                backend = ProcessBackend(broker=flavour)
                spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=180, broker_config=spec_config)
                with backend.up(spec, Path(work)) as cluster:
                    up[flavour].append(time.monotonic() - t0)
                    fail[flavour].append(failover(cluster))
                print(f"round {r + 1} {flavour:13s} up {up[flavour][-1]:6.2f} s  failover {fail[flavour][-1]:6.2f} s",
                      flush=True)
    print(f"\n1. cluster up (3 brokers + 1 ZooKeeper + Toxiproxy, process backend, {args.rounds} rounds)")
    for flavour in FLAVOURS:
        print(f"   {flavour:13s} {summary(up[flavour])}")
    answers, why = docker_api()
    if not answers:
        print(f"   containers backend: not measured ({why}; `compose/podman/setup.sh --env` gives one)")
    else:
        cup: dict[str, list[float]] = {f: [] for f in FLAVOURS}
        for _ in range(args.rounds):
            for flavour in FLAVOURS:
                cup[flavour].append(containers_up_seconds(flavour))
        for flavour in FLAVOURS:
            print(f"   containers {flavour:13s} {summary(cup[flavour])}")
    print(f"\n2. controller failover after kill -9 (zookeeper.session.timeout.ms = {args.session_ms} ms)")
    for flavour in FLAVOURS:
        xs = fail[flavour]
        print(f"   {flavour:13s} {summary(xs)}  = {statistics.median(xs) * 1000 / args.session_ms:.2f}x the session")
    if args.experiments:
        print("\n3. shipped experiments, wall time of `kafka-chaos run` (verification included)")
        for exp in sorted((ROOT / "experiments").glob("*.yaml")):
            for flavour in FLAVOURS:
                with tempfile.TemporaryDirectory(prefix="bench-run-") as runs:
                    t0 = time.monotonic()
                    proc = subprocess.run(
                        [str(ROOT / ".venv/bin/kafka-chaos"), "run", str(exp), "--backend", "process",
                         "--broker", flavour, "--runs-dir", runs], capture_output=True, text=True, check=False)
                    verdict = next((ln for ln in proc.stdout.splitlines() if ln.startswith("verdict:")), "no verdict")
                    print(f"   {exp.stem:22s} {flavour:13s} {time.monotonic() - t0:6.1f} s  {verdict.split('  ')[0]}",
                          flush=True)


if __name__ == "__main__":
    main()
