"""Warm the verifier while the chaos runs, so that the verdict is a warm verify (issue 39).

`Warmup` is a context manager around a run: on entry a background thread lowers its own CPU priority
(`nice` +`WARM_NICE`; Linux keeps a nice value per thread and a child inherits its creator's), starts the
Spark session (so the driver JVM pyspark launches from that thread runs at the same low priority, all its
threads included) and verifies `training_history` once, writing nothing. The run's own processes (brokers,
ZooKeeper, Toxiproxy, the engine's threads) keep their priority, so the warm-up takes only CPU they leave
idle. `wait()` (before the verify) waits for the thread (a run shorter than the warm-up waits for its end, no
longer than a cold start would have taken), and the verify then finds the session there, its query paths
compiled; leaving the block does not wait, so an interrupted run exits at once.
A warm-up that fails only says so: the verify then starts Spark as it would have without one.

Also owns `training_history`, the small healthy run that takes the checks through their query shapes (the
class-data-sharing archive build trains on it too).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

TRAINING_VALUES = 300


def training_history(run_dir: Path) -> Path:
    """Write a small, healthy run into `run_dir` (history.jsonl, run.json) and return `run_dir`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    events: list[dict[str, object]] = [{"src": "engine", "type": "run.start", "experiment": "jvm-archive"}]
    events += [{"src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)]
    events.append({"src": "zk", "type": "controller", "broker": 1, "epoch": 1})
    events += [{"src": "zk", "type": "partition.state", "topic": "orders", "partition": p, "leader": p + 1,
                "leader_epoch": 0, "isr": [1, 2, 3], "replicas": [1, 2, 3], "controller_epoch": 1} for p in range(3)]
    events.append({"src": "admin", "type": "group.state", "group": "g", "state": "Stable", "generation": 1,
                   "coordinator": 2, "leader": "m0", "protocol": "range", "members": ["m0"]})
    events.append({"src": "consumer:m0", "type": "assign", "group": "g", "member": "m0", "generation": 1,
                   "partitions": [["orders", p] for p in range(3)]})
    offsets = [0, 0, 0]
    for value in range(1, TRAINING_VALUES + 1):
        p = value % 3
        o = offsets[p]
        offsets[p] += 1
        common = {"value": value, "key": f"k{value % 17}", "topic": "orders"}
        events.append({"src": "producer:p1", "type": "send", "producer": "p1", "acks": "all", **common})
        events.append({"src": "producer:p1", "type": "ack", "producer": "p1", "partition": p, "offset": o,
                       "latency_ms": 2.0, **common})
        events.append({"src": "consumer:m0", "type": "poll", "consumer": "m0", "group": "g", "member": "m0",
                       "partition": p, "offset": o, **common})
        if value % 20 == 0:
            events.append({"src": "consumer:m0", "type": "commit", "group": "g", "member": "m0", "generation": 1,
                           "topic": "orders", "partition": p, "offset": o + 1})
        if value == TRAINING_VALUES // 2:
            events.append({"src": "zk", "type": "controller", "broker": 2, "epoch": 2})
    events.append({"src": "engine", "type": "run.end", "status": "completed"})
    with open(run_dir / "history.jsonl", "w", encoding="utf-8") as out:
        for i, event in enumerate(events):
            t = round(i * 0.01, 3)
            out.write(json.dumps({"t": t, "wall": 1_767_225_600_000 + int(t * 1000), **event}) + "\n")
    run = {"experiment": "jvm-archive", "seed": 1, "backend": "synthetic", "status": "completed",
           "verify": {"checks": ["all"], "allow": [], "slo": {}}}
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return run_dir


WARM_NICE = 10
"""How much the warm-up thread and the driver JVM it launches lower their CPU priority."""


@dataclass(frozen=True, slots=True)
class WarmupResult:
    """How the warm-up went: `ok`, its wall time in seconds, and what went wrong if it failed."""

    ok: bool
    seconds: float
    error: str = ""

    def describe(self) -> str:
        if self.ok:
            return f"verifier warmed in the background in {self.seconds:.1f} s"
        return f"verifier warm-up failed after {self.seconds:.1f} s ({self.error}); the verify starts Spark itself"


class Warmup:
    """Start and warm the Spark session on a background thread for the length of a `with` block."""

    def __init__(self, spark_master: str | None, *, nice: int = WARM_NICE) -> None:
        self._master = spark_master
        self._nice = nice
        self._result: WarmupResult | None = None
        self._thread = threading.Thread(target=self._warm, name="verifier-warmup", daemon=True)

    def __enter__(self) -> Warmup:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Does not wait: a run that is not verified (interrupted, crashed) exits at once. The thread is a daemon
        and the session's driver JVM is stopped at interpreter exit (`spark_session`'s atexit hook), so a warm-up
        cut short leaves nothing running."""

    def wait(self) -> WarmupResult:
        """Wait for the warm-up to end (at most as long as a cold start would take) and say how it went."""
        self._thread.join()
        return self._result or WarmupResult(False, 0.0, "it never ran")

    def _warm(self) -> None:
        started = time.monotonic()
        try:
            _lower_priority(self._nice)
            from spark_analysis.session.spark_session import get_session
            from spark_analysis.verify import verify_run

            spark = get_session(self._master)
            with tempfile.TemporaryDirectory(prefix="kafka-chaos-warmup-") as tmp:
                verify_run(training_history(Path(tmp) / "run"), spark=spark, write=False)
            self._result = WarmupResult(True, time.monotonic() - started)
        except Exception as exc:  # a warm-up never fails a run; the verify starts Spark itself
            self._result = WarmupResult(False, time.monotonic() - started, f"{type(exc).__name__}: {exc}")


def _lower_priority(nice: int) -> None:
    """Lower this thread's CPU priority by `nice` (its children inherit it). Best effort: a platform without
    per-thread priorities warms at normal priority."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except (AttributeError, OSError):
        pass
