"""Benchmark: the 5M-event checks before and after a change, measured in one run (issue 35: "the 5M-event
benchmark must not get slower; its figures printed before and after, in the same run").

Checks out `--base` (default ab28995: before the bulk checks got one judge each and the reference broker retired)
into a temporary git worktree, then runs `benchmarks/spark_checks_bench.py --no-10m --no-reference` from the base
and from this tree, alternately, `--rounds` times each, on the same generated history (`--workdir`; the generator
is the same at both commits). Prints each run's I/O floor, checks and whole path, then the medians and the
after/before ratios.

    .venv/bin/python benchmarks/spark_checks_before_after.py [--base REV] [--rounds 2] [--events 5000000]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = {
    "floor": re.compile(r"I/O floor \(JSON load \+ count\):\s+([\d.]+)s"),
    "checks": re.compile(r"checks on Parquet:\s+([\d.]+)s"),
    "whole": re.compile(r"whole path with the recorder's copy ([\d.]+)s"),
}


def run_bench(label: str, tree: Path, events: int, workdir: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, str(tree / "benchmarks" / "spark_checks_bench.py"), "--events",
                           str(events), "--no-10m", "--no-reference", "--workdir", str(workdir)], cwd=tree,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"spark_checks_bench.py in {tree} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    found = {k: float(m.group(1)) for k, rx in FIGURES.items() if (m := rx.search(proc.stdout))}
    if len(found) != len(FIGURES):
        raise SystemExit(f"spark_checks_bench.py in {tree} printed no {sorted(set(FIGURES) - set(found))}:\n"
                         f"{proc.stdout[-3000:]}")
    statuses = re.search(r"statuses: (.*)", proc.stdout)
    print(f"  {label:<7} floor {found['floor']:5.1f}s  checks {found['checks']:5.1f}s  whole path "
          f"{found['whole']:5.1f}s  ({statuses.group(1) if statuses else '?'})", flush=True)
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", default="ab28995")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--events", type=int, default=5_000_000)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/kafka-chaos-bench"))
    args = p.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="kc-before-") as tmp:
        base_tree = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), rev], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
            for r in range(args.rounds):
                print(f"round {r + 1}/{args.rounds} (before = {rev}, after = {head} and the working tree)", flush=True)
                runs["before"].append(run_bench("before", base_tree, args.events, args.workdir))
                runs["after"].append(run_bench("after", ROOT, args.events, args.workdir))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, check=False,
                           capture_output=True)
    print(f"\n{args.events:,} events, medians of {args.rounds} runs each, alternated:")
    print(f"{'figure':<12} {'before':>8} {'after':>8} {'after/before':>13}")
    for k in FIGURES:
        b = statistics.median(x[k] for x in runs["before"])
        a = statistics.median(x[k] for x in runs["after"])
        print(f"{k:<12} {b:7.1f}s {a:7.1f}s {a / b:12.2f}x")
    for when in ("before", "after"):
        ratio = statistics.median(x["whole"] / x["floor"] for x in runs[when])
        print(f"whole path / floor, {when}: {ratio:.2f}x (goal <= 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
