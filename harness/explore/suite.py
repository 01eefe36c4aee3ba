"""`make explore` (`python -m harness.explore.suite`): explore each experiment for a budget, one after another, and
file what each found. Each gets `<out>/<name>/` (`explore.json`, `explore.html`, `minimal.yaml` when it found a
failure, its runs); `<out>/explore-suite.json` lists them: found or not, the failing checks, the minimal schedule's
size. A matrix experiment is explored on its first variant. Exit code: 1 when any exploration found a failure, 2
when one could not run or was stopped, else 0."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.cli import main as cli
from harness.experiment import load_experiments
from harness.explore.command import EXIT_ERROR, EXIT_FOUND, EXIT_NONE

SUITE_FILE = "explore-suite.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.explore.suite", description=__doc__)
    p.add_argument("experiments", nargs="+")
    p.add_argument("--budget", default="10m", help="each experiment's budget (default 10m)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--backend", default="process")
    p.add_argument("--out", default="runs/explore")
    args = p.parse_args(argv)
    out = Path(args.out)
    entries, codes = [], []
    for file in args.experiments:
        first = load_experiments(file)[0]
        target = out / first.name
        cmd = ["explore", file, "--budget", args.budget, "--backend", args.backend, "--out", str(target)]
        cmd += ["--variant", first.variant] if first.variant else []
        cmd += ["--seed", str(args.seed)] if args.seed is not None else []
        started = time.monotonic()
        code = cli(cmd)
        codes.append(code)
        report = target / "explore.json"
        doc = json.loads(report.read_text()) if report.is_file() else {}
        entries.append({"experiment": file, "variant": first.variant, "exit": code, "found": doc.get("found"),
                        "target_checks": doc.get("target_checks", []), "runs": len(doc.get("tried", [])),
                        "minimal_faults": len((doc.get("minimal") or {}).get("schedule", [])) or None,
                        "stopped": doc.get("stopped"), "wall_s": round(time.monotonic() - started, 1),
                        "dir": str(target)})
        print(f"== {file}: exit {code}, found {doc.get('found')} {doc.get('target_checks', [])}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / SUITE_FILE).write_text(json.dumps({"budget": args.budget, "explored": entries}, indent=1) + "\n")
    print(f"wrote {out / SUITE_FILE}")
    if EXIT_ERROR in codes:
        return EXIT_ERROR
    return EXIT_FOUND if EXIT_FOUND in codes else EXIT_NONE


if __name__ == "__main__":
    sys.exit(main())
