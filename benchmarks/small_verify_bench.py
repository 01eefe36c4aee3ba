"""Benchmark: verifying a small run (issue 23), and where its time goes.

Measured alternately, ROUNDS times each, in fresh processes (cold) on the same machine:
- bare: a `SparkSession` start (the verifiers' configuration, `get_session`) plus one trivial job, with the
  driver's class-data-sharing archive where `make spark-archive` built it, and without it;
- cold verify: the same session start plus `verify_run` of the history (Parquet conversion included).
Then, in one process with a warm session: `verify_run` PASSES times, each with a fresh conversion. The warm
figures are the third pass and the steady one (median of the last three), with the last pass's breakdown from
the verdict (conversion, each check, timeline) plus the reports, and how many Spark jobs it ran.

    .venv/bin/python benchmarks/small_verify_bench.py [--events 18000 | --run RUN_DIR] [--rounds 3] [--no-copy]
        [--workdir DIR]

Goals (issue 23): cold <= 1.3x bare; warm <= 3 s.

Last measured (2026-11-24, session 17, quiet, 2 cores), with the driver's class-data-sharing archive: the recorded
transactions run (`--run`, 5k events) bare 4.0 s (7.3 s without the archive), cold 13.8 s = 3.4x bare, 1.9x bare
without the archive; warm third pass 3.76 s, steady 2.94 s (23 jobs). Demo-size synthetic run: bare 4.4 s
(7.1 s), cold 13.5 s; warm steady 2.46-3.12 s. Session 16 (no archive): synthetic cold 2.27x bare, transactions
2.72x. The cold goal is not met: the JVM's first time through Spark's query path costs about 6 s above the warm
checks whichever query comes first (docs/performance.md, "Verification speed").
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.spark_checks_bench import build_copy, generate  # noqa: E402
from spark_analysis.session.jvm_archive import usable_archive  # noqa: E402
from spark_analysis.session.spark_session import driver_java_options  # noqa: E402

BARE = """
import time, sys
t0 = time.perf_counter()
from spark_analysis.session.spark_session import get_session
spark = get_session("local[2]", None if sys.argv[1] == "archive" else [])
spark.range(1).count()
print(time.perf_counter() - t0)
"""
COLD = """
import time, sys, shutil
from pathlib import Path
t0 = time.perf_counter()
from spark_analysis.session.spark_session import get_session
from spark_analysis.verify import verify_run
spark = get_session("local[2]")
run = Path(sys.argv[1])
shutil.rmtree(run / ".analysis", ignore_errors=True)
verify_run(run, spark=spark)
print(time.perf_counter() - t0)
"""
PASSES = 6
WARM = """
import json, sys, shutil, time
from pathlib import Path
from spark_analysis.session.spark_session import get_session
from spark_analysis.verify import verify_run
spark = get_session("local[2]")
run = Path(sys.argv[1])
PASSES = int(sys.argv[2])
tracker = spark.sparkContext.statusTracker()
last_job = lambda: max(tracker.getJobIdsForGroup(None), default=-1)  # the store keeps only the latest jobs
passes = []
for _ in range(PASSES):  # the first passes warm the JVM (JIT, class loading); it keeps speeding up for a few more
    shutil.rmtree(run / ".analysis", ignore_errors=True)
    jobs0 = last_job()
    t0 = time.perf_counter()
    verdict = verify_run(run, spark=spark)
    passes.append(time.perf_counter() - t0)
    jobs = last_job() - jobs0
a = verdict.analysis
print(json.dumps({"load": a["load_s"], "checks": a["checks_s"], "rest": a["total_s"] - a["load_s"] - a["checks_s"],
                  "per_check": {c.check_id: c.duration_s for c in verdict.checks}, "jobs": jobs, "passes": passes}))
"""


def _python(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{proc.stderr[-3000:]}")
    return proc.stdout.strip().splitlines()[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=18_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--no-copy", action="store_true", help="verify without the recorder's columnar copy")
    p.add_argument("--run", type=Path, default=None, help="a recorded run directory instead of a synthetic history")
    args = p.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="small-verify-bench-"))
    if args.run is not None:  # a recorded run, copied so that its own .analysis stays as it is
        run = work / args.run.name
        shutil.copytree(args.run, run, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".analysis"))
        if args.no_copy:
            shutil.rmtree(run / "history.columns", ignore_errors=True)
    else:
        run = work / f"run{args.events}"
        generate(run, args.events)
    if not args.no_copy and not (run / "history.columns").is_dir():  # as the recorder leaves a run
        print(f"columnar copy built in {build_copy(run / 'history.jsonl'):.2f} s (during the run, by the recorder)")
    with open(run / "history.jsonl", "rb") as fh:
        lines = sum(1 for _ in fh)
    print(f"history: {lines} events ({(run / 'history.jsonl').stat().st_size / 1e6:.1f} MB), Spark local[2]")
    archive = usable_archive(driver_java_options())
    print(f"driver class-data-sharing archive: {archive or 'none (make spark-archive builds it)'}")
    bare: list[float] = []
    plain: list[float] = []
    cold: list[float] = []
    for i in range(args.rounds):
        bare.append(float(_python(BARE, "archive")))
        plain.append(float(_python(BARE, "plain")))
        cold.append(float(_python(COLD, str(run))))
        print(f"  round {i + 1}: bare session + trivial job {bare[-1]:.2f} s (without the archive {plain[-1]:.2f} s), "
              f"cold verify {cold[-1]:.2f} s")
    b, c, pl = statistics.median(bare), statistics.median(cold), statistics.median(plain)
    warm = json.loads(_python(WARM, str(run), str(PASSES)))
    print(f"bare (median) {b:.2f} s; cold verify (median) {c:.2f} s = {c / b:.2f}x bare (goal <= 1.3x); "
          f"{c / pl:.2f}x a bare session without the archive ({pl:.2f} s)")
    passes = warm["passes"]
    steady = statistics.median(passes[-3:])
    print(f"warm verify, pass by pass in one session: {', '.join(f'{p:.2f}' for p in passes)} s")
    print(f"warm verify {passes[2]:.2f} s at the third pass, {steady:.2f} s steady (median of the last three; "
          f"goal <= 3 s); the last = conversion {warm['load']:.2f} s + checks {warm['checks']:.2f} s + timeline "
          f"{warm['rest']:.2f} s + reports; {warm['jobs']} Spark jobs")
    for cid, s in sorted(warm["per_check"].items(), key=lambda x: -x[1])[:10]:
        print(f"  {s:6.2f} s  {cid}")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
