"""`python -m harness.nightly`: the nightly suite (what `make nightly` runs).

Runs every experiment with every seed in one pytest session (through the pytest plugin, so that
one Spark session verifies every run) into `<out>/<UTC date>/`, with one JUnit file for the night
(`junit-seed-1-2-3.xml`), then builds the trend page over every night under `<out>`
(`kafka-chaos report --trend`), and, when the night ran the known-bugs corpus (`experiments/known-bugs/`),
its `known-bugs.html` (`harness.known_bugs`). The long live tests of `tests/nightly/` run in the same session.
Exits with the worst result:
0 when every run passed, 1 when one failed, 2 when the suite itself could not run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

LONG_TESTS = Path(__file__).resolve().parents[1] / "tests" / "nightly"
"""Long live tests (`tests/nightly/`, collected only with KAFKA_CHAOS_NIGHTLY=1) the night runs with its experiments."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness.nightly", description=__doc__.splitlines()[0])
    p.add_argument("experiments", nargs="*", default=["experiments/"],
                   help="experiment files or directories (default: experiments/)")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds to run each experiment with")
    p.add_argument("--backend", default="auto", choices=("auto", "containers", "process"))
    p.add_argument("--out", default="runs/nightly", help="nights go to OUT/<date>/, the trend page to OUT/")
    p.add_argument("--night", default=None, help="the night's directory name (default: today's UTC date)")
    p.add_argument("--spark-master", default=None)
    p.add_argument("--no-long-tests", dest="long_tests", action="store_false",
                   help="leave out tests/nightly/ (the long live tests: many seeds of one experiment)")
    return p


def pytest_command(args: argparse.Namespace, night_dir: Path) -> list[str]:
    """The one pytest run of the night: every experiment with every seed, JUnit XML next to the runs."""
    seeds = list(dict.fromkeys(args.seeds))
    junit = night_dir / f"junit-seed-{'-'.join(map(str, seeds))}.xml"
    long_tests = [str(LONG_TESTS)] if args.long_tests and LONG_TESTS.is_dir() else []
    cmd = [sys.executable, "-m", "pytest", *args.experiments, *long_tests, "-p", "no:cacheprovider", "-q", "-rfE",
           "--chaos-backend", args.backend, "--chaos-seed", ",".join(map(str, seeds)),
           "--chaos-runs-dir", str(night_dir), f"--junitxml={junit}", "-o", "timeout=900"]
    if args.spark_master:
        cmd += ["--spark-master", args.spark_master]
    return cmd


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    night_dir = out / (args.night or datetime.now(UTC).strftime("%Y-%m-%d"))
    night_dir.mkdir(parents=True, exist_ok=True)
    print(f"nightly: seeds {', '.join(map(str, args.seeds))} -> {night_dir}", flush=True)
    code = subprocess.call(pytest_command(args, night_dir), env={**os.environ, "KAFKA_CHAOS_NIGHTLY": "1"})
    worst = 1 if code == 1 else (0 if code == 0 else 2)
    from harness.cli import main as cli_main

    trend_args = ["report", "--trend", str(out)]
    if args.spark_master:
        trend_args += ["--spark-master", args.spark_master]
    trend_code = cli_main(trend_args)
    if trend_code == 2:
        worst = 2
    from harness.known_bugs import report, run_dirs

    if run_dirs(night_dir):  # the known-bugs corpus ran with the night's experiments: its page too
        report(night_dir, out, args.seeds, None, spark_master=args.spark_master)
    print(f"nightly: {'all runs passed' if worst == 0 else 'some runs failed' if worst == 1 else 'suite error'}; "
          f"trend page: {out / 'trend.html'}")
    return worst


if __name__ == "__main__":
    sys.exit(main())
