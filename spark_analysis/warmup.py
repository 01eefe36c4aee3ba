"""Warm the verifier while the run lasts, so that the verdict is a warm verify (issue 39).

`Warmup` hears the run's phases (`hear_phase`, the CLI's progress hook).
- At the steady phase (the cluster is up) a background thread starts the Spark session and verifies
  `training_history` once, writing nothing, at normal priority: nothing is measured yet.
- At the chaos phase `lower_priority()` lowers the warm-up thread and every thread of the driver JVM it launched by
  `WARM_NICE` (Linux keeps a nice value per thread, and a thread or process inherits its creator's), so what
  remains of the warm-up takes only CPU the brokers, clients and observers leave idle while faults are measured.
- `wait()` (before the verify) waits for the thread: a run shorter than the warm-up waits for its end, no longer
  than a cold start would have taken. The verify then finds the session there, its query paths compiled, and the
  driver's threads back at their priority where the system allows raising it again (root; otherwise they stay
  lowered, with the cluster gone by then).
- `abandon()` (a run that ends unverified: interrupted, its record not written, crashed; leaving the `with`
  block on an exception) stops the session and the driver JVM the warm-up launched before the CLI returns.
A warm-up that fails only says so: the verify then starts Spark as it would have without one. A process that has
a Spark session already warms nothing.

Also owns `training_history`, the small healthy run that takes the checks through their query shapes (the
class-data-sharing archive build trains on it too).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil
    from pyspark.sql import SparkSession

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
ABANDON_STOP_S = 10.0
"""How long an abandoned warm-up waits for a driver JVM still being launched, and then for it to stop."""


@dataclass(frozen=True, slots=True)
class WarmupResult:
    """How the warm-up went: `ok`, its wall time in seconds, and what went wrong if it failed."""

    ok: bool
    seconds: float
    error: str = ""
    already: bool = False
    """The process had a Spark session before (a pytest worker's shared one, spark-submit): nothing to warm."""

    def describe(self) -> str:
        if self.already:
            return "verifier already running in this process"
        if self.ok:
            return f"verifier warmed in the background in {self.seconds:.1f} s"
        return f"verifier warm-up failed after {self.seconds:.1f} s ({self.error}); the verify starts Spark itself"


class Warmup:
    """Start and warm the Spark session on a background thread while a run lasts; `hear_phase` is the run's
    progress hook (`RichProgress(on_phase=...)`)."""

    def __init__(self, spark_master: str | None, *, nice: int = WARM_NICE) -> None:
        self._master = spark_master
        self._nice = nice
        self._lowered = threading.Event()
        self._abandoned = threading.Event()
        self._launch_done = threading.Event()
        self._spark: SparkSession | None = None
        """The session this warm-up launched (None: none yet, or the process had one already)."""
        self._result: WarmupResult | None = None
        self._tid: int | None = None
        self._was: dict[int, int] = {}
        """The driver JVM's threads this warm-up lowered, and their priority before."""
        self._thread = threading.Thread(target=self._warm, name="verifier-warmup", daemon=True)

    def __enter__(self) -> Warmup:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """A run that raised is not verified: the driver JVM this warm-up launched stops now."""
        if exc_type is not None:
            self.abandon()

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> None:
        """Begin the warm-up (once)."""
        if not self.started:
            self._thread.start()

    def hear_phase(self, name: str) -> None:
        """The run's phases: the warm-up begins with the steady phase (the cluster is up: a run stopped while it
        comes up has no driver JVM to stop) and yields the CPU from the chaos phase on."""
        if name in ("steady", "chaos"):
            self.start()
        if name == "chaos":
            self.lower_priority()

    def lower_priority(self) -> None:
        """From now on the warm-up yields the CPU: its thread and the driver JVM's threads run `nice` lower. Once;
        best effort (a platform without per-thread priorities warms at normal priority)."""
        if self._lowered.is_set():
            return
        self._lowered.set()
        if self._tid is not None:
            self._was.update(_renice([self._tid], self._nice))
        self._was.update(_renice(_driver_threads(), self._nice))

    def wait(self) -> WarmupResult:
        """Wait for the warm-up to end (at most as long as a cold start would take) and say how it went. The driver
        JVM's threads get their priority back where the system allows it (root, or a nice limit that permits it):
        the verify that follows, and whatever else this process verifies later, is what is measured now."""
        if not self.started:
            return WarmupResult(False, 0.0, "the run ended before its steady phase")
        self._restore_priority()  # before the join: the chaos is over, and a starved warm-up would hold the verdict
        self._thread.join()
        self._restore_priority()  # the driver threads started meanwhile inherited the lowered priority
        return self._result or WarmupResult(False, 0.0, "it never ran")

    def _restore_priority(self) -> None:
        """Every thread of the warm-up and of its driver JVM back at the priority it had (a thread started after
        `lower_priority` at this thread's, which was never lowered), where the system allows raising it."""
        if not self._lowered.is_set():
            return
        with contextlib.suppress(AttributeError, OSError):
            base = os.getpriority(os.PRIO_PROCESS, 0)
            for tid in [*_driver_threads(), *([self._tid] if self._tid is not None else [])]:
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, tid, self._was.get(tid, base))

    def abandon(self, timeout_s: float = ABANDON_STOP_S) -> None:
        """The run will not be verified (interrupted, its record not written, crashed): stop the session and the
        driver JVM this warm-up launched before the CLI returns, even mid-job (the job fails; the warm-up reports
        it), waiting for a JVM still being launched. Nothing to do for a session the process had already."""
        self._abandoned.set()
        if not self.started:
            return
        if not self._launch_done.wait(timeout_s):
            _kill_launching_driver()  # still starting after the wait (a loaded machine): the launch then fails
            return
        if self._spark is not None:
            from spark_analysis.session.spark_session import stop_session_now

            stop_session_now(self._spark, timeout_s)

    def _warm(self) -> None:
        started = time.monotonic()
        self._tid = threading.get_native_id()
        try:
            from pyspark import SparkContext

            from spark_analysis.session.spark_session import get_session
            from spark_analysis.verify import verify_run

            if SparkContext._active_spark_context is not None:  # its owner configured it; leave it alone
                self._result = WarmupResult(True, 0.0, already=True)
                return
            if self._abandoned.is_set():
                raise RuntimeError("the run ended unverified")
            if self._lowered.is_set():  # the chaos began before the warm-up did: the JVM inherits the priority
                _renice([self._tid], self._nice)
            try:
                self._spark = spark = get_session(self._master)
            finally:
                self._launch_done.set()
            if self._lowered.is_set():  # lowered while the JVM was being launched: it may not have inherited it
                self._was.update(_renice(_driver_threads(), self._nice))
            if self._abandoned.is_set():
                raise RuntimeError("the run ended unverified")
            with tempfile.TemporaryDirectory(prefix="kafka-chaos-warmup-") as tmp:
                verify_run(training_history(Path(tmp) / "run"), spark=spark, write=False)
            self._result = WarmupResult(True, time.monotonic() - started)
        except Exception as exc:  # a warm-up never fails a run; the verify starts Spark itself
            self._result = WarmupResult(False, time.monotonic() - started, f"{type(exc).__name__}: {exc}")
        finally:
            self._launch_done.set()


def _kill_launching_driver(children: list[psutil.Process] | None = None) -> None:
    """SIGKILL the driver JVM this process is launching (its `spark-submit` child, `SparkSubmit` in its command
    line), before pyspark has a handle on it: what an abandoned warm-up leaves when the JVM has not come up in
    time. The JVM would exit by itself once this process is gone (its stdin closes), but only after its shutdown
    hooks, too late for a CLI that promises no process of the run outlives it. `children`: the processes to look
    at instead of all of this process's (a test's stand-ins)."""
    import psutil

    for child in psutil.Process().children(recursive=True) if children is None else children:
        with contextlib.suppress(psutil.Error):
            args = child.cmdline()
            if "org.apache.spark.deploy.SparkSubmit" in args or any(a.endswith("/bin/spark-submit") for a in args):
                child.kill()


def _driver_threads() -> list[int]:
    """The thread ids of the driver JVM this process launched (none: no JVM yet, or one it did not launch)."""
    try:
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        pid = getattr(proc, "pid", None)
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")] if pid else []
    except (ImportError, OSError, ValueError):
        return []


def _renice(tids: list[int], nice: int) -> dict[int, int]:
    """Lower each thread's CPU priority by `nice` (ignoring threads that ended, and platforms without it); return
    the priority each lowered thread had."""
    was: dict[int, int] = {}
    for tid in tids:
        with contextlib.suppress(AttributeError, OSError):
            before = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, min(19, before + nice))
            was[tid] = before
    return was
