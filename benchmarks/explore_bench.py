"""Figures of `kafka-chaos explore` runs (issue 40), read from their output directories and printed: per exploration,
how many schedules ran and how fast (schedules per hour, on one reused cluster or a fresh one each,
`--fresh-cluster`: run both on the same file and seed to compare), when the sought anomaly was first seen and after
how many draws, the shrink (steps kept of those tried, the reruns they took), and the fault count before and
after shrinking.

    .venv/bin/python benchmarks/explore_bench.py runs/explore-weak-isr [more explore dirs...]

The times come from `explore.json` (`ended_s` of each run); for a report without them (written before they were
recorded) from the run directories: the first run's start to each verdict's write.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any


def _ended(doc: dict[str, Any]) -> list[float | None]:
    """Seconds from the exploration's start to each run's verdict."""
    if all("ended_s" in t for t in doc["tried"]):
        return [float(t["ended_s"]) for t in doc["tried"]]
    dirs = [Path(t["outcome"]["run_dir"]) if t["outcome"].get("run_dir") else None for t in doc["tried"]]
    starts = [datetime.fromisoformat(json.loads((d / "run.json").read_text())["started"]).timestamp()
              for d in dirs if d is not None and (d / "run.json").is_file()]
    if not starts:
        return [None for _ in dirs]
    t0 = min(starts)
    return [(d / "verdict.json").stat().st_mtime - t0 if d is not None and (d / "verdict.json").is_file() else None
            for d in dirs]


def figures(out: Path) -> dict[str, Any]:
    doc = json.loads((out / "explore.json").read_text())
    ended = _ended(doc)
    known = [e for e in ended if e is not None]
    wall = max(known) if known else None
    draws = [i for i, t in enumerate(doc["tried"]) if re.fullmatch(r"draw \d+", t["purpose"])]  # not "(run 2)"
    hit = draws[-1] if doc["found"] and draws else None  # explore stops drawing at the first confirmed hit
    first = doc["tried"][hit] if hit is not None else None
    minimal = doc.get("minimal") or {}
    steps = [s for s in doc["shrink"] if not s.get("recheck")]  # a recheck runs a kept step again after the shrink
    return {
        "experiment": doc["experiment"], "seed": doc["seed"],
        "target": [doc["find"]] if doc.get("find") else doc.get("target_checks"),
        "runs": len(doc["tried"]), "wall_s": round(wall, 1) if wall else None,
        "schedules_per_hour": round(len(known) / wall * 3600, 1) if wall else None,
        "found": doc["found"], "draws_to_first": len(draws) if doc["found"] else None,
        "first_seen_s": round(ended[hit], 1) if hit is not None and ended[hit] is not None else None,
        "shrink_steps": len(steps), "shrink_kept": sum(1 for s in steps if s["kept"]),
        "shrink_reruns": sum(len(s["outcomes"]) for s in steps), "recheck": doc.get("recheck"),
        "faults_before": len(first["schedule"]) if first else None,
        "faults_after": len(minimal.get("schedule") or []) if doc["found"] else None,
        "local_minimum": doc["local_minimum"], "stopped": doc.get("stopped"), "clusters": doc.get("clusters") or 0,
        "unconfirmed": doc.get("unconfirmed") or [], "confirmed": doc.get("confirmed"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dirs", nargs="+", type=Path)
    for out in p.parse_args().dirs:
        f = figures(out)
        print(f"{out}: {f['experiment']} seed {f['seed']}, looking for {', '.join(f['target'] or ['any failure'])}")
        print(f"  {f['runs']} runs in {f['wall_s']} s: {f['schedules_per_hour']} schedules/hour ("
              + (f"{f['clusters']} cluster(s) reused" if f["clusters"] else "a fresh cluster each") + ")")
        if f["found"]:
            print(f"  found after {f['draws_to_first']} draw(s), {f['first_seen_s']} s in; shrink: "
                  f"{f['shrink_kept']} of {f['shrink_steps']} step(s) kept in {f['shrink_reruns']} rerun(s); faults "
                  f"{f['faults_before']} -> {f['faults_after']}"
                  + ("" if f["local_minimum"] else " (not a local minimum: the budget ended first)"))
            if f["recheck"]:
                print(f"  the handed-back schedule run again on fresh clusters: {f['recheck']}")
            if f["confirmed"] is False:
                print("  not confirmed: the budget ended while the drawn failure was run again")
        else:
            print("  nothing found within the budget")
        if f["unconfirmed"]:
            print(f"  failed once, then not often enough (not handed back): {'; '.join(f['unconfirmed'])}")
        if f["stopped"]:
            print(f"  stopped: {f['stopped']}")


if __name__ == "__main__":
    main()
