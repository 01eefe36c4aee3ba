"""Figures of ZooKeeper-to-KRaft migrations (issue 41), read from run directories of experiments with a
`migrate_to_kraft` and printed: per step (controllers, brokers, copy, brokers_kraft, controllers_kraft) its wall time,
the faults that started in it, the longest write stall (the longest time a partition went without an acknowledged
write, counted from the last acknowledgement before the step) and the longest read stall (the same for the consumer
group's polls), then the whole migration. Run the experiment without faults and with them and pass both directories
to compare:

    .venv/bin/kafka-chaos run experiments/zk-to-kraft-migration.yaml --backend process --runs-dir runs/m
    .venv/bin/python benchmarks/migration_bench.py runs/m/zk-to-kraft-migration-*

The stalls are this script's gap measure over the step's window, not the SLO checks' (`slo.write_unavailable` also
counts writes still pending); the wall times are the steps' own `op.end` elapsed times.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def _events(run_dir: Path) -> list[dict[str, Any]]:
    with (run_dir / "history.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _longest_gap(times: dict[tuple[str, int], list[float]], start: float, end: float) -> tuple[float, str]:
    """The longest time within [start, end] a partition went without an event, from its last one before `start`."""
    worst, where = 0.0, "-"
    for (topic, partition), ts in times.items():
        before = [t for t in ts if t <= start]
        inside = [t for t in ts if start < t <= end]
        edges = [before[-1] if before else start, *inside, end]
        gap = max(b - a for a, b in itertools.pairwise(edges))
        if gap > worst:
            worst, where = gap, f"{topic}/{partition}"
    return worst, where


def figures(run_dir: Path) -> list[str]:
    evs = _events(run_dir)
    acks: dict[tuple[str, int], list[float]] = defaultdict(list)
    polls: dict[tuple[str, int], list[float]] = defaultdict(list)
    for e in evs:
        if e["type"] in ("ack", "poll") and e.get("partition") is not None:
            (acks if e["type"] == "ack" else polls)[(e["topic"], int(e["partition"]))].append(float(e["t"]))
    starts = {e["step"]: float(e["t"]) for e in evs if e["type"] == "op.start" and e.get("step")}
    ends = {e["step"]: e for e in evs if e["type"] == "op.end" and e.get("step")}
    faults = [(float(e["t"]), e["description"]) for e in evs if e["type"] == "fault.start" and e["kind"] != "stop"]
    status = json.loads((run_dir / "verdict.json").read_text()).get("status", "?") if (
        run_dir / "verdict.json").is_file() else "not verified"
    out = [f"{run_dir.name}: verdict {status}; faults besides the restarts: {len(faults)}",
           f"  {'step':<18} {'outcome':<8} {'wall':>7} {'write stall':>20} {'read stall':>20}  faults in it"]
    total = 0.0
    for step, t0 in starts.items():
        end = ends.get(step)
        t1 = float(end["t"]) if end else t0
        total += float(end["elapsed_s"]) if end else 0.0
        w, wp = _longest_gap(acks, t0, t1)
        r, rp = _longest_gap(polls, t0, t1)
        inside = [d.split(" ", 1)[1] for t, d in faults if t0 <= t < t1]
        outcome, elapsed = (end or {}).get("outcome", "open"), float((end or {}).get("elapsed_s", 0))
        out.append(f"  {step:<18} {outcome:<8} {elapsed:>6.1f}s {w:>7.2f}s {wp:>12} {r:>7.2f}s {rp:>12}  "
                   + ("; ".join(inside) or "-"))
    if starts:
        t0, t1 = min(starts.values()), max(float(e["t"]) for e in ends.values()) if ends else min(starts.values())
        w, wp = _longest_gap(acks, t0, t1)
        r, rp = _longest_gap(polls, t0, t1)
        out.append(f"  {'whole migration':<18} {'':<8} {total:>6.1f}s {w:>7.2f}s {wp:>12} {r:>7.2f}s {rp:>12}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path)
    for run_dir in parser.parse_args().run_dirs:
        print("\n".join(figures(run_dir)))


if __name__ == "__main__":
    main()
