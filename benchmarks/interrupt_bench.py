"""How fast a run stops when it is told to, and how fast its processes go when its harness is killed (issue 36):

  1. SIGTERM mid-chaos -> `kafka-chaos run` exited, with nothing of the run left running (goal <= 10 s);
  2. SIGKILL of the harness alone mid-chaos -> the last of its processes (ZooKeeper, brokers, Toxiproxy, the
     isolated observer) gone, with no later run: the lifeline's work (goal <= 5 s);

each --rounds times on a quiet machine and again beside a second cluster (another `kafka-chaos run` of the same
experiment, started again whenever one ends, for the whole measurement). Runs use the process backend and
Apache Kafka; the signal goes when the run's history shows its first fault started.

Usage: .venv/bin/python benchmarks/interrupt_bench.py [--experiment experiments/controller-failover.yaml]
       [--rounds 3] [--no-beside]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.history.jsonl import read_history  # noqa: E402

START_TIMEOUT_S = 300.0
GONE_TIMEOUT_S = 120.0


def _started(runs: Path) -> Path | None:
    """The run directory once its history shows a fault started."""
    for run_dir in runs.iterdir() if runs.is_dir() else ():
        history = run_dir / "history.jsonl"
        if history.exists() and any(e["type"] == "fault.start" for e in read_history(history).events):
            return run_dir
    return None


def start(experiment: Path, runs: Path, log: Path, *, seed: int = 1) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "harness.cli", "run", str(experiment), "--backend", "process", "--runs-dir",
            str(runs), "--no-verify", "--seed", str(seed)]
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=ROOT)


def wait_chaos(proc: subprocess.Popen[bytes], runs: Path, log: Path) -> Path:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended before its first fault:\n{log.read_text(errors='replace')[-3000:]}")
        run_dir = _started(runs)
        if run_dir is not None:
            return run_dir
        time.sleep(0.1)
    raise RuntimeError(f"no fault started within {START_TIMEOUT_S:g}s:\n{log.read_text(errors='replace')[-3000:]}")


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _cluster_processes(pid: int) -> list[psutil.Process]:
    """The run's processes, without the lifeline reaper (it lives as long as the harness, by design, and leaves
    once the harness is gone: harness/cluster/reaper.py)."""
    return [c for c in _descendants(pid) if "harness.cluster.reaper" not in " ".join(c.cmdline())]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def in_chaos(experiment: Path, work: Path, name: str, n: int) -> tuple[subprocess.Popen[bytes], list[psutil.Process]]:
    """A run (seed `n`) once its first fault started, and its processes (the reaper aside)."""
    runs, log = work / f"{name}-{n}", work / f"{name}-{n}.log"
    proc = start(experiment, runs, log, seed=n)
    wait_chaos(proc, runs, log)
    return proc, _cluster_processes(proc.pid)


def sigterm_round(experiment: Path, work: Path, n: int) -> float:
    proc, children = in_chaos(experiment, work, "term", n)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(GONE_TIMEOUT_S)
    took = time.monotonic() - sent
    left = [c.pid for c in children if _alive(c)]
    if proc.returncode != 2 or left:
        raise RuntimeError(f"SIGTERM round {n}: rc {proc.returncode}, left running {left}")
    return took


def sigkill_round(experiment: Path, work: Path, n: int) -> float:
    proc, children = in_chaos(experiment, work, "kill", n)
    sent = time.monotonic()
    proc.kill()  # the harness alone: its children run in process groups of their own
    proc.wait()
    deadline = sent + GONE_TIMEOUT_S
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.01)
    took = time.monotonic() - sent
    left = [c.pid for c in children if _alive(c)]
    for c in left:
        with contextlib.suppress(OSError):
            os.killpg(c, signal.SIGKILL)
    if left:
        raise RuntimeError(f"SIGKILL round {n}: still running after {GONE_TIMEOUT_S:g}s: {left}")
    return took


def _figures(name: str, values: list[float], goal: float) -> None:
    print(f"  {name:<40} median {statistics.median(values):5.2f} s  max {max(values):5.2f} s  "
          f"({', '.join(f'{v:.2f}' for v in values)})  goal <= {goal:g} s", flush=True)


def measure(experiment: Path, work: Path, rounds: int, label: str) -> None:
    terms = [sigterm_round(experiment, work, n) for n in range(1, rounds + 1)]
    kills = [sigkill_round(experiment, work, n) for n in range(1, rounds + 1)]
    print(f"{label}:")
    _figures("SIGTERM mid-chaos -> exit", terms, 10.0)
    _figures("SIGKILL of the harness -> last child gone", kills, 5.0)


class Beside:
    """A second `kafka-chaos run` of the experiment for as long as the block lasts: started again whenever one
    ends, so the measurement never runs on a quiet machine; SIGTERMed on leaving."""

    def __init__(self, experiment: Path, work: Path) -> None:
        self.experiment, self.work = experiment, work
        self.runs = 0
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._loop, name="beside", daemon=True)

    def __enter__(self) -> Beside:
        self._thread.start()
        first = self.work / "1"
        deadline = time.monotonic() + START_TIMEOUT_S
        while _started(first) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.runs += 1
            runs = self.work / str(self.runs)
            self._proc = start(self.experiment, runs, self.work / f"{self.runs}.log", seed=90 + self.runs)
            self._proc.wait()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        self._thread.join(GONE_TIMEOUT_S)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--experiment", type=Path, default=ROOT / "experiments" / "controller-failover.yaml")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-beside", dest="beside", action="store_false")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="interrupt-bench-") as tmp:
        work = Path(tmp)
        measure(args.experiment, work / "quiet", args.rounds, "quiet machine")
        if args.beside:
            with Beside(args.experiment, work / "other") as beside:
                measure(args.experiment, work / "beside", args.rounds, "beside a second cluster in its chaos")
            print(f"  (the second cluster ran {beside.runs} runs of {args.experiment.name} meanwhile)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
