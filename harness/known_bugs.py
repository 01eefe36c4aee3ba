"""`python -m harness.known_bugs`: the known-bugs corpus (what `make known-bugs` runs, and `make nightly` reports).

Runs every file of `experiments/known-bugs/` (each a real, fixed Kafka bug, on an affected release and on the
first fixed one: its `matrix:` and `expect:`) with every seed, in one pytest session through the plugin (an
expected failure is a strict xfail, a fixed release must pass), into `<out>/<UTC stamp>/`; then lines up each
bug's affected and fixed run of the first seed on a compare page, and writes `known-bugs.json` and
`known-bugs.html` there and in `<out>/` (`spark_analysis.report.known_bugs`). Prints, per bug and release, the
seeds that failed out of those run, the failing checks and the time from the run's start to its first failing
evidence row, and the corpus's wall time. Exits 0 when every run went as its file expects, 1 when one did not,
2 when the corpus could not run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from spark_analysis.ingest.runinfo import load_run_info
from spark_analysis.report.known_bugs import AFFECTED, FIXED, BugRow, BugRun, bug_rows, collect_bug_runs, write_corpus

CORPUS_DIR = Path("experiments/known-bugs")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness.known_bugs", description=__doc__.splitlines()[0])
    p.add_argument("experiments", nargs="*", default=[str(CORPUS_DIR)],
                   help=f"corpus files or directories (default: {CORPUS_DIR})")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds to run every bug with")
    p.add_argument("--backend", default="auto", choices=("auto", "containers", "process"))
    p.add_argument("--out", default="runs/known-bugs", help="runs go to OUT/<stamp>/, the latest report to OUT/")
    p.add_argument("--spark-master", default=None)
    p.add_argument("--no-compare", action="store_true", help="write no compare pages")
    return p


def pytest_command(args: argparse.Namespace, runs_dir: Path) -> list[str]:
    seeds = list(dict.fromkeys(args.seeds))
    cmd = [sys.executable, "-m", "pytest", *args.experiments, "-p", "no:cacheprovider", "-q", "-rfEX",
           "--chaos-backend", args.backend, "--chaos-seed", ",".join(map(str, seeds)),
           "--chaos-runs-dir", str(runs_dir), f"--junitxml={runs_dir / 'junit-known-bugs.xml'}", "-o", "timeout=900"]
    if args.spark_master:
        cmd += ["--spark-master", args.spark_master]
    return cmd


def run_dirs(root: Path) -> list[Path]:
    """The runs under `root` whose experiment file lies in a `known-bugs` directory (a nightly holds others too)."""
    found = []
    for p in sorted(root.iterdir()):
        if p.is_dir() and (p / "run.json").is_file():
            source = load_run_info(p).raw.get("source")
            if isinstance(source, str) and Path(source).parent.name == CORPUS_DIR.name:
                found.append(p)
    return found


def compare_pairs(runs: Sequence[BugRun], rows: list[BugRow], out: Path, spark_master: str | None) -> list[BugRow]:
    """Each row with the compare page of its bug's affected and fixed run of the lowest seed both have."""
    from dataclasses import replace

    from spark_analysis.compare import compare_runs

    pages: dict[str, str] = {}
    for bug in dict.fromkeys(r.bug for r in runs):
        mine = [r for r in runs if r.bug == bug and r.verified]
        seeds = sorted({r.seed for r in mine if r.role == AFFECTED} & {r.seed for r in mine if r.role == FIXED},
                       key=lambda s: (s is None, s))
        if not seeds:
            continue
        a = next(r for r in mine if r.role == AFFECTED and r.seed == seeds[0])
        b = next(r for r in mine if r.role == FIXED and r.seed == seeds[0])
        try:
            paths = compare_runs(Path(a.run_dir), Path(b.run_dir), out=out / f"compare-{bug}-seed-{seeds[0]}",
                                 spark_master=spark_master)
        except Exception as exc:  # the corpus report is still written without this page
            print(f"known-bugs: no compare page for {bug}: {type(exc).__name__}: {exc}", flush=True)
            continue
        pages[bug] = str(paths.html)
    return [replace(row, compare=pages.get(row.bug)) for row in rows]


def print_rows(rows: Sequence[BugRow], wall_s: float | None) -> None:
    print(f"{'bug':<14} {'release':<8} {'role':<8} {'failed':>7}  {'first failure':>13}  failing checks")
    for r in rows:
        first = f"{r.first_failure_s:.1f}s" if r.first_failure_s is not None else "-"
        extra = f" ({r.unverified} unverified)" if r.unverified else ""
        print(f"{r.bug:<14} {r.release:<8} {r.role:<8} {r.rate:>7}  {first:>13}  "
              f"{', '.join(r.failing_checks) or '-'}{extra}")
    if wall_s is not None:
        print(f"corpus wall time: {wall_s:.0f} s")


def report(runs_dir: Path, out: Path, seeds: Sequence[int], wall_s: float | None, *, spark_master: str | None = None,
           compare: bool = True) -> list[BugRow]:
    """Collect the corpus runs under `runs_dir`, add compare pages, write the report there and into `out`."""
    runs = collect_bug_runs(run_dirs(runs_dir))
    rows = bug_rows(runs)
    if compare:
        rows = compare_pairs(runs, rows, runs_dir, spark_master)
    json_path, html_path = write_corpus(runs_dir, rows, wall_s, seeds)
    if out.resolve() != runs_dir.resolve():
        for path in (json_path, html_path):
            shutil.copyfile(path, out / path.name)
    print_rows(rows, wall_s)
    print(f"known-bugs: {html_path}")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    runs_dir = out / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    runs_dir.mkdir(parents=True, exist_ok=True)
    print(f"known-bugs: seeds {', '.join(map(str, args.seeds))} -> {runs_dir}", flush=True)
    started = time.monotonic()
    code = subprocess.call(pytest_command(args, runs_dir))
    wall = time.monotonic() - started
    if not run_dirs(runs_dir):
        print(f"known-bugs: no run was recorded (pytest exited {code})")
        return 2
    report(runs_dir, out, args.seeds, wall, spark_master=args.spark_master, compare=not args.no_compare)
    return 0 if code == 0 else 1 if code == 1 else 2


if __name__ == "__main__":
    sys.exit(main())
