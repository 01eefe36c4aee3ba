"""Benchmark: `build_trend` over many synthetic runs (hand-made verdict.json in the real format).

Writes RUNS/<night>/<run>/{run.json, verdict.json} for --runs runs spread over --nights nights
(19 checks each, ~85% passing, SLO checks with --samples samples each, a 200 KB timeline blob
per verdict so the files weigh what real ones do), then times `build_trend` twice on one Spark
session (first = cold JIT) and prints runs/s and the output sizes.

    .venv/bin/python benchmarks/trend_bench.py [--runs 300] [--nights 10] [--samples 40] [--master local[2]]

Target: a nightly of a few hundred runs aggregates in well under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.experiment.schema import CHECK_IDS  # noqa: E402

SLO = ("slo.controller_failover", "slo.partition_unavailable", "slo.rebalance")


def _verdict(rng: random.Random, started: str, seed: int, samples: int) -> dict[str, object]:
    checks = []
    for check_id in CHECK_IDS:
        roll = rng.random()
        status = "fail" if roll < 0.01 else "unknown" if roll < 0.02 else "pass"
        metrics: dict[str, object] = {}
        if check_id in SLO:
            values = sorted(round(rng.lognormvariate(0, 0.8), 3) for _ in range(rng.randint(1, samples)))
            metrics = {"distribution": {"count": len(values), "max": values[-1]}, "samples": values,
                       "open_at_end": 0}
        checks.append({"id": check_id, "family": check_id.split(".")[0], "status": status, "allowed": False,
                       "summary": f"{check_id} {status}", "fault": None, "evidence": [], "metrics": metrics,
                       "duration_s": 0.1})
    status = "fail" if any(c["status"] == "fail" for c in checks) else (
        "unknown" if any(c["status"] == "unknown" for c in checks) else "pass")
    return {"format": 1, "status": status, "checks": checks, "timeline": {"blob": "x" * 200_000},
            "run": {"experiment": f"exp{seed % 5}", "seed": seed, "backend": "process", "started": started,
                    "title": "reference broker 0.1.0", "broker": {"flavour": "reference", "version": "0.1.0",
                                                                  "bugs": []}}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--nights", type=int, default=10)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    rng = random.Random(1)
    work = Path(tempfile.mkdtemp(prefix="trend-bench-"))
    try:
        for i in range(args.runs):
            night = i % args.nights + 1
            started = f"2026-01-{night:02d}T{i % 24:02d}:00:00+00:00"
            run_dir = work / f"2026-01-{night:02d}" / f"run-{i:05d}"
            run_dir.mkdir(parents=True)
            run = {"experiment": f"exp{i % 5}", "source": f"experiments/exp{i % 5}.yaml", "seed": i,
                   "backend": "process", "started": started, "broker": {"flavour": "reference", "version": "0.1.0"}}
            (run_dir / "run.json").write_text(json.dumps(run))
            (run_dir / "verdict.json").write_text(json.dumps(_verdict(rng, started, i, args.samples)))
        size_mb = sum(p.stat().st_size for p in work.rglob("verdict.json")) / 1e6
        print(f"{args.runs} runs over {args.nights} nights, verdict files {size_mb:.1f} MB")

        from spark_analysis.session.spark_session import get_session
        from spark_analysis.trend import build_trend

        t0 = time.perf_counter()
        spark = get_session(args.master)
        print(f"spark session ({args.master}): {time.perf_counter() - t0:.1f} s")
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            result = build_trend(work, spark=spark)
            took = time.perf_counter() - t0
            print(f"build_trend {label}: {took:.1f} s ({args.runs / took:.0f} runs/s); "
                  f"trend.html {result.html.stat().st_size / 1e3:.0f} KB, "
                  f"trend.json {result.json.stat().st_size / 1e3:.0f} KB, "
                  f"{result.failed_runs} runs not passing")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
