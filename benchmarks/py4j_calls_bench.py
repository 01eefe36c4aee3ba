"""Benchmark: a warm verify's JVM round trips (py4j calls) and time, before and after a change, in one run
(issue 39, item 3: "fewer round trips in a warm verify").

Checks out `--base` (default e7ebe09: before the widest plans became SQL text) into a temporary git worktree. For
the base and for this tree, alternately (`--rounds` times each), a fresh process starts one Spark session and
verifies each recorded run (tests/data/recorded/, `--runs`) `--passes` times, writing nothing; it counts every py4j
call the driver makes (`GatewayClient.send_command`, the releases of Java objects included) and the Spark jobs
(the scheduler's next job id), per pass. The figures of a run are its last pass (the JIT warms over the first
ones). Prints, per recorded run: warm seconds, py4j calls and jobs at the base and here, and the ratios; then
the sums. Counts are exact and repeatable; seconds vary by about 20% on a shared 2-core machine.

    .venv/bin/python benchmarks/py4j_calls_bench.py [--base REV] [--rounds 2] [--passes 4] [--runs NAME ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("reference-clean-group", "reference-clean-controller", "zk-3.9.2-weak-durability-permitted",
        "kraft-4.4.0-preferred-election-refused")

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
tree, passes, names = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
sys.path.insert(0, str(tree))
from py4j import java_gateway
calls = [0]
send = java_gateway.GatewayClient.send_command
def counted(self, command, *args, **kwargs):
    calls[0] += 1
    return send(self, command, *args, **kwargs)
java_gateway.GatewayClient.send_command = counted
from spark_analysis.session.spark_session import get_session
from spark_analysis.verify import verify_run
from tests.fixtures.recorded import recorded_runs
spark = get_session("local[2]")
scheduler = spark.sparkContext._jsc.sc().dagScheduler()
def next_job():
    n = scheduler.nextJobId()  # an AtomicInteger, which py4j hands over as a number
    return n if isinstance(n, int) else n.get()
by_name = {r.name: r for r in recorded_runs()}
tmp = Path(tempfile.mkdtemp(prefix="py4j-bench-"))
out = {}
for p in range(passes):
    for name in names:
        run_dir = by_name[name].unpack(tmp / f"{name}-{p}")
        jobs0 = next_job()
        calls[0] = 0
        t0 = time.perf_counter()
        verdict = verify_run(run_dir, spark=spark, write=False)
        seconds = time.perf_counter() - t0
        n = calls[0]
        jobs = next_job() - jobs0
        out[name] = {"seconds": seconds, "calls": n, "jobs": jobs, "status": verdict.status}
print("RESULT " + json.dumps(out))
"""


def measure(tree: Path, passes: int, names: list[str]) -> dict[str, dict[str, float]]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(passes), *names], cwd=tree,
                          capture_output=True, text=True, check=False)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"the measuring process in {tree} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return dict(json.loads(line[len("RESULT "):]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", default="e7ebe09")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--passes", type=int, default=4)
    p.add_argument("--runs", nargs="+", default=list(RUNS))
    ns = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="py4j-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), ns.base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            results: dict[str, list[dict[str, dict[str, float]]]] = {"base": [], "here": []}
            for r in range(ns.rounds):
                for label, tree in (("base", base), ("here", ROOT)):
                    got = measure(tree, ns.passes, ns.runs)
                    results[label].append(got)
                    print(f"round {r + 1} {label}: " + ", ".join(
                        f"{n} {v['seconds']:.2f}s {v['calls']} calls {v['jobs']} jobs" for n, v in got.items()),
                        flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    print(f"\nwarm verify, last of {ns.passes} passes, median of {ns.rounds} rounds (base {ns.base} | here):")
    print(f"{'recorded run':<42} {'seconds':>15} {'ratio':>6} {'py4j calls':>15} {'ratio':>6} {'jobs':>9}")
    total = {k: {"base": 0.0, "here": 0.0} for k in ("seconds", "calls")}
    for name in ns.runs:
        med = {label: {k: statistics.median(x[name][k] for x in results[label]) for k in ("seconds", "calls", "jobs")}
               for label in results}
        for k in total:
            for label in results:
                total[k][label] += med[label][k]
        print(f"{name:<42} {med['base']['seconds']:6.2f} | {med['here']['seconds']:6.2f} "
              f"{med['here']['seconds'] / med['base']['seconds']:6.2f} {med['base']['calls']:6.0f} | "
              f"{med['here']['calls']:6.0f} {med['here']['calls'] / med['base']['calls']:6.2f} "
              f"{med['base']['jobs']:3.0f} | {med['here']['jobs']:3.0f}")
    print(f"{'all':<42} {total['seconds']['base']:6.2f} | {total['seconds']['here']:6.2f} "
          f"{total['seconds']['here'] / total['seconds']['base']:6.2f} {total['calls']['base']:6.0f} | "
          f"{total['calls']['here']:6.0f} {total['calls']['here'] / total['calls']['base']:6.2f}")


if __name__ == "__main__":
    main()
