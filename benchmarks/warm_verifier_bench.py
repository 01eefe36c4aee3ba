"""Benchmark: the verifier warmed in the background during `kafka-chaos run` (issue 39), against a cold verify.

Runs one experiment `--pairs` times with the warm-up and as often without (`--no-warmup`), alternately (the order
flips every pair, the seed changes every pair and is the same within one), on the process backend. Prints, per run
and as medians with the warm/cold ratio:
- the verdict's delay: verdict.json's write time less history.jsonl's (the end of the recorded run), what a user
  waits between "run completed" and the verdict;
- how long the warm-up took (the CLI's line);
- what the warm-up may cost the experiment itself: the worst controller failover (`slo.controller_failover`), the
  ack latency p99 (the history's `ack` events), and the write stall per fault (`slo.write_unavailable`, each
  fault's worst partition, averaged over the faults).

    .venv/bin/python benchmarks/warm_verifier_bench.py [--experiment experiments/controller-failover.yaml]
        [--pairs 3] [--seed 42] [--workdir DIR]

Goal (issue 39): the verdict within seconds of the run's end, at no cost to the experiment above the noise.

Last measured (2026-11-28, controller-failover, 4 pairs, seeds 42-45, 2 quiet cores): the verdict 7.3 s after the
history warm, 23.8 s cold (0.31x); failover 0.91x, ack p99 1.05x, write stall per fault 0.87x (within the noise);
the warm-up itself 58-75 s, lowered at chaos. docs/performance.md ("Verdict latency") has the rest.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv" / "bin" / "kafka-chaos"


@dataclass(frozen=True)
class Run:
    warm: bool
    seed: int
    status: str
    verdict_delay_s: float
    wall_s: float
    failover_s: float | None
    ack_p99_ms: float | None
    stall_per_fault_s: float | None
    warmup_s: float | None = None
    """How long the warm-up took, as the CLI said ("verifier warmed in the background in X s")."""


def _checks(verdict: dict[str, object]) -> dict[str, dict[str, object]]:
    return {str(c["id"]): c for c in verdict["checks"]}  # type: ignore[attr-defined, index]


def _ack_p99(history: Path) -> float | None:
    latencies = []
    with history.open(encoding="utf-8") as lines:
        for line in lines:
            if '"type":"ack"' in line or '"type": "ack"' in line:
                value = json.loads(line).get("latency_ms")
                if isinstance(value, (int, float)):
                    latencies.append(float(value))
    if len(latencies) < 2:
        return None
    return statistics.quantiles(latencies, n=100)[98]


def measure(run_dir: Path, warm: bool, seed: int, wall_s: float, warmup_s: float | None = None) -> Run:
    verdict_path, history = run_dir / "verdict.json", run_dir / "history.jsonl"
    verdict = json.loads(verdict_path.read_text())
    checks = _checks(verdict)
    failover = checks.get("slo.controller_failover", {}).get("metrics") or {}
    samples = failover.get("samples") or []  # type: ignore[union-attr]
    stalls = (checks.get("slo.write_unavailable", {}).get("metrics") or {}).get("by_fault") or {}  # type: ignore[union-attr]
    per_fault = [max(w["duration"] for w in windows) for windows in stalls.values() if windows]
    return Run(warm, seed, str(verdict["status"]), verdict_path.stat().st_mtime - history.stat().st_mtime, wall_s,
               max(samples) if samples else None, _ack_p99(history),
               statistics.mean(per_fault) if per_fault else None, warmup_s)


def run_once(experiment: Path, seed: int, warm: bool, runs_dir: Path) -> Run:
    args = [str(CLI), "run", str(experiment), "--seed", str(seed), "--backend", "process",
            "--runs-dir", str(runs_dir)] + ([] if warm else ["--no-warmup"])
    started = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
    wall = time.monotonic() - started
    dirs = [line.split(": ", 1)[1].strip() for line in proc.stdout.splitlines() if line.startswith("run completed: ")]
    if not dirs:
        sys.exit(f"no completed run (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    said = re.search(r"verifier warmed in the background in ([0-9.]+) s", proc.stdout)
    return measure(Path(dirs[-1]), warm, seed, wall, float(said.group(1)) if said else None)


def _fmt(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.2f}{unit}"


def _median(runs: list[Run], field: str) -> float | None:
    values = [getattr(r, field) for r in runs if getattr(r, field) is not None]
    return statistics.median(values) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", type=Path, default=ROOT / "experiments" / "controller-failover.yaml")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="warm-verifier-bench-"))
    runs: list[Run] = []
    for pair in range(args.pairs):
        seed = args.seed + pair
        for warm in ((True, False) if pair % 2 == 0 else (False, True)):
            run = run_once(args.experiment, seed, warm, work / ("warm" if warm else "cold"))
            runs.append(run)
            kind = "warm" if warm else "cold"
            print(f"{kind} seed {seed}: {run.status:<7} verdict {run.verdict_delay_s:5.1f}s after "
                  f"the history (command {run.wall_s:5.1f}s); failover {_fmt(run.failover_s, 's')}, ack p99 "
                  f"{_fmt(run.ack_p99_ms, 'ms')}, write stall per fault {_fmt(run.stall_per_fault_s, 's')}"
                  + (f"; warm-up {run.warmup_s:.1f}s" if run.warmup_s is not None else ""), flush=True)
    print(f"\n{args.experiment.name}, {args.pairs} pairs, medians (warm / cold = ratio):")
    for field, unit in (("verdict_delay_s", "s"), ("failover_s", "s"), ("ack_p99_ms", "ms"),
                        ("stall_per_fault_s", "s"), ("wall_s", "s")):
        warm_m = _median([r for r in runs if r.warm], field)
        cold_m = _median([r for r in runs if not r.warm], field)
        ratio = f"{warm_m / cold_m:.2f}x" if warm_m is not None and cold_m else "-"
        print(f"  {field:<18} {_fmt(warm_m, unit):>10} / {_fmt(cold_m, unit):>10} = {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
