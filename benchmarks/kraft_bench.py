"""KRaft on Apache Kafka 4.x (process backend): the figures of the KRaft issue, printed.

  1. cluster up: time until 3 dedicated controllers + 3 brokers + Toxiproxy are up (storage formatted, every
     broker unfenced and answering Metadata through its own client proxy), beside a ZooKeeper-mode cluster
     of 1 ZooKeeper + 3 brokers on Apache Kafka 3.9; --rounds times each, alternating;
  2. quorum leader failover after kill -9 of the leader, --kills times on one cluster: from the kill to the
     `controller` event naming a new leader at a higher epoch, beside controller.quorum.election.timeout.ms
     (the goal: within it + 1 s) and controller.quorum.fetch.timeout.ms (how long the followers wait for
     a silent leader before they may vote: KIP-595);
  3. observer latency: from the new leader's own "Completed transition to Leader(... epoch=N" log line (its
     wall clock, ms) to the quorum observer's `controller` event for epoch N (goal: p99 <= 100 ms).

Usage: .venv/bin/python benchmarks/kraft_bench.py [--rounds 2] [--kills 10] [--kafka 4]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.cluster.base import ClusterSpec, NodeId  # noqa: E402
from harness.cluster.process_backend import ProcessBackend, ProcessCluster  # noqa: E402
from harness.observe.quorum import QuorumObserver  # noqa: E402

ELECTION_TIMEOUT_MS = 1000  # Kafka's defaults (QuorumConfig); --fetch-timeout-ms / --election-timeout-ms change them
FETCH_TIMEOUT_MS = 2000
_TRANSITION = re.compile(r"^\[(?P<ts>[\d-]+ [\d:]+,\d+)\] INFO \[RaftManager id=(?P<id>\d+)\] Completed transition to "
                         r"Leader\(.*?epoch=(?P<epoch>\d+),")


def _spec(kraft: bool, kafka: str, quorum: dict[str, str] | None = None) -> ClusterSpec:
    if kraft:
        return ClusterSpec(brokers=3, zookeepers=0, mode="kraft", controllers=3, kafka_version=kafka,
                           broker="apache-kafka", broker_config=quorum or {})
    return ClusterSpec(brokers=3, zookeepers=1, kafka_version="3.9", broker="apache-kafka")


def cluster_up(rounds: int, kafka: str) -> None:
    times: dict[str, list[float]] = {"kraft (3 controllers + 3 brokers)": [], "zookeeper (1 zk + 3 brokers)": []}
    for _ in range(rounds):
        for kraft, key in ((True, "kraft (3 controllers + 3 brokers)"), (False, "zookeeper (1 zk + 3 brokers)")):
            with tempfile.TemporaryDirectory(prefix="kraft-bench-") as tmp:
                start = time.monotonic()
                with ProcessBackend().up(_spec(kraft, kafka), Path(tmp)):
                    times[key].append(time.monotonic() - start)
    print("1. cluster up (process backend, Apache Kafka):")
    for key, values in times.items():
        print(f"   {key:36s} median {statistics.median(values):5.1f} s  (rounds: "
              f"{', '.join(f'{v:.1f}' for v in values)})")


class _Sink:
    """Keeps the `controller` events (with their wall stamps) the observer emits."""

    def __init__(self) -> None:
        self.controllers: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("type") == "controller":
            with self._lock:
                self.controllers.append(dict(event))

    def first_with_epoch_above(self, epoch: int) -> dict[str, Any] | None:
        with self._lock:
            return next((e for e in self.controllers if int(e["epoch"]) > epoch), None)


def _transitions(cluster: ProcessCluster) -> dict[int, float]:
    """Epoch -> wall ms at which a voter logged 'Completed transition to Leader' for it (earliest)."""
    out: dict[int, float] = {}
    for log in cluster.workdir.glob("controller-*/logs/server.log"):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            m = _TRANSITION.match(line)
            if m:
                ts = datetime.strptime(m.group("ts"), "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000.0
                epoch = int(m.group("epoch"))
                out[epoch] = min(out.get(epoch, ts), ts)
    return out


def failover(kills: int, kafka: str, fetch_ms: int, election_ms: int, interval_s: float) -> None:
    failovers: list[float] = []
    lags: list[float] = []
    quorum = {"controller.quorum.fetch.timeout.ms": str(fetch_ms), "controller.quorum.election.timeout.ms":
              str(election_ms)}
    with tempfile.TemporaryDirectory(prefix="kraft-bench-") as tmp, \
            ProcessBackend().up(_spec(True, kafka, quorum), Path(tmp)) as cluster:
        sink = _Sink()
        observing_since = time.time() * 1000.0  # leader changes before this are not the observer's latency
        with QuorumObserver(cluster.quorum_voters, sink, interval_s=interval_s) as observer:
            leader, epoch = observer.wait_leader(60.0)
            for _ in range(kills):
                killed_at = time.time() * 1000.0
                cluster.kill(NodeId.controller(leader))
                new_leader, new_epoch = observer.wait_leader(60.0, other_than=leader)
                event = sink.first_with_epoch_above(epoch)
                assert event is not None
                failovers.append((float(event["wall"]) - killed_at) / 1000.0)
                cluster.start(NodeId.controller(leader))
                time.sleep(3.0)  # let the restarted voter catch up before the next kill
                leader, epoch = observer.leader() or (new_leader, new_epoch)
        logged = _transitions(cluster)
        for event in sink.controllers:
            at = logged.get(int(event["epoch"]))
            if at is not None and at >= observing_since:
                lags.append(float(event["wall"]) - at)
    goal, bound = (election_ms + 1000) / 1000, (fetch_ms + election_ms + 1000) / 1000
    print(f"2. quorum leader failover after kill -9 ({kills} kills; election timeout {election_ms} ms, "
          f"fetch timeout {fetch_ms} ms, goal <= election timeout + 1 s = {goal:.1f} s):")
    print(f"   median {statistics.median(failovers):.2f} s, max {max(failovers):.2f} s "
          f"(each: {', '.join(f'{v:.2f}' for v in failovers)})")
    print(f"   within the goal: {sum(1 for v in failovers if v <= goal)}/{kills}; within fetch timeout + election "
          f"timeout + 1 s = {bound:.1f} s: {sum(1 for v in failovers if v <= bound)}/{kills}")
    if lags:
        ordered = sorted(lags)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        print(f"3. observer latency (poll every {interval_s * 1000:g} ms), leader's log line -> `controller` event "
              f"({len(lags)} leader changes): "
              f"p50 {statistics.median(lags):.0f} ms, p99 {p99:.0f} ms, max {max(lags):.0f} ms (goal p99 <= 100 ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--kafka", default="4")
    parser.add_argument("--fetch-timeout-ms", type=int, default=FETCH_TIMEOUT_MS)
    parser.add_argument("--election-timeout-ms", type=int, default=ELECTION_TIMEOUT_MS)
    parser.add_argument("--skip-up", action="store_true", help="only the failover and observer figures")
    parser.add_argument("--observer-interval-ms", type=float, default=50.0,
                        help="the quorum observer's poll interval (QuorumObserver's default: 50 ms)")
    args = parser.parse_args()
    if not args.skip_up:
        cluster_up(args.rounds, args.kafka)
    failover(args.kills, args.kafka, args.fetch_timeout_ms, args.election_timeout_ms, args.observer_interval_ms / 1000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
