"""`python -m spark_analysis RUN_DIR [RUN_DIR ...] [--spark-master URL]`: verify runs offline.

Exit status (the worst over the given runs): 0 every run passed; 1 some check failed;
3 no failure but some check could not conclude (unknown); 2 usage error or an unreadable run
directory. `--render-only` re-renders report.html/junit.xml from existing verdict.json files
(no Spark) and, with `--index FILE`, writes a page listing all given runs.
Works the same under `spark-submit -m spark_analysis` style launches: an active session is reused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import HarnessError

EXIT = {"pass": 0, "fail": 1, "unknown": 3}
EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis", description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--spark-master", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--render-only", action="store_true", help="re-render reports from verdict.json")
    parser.add_argument("--index", type=Path, default=None, help="also write an index page of all runs")
    args = parser.parse_args(argv)
    for run_dir in args.run_dirs:
        if not run_dir.is_dir():
            print(f"error: {run_dir} is not a run directory", file=sys.stderr)
            return EXIT_USAGE
    try:
        if args.render_only:
            from spark_analysis.report import render_runs
            from spark_analysis.verdict import read_verdict

            render_runs(args.run_dirs, args.index)
            statuses = [read_verdict(d).status for d in args.run_dirs]
        else:
            from spark_analysis.report.html import render_index
            from spark_analysis.verify import verify_run

            statuses = []
            pairs = []
            for run_dir in args.run_dirs:
                verdict = verify_run(run_dir, spark_master=args.spark_master)
                statuses.append(verdict.status)
                pairs.append((run_dir.name, verdict))
                print(f"{run_dir}: {verdict.status} ({verdict.title})")
                for r in verdict.checks:
                    flag = " (allowed)" if r.allowed and r.status != "pass" else ""
                    print(f"  {r.status:7s} {r.check_id}{flag}: {r.summary}")
            if args.index is not None:
                args.index.write_text(render_index(pairs), encoding="utf-8")
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return max(EXIT[s] for s in statuses) if "fail" not in statuses else EXIT["fail"]


if __name__ == "__main__":
    sys.exit(main())
