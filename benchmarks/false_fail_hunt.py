"""The false-fail hunt: multi-fault schedules nobody wrote, over safe configurations, on Apache Kafka; every failing
check is printed with its evidence and must be explained.

Draws N schedules per mode from a seed (`harness.faults.generator`: correlated losses, partitions that put
ZooKeeper or a voter on the minority side, pauses past the session timeout, isolations, link latency, reassignments
and preferred elections during faults), writes each into a safe experiment (3 brokers, RF 3, min.insync.replicas 2,
unclean elections off, an idempotent acks=all producer, a consumer group) and runs it with `kafka-chaos run` on
Apache Kafka 3.9 (ZooKeeper) and the newest 4.x (KRaft). On a safe configuration every check's rule is a promise,
so each failure is a Kafka bug, a checker misreading or a harness problem; `--classified FILE` (JSON: a list of
{"schedule", "check", "class", "note"}, class one of kafka-bug, misreading, environment) explains them, and the
hunt prints the failures no entry explains. Exit 0 when none is unexplained.

Usage: .venv/bin/python benchmarks/false_fail_hunt.py [--modes zookeeper kraft] [--schedules 30] [--seed 1]
       [--out runs/hunt] [--classified FILE] [--duration 45] [--reverify] [--rerun SCHEDULE ...]

`--reverify` verifies the runs of an earlier hunt in --out again (after a checker misreading was fixed), so the
final figure is every schedule's history judged by today's checks; `--rerun` runs named schedules again (after an
environment problem was fixed), keeping the earlier result. benchmarks/false_fail_hunt_classified.json classifies
every failure found so far (`check` "*" covers every failure of a schedule).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.errors import ValidationError  # noqa: E402
from harness.experiment import load_experiment_text  # noqa: E402
from harness.faults.generator import KRAFT_KINDS, ZK_KINDS, FaultSpace, draw_schedule  # noqa: E402

SAFE: dict[str, Any] = {
    "cluster": {"brokers": 3, "broker_config": {
        "min.insync.replicas": 2, "unclean.leader.election.enable": False, "replica.lag.time.max.ms": 10000,
        "group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 3}},
    "topics": [{"name": "orders", "partitions": 3, "replication_factor": 3}],
    "workload": {"producers": [{"topic": "orders", "rate": 100, "acks": "all", "idempotence": True, "keys": 20}],
                 "consumers": [{"group": "billing", "topics": ["orders"], "members": 2, "strategy": "range",
                                "commit": "sync"}]},
    "steady_state": ["controller_present", "all_partitions_led"],
    "steady_timeout": "90s",
    "drain": "15s",
    "verify": {"checks": ["all"]},
}
CLASSES = ("kafka-bug", "misreading", "environment")


def experiment(mode: str, index: int, seed: int, duration: float) -> str:
    """The YAML of schedule `index` of `mode`, drawn (again until the loader accepts it) from the seed."""
    rng = random.Random(f"hunt/{seed}/{mode}/{index}")
    kraft = mode == "kraft"
    space = FaultSpace(kinds=KRAFT_KINDS if kraft else ZK_KINDS, window=(3.0, duration - 16.0))
    for attempt in range(50):
        doc = json.loads(json.dumps(SAFE))
        doc["name"] = f"hunt-{mode}-{index:02d}"
        doc["seed"] = seed * 1000 + index
        if kraft:
            doc["cluster"].update({"mode": "kraft", "controllers": 3})
        else:
            doc["cluster"].update({"zookeepers": 1})
            doc["cluster"]["broker_config"]["zookeeper.session.timeout.ms"] = 6000
        doc["schedule"] = draw_schedule(rng, space, 3, (101, 102, 103), kraft)
        doc["duration"] = f"{duration:g}s"
        text = yaml.safe_dump(doc, sort_keys=False)
        try:
            load_experiment_text(text, f"<hunt {mode} {index} attempt {attempt}>")
        except ValidationError:
            continue
        return text
    raise RuntimeError(f"no valid schedule for {mode} #{index} in 50 draws")


def run_one(path: Path, runs: Path) -> Path | None:
    before = set(runs.iterdir()) if runs.is_dir() else set()
    subprocess.run([sys.executable, "-m", "harness.cli", "run", str(path), "--backend", "process", "--runs-dir",
                    str(runs)], cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    made = sorted(set(runs.iterdir()) - before) if runs.is_dir() else []
    return made[-1] if made else None


def failures(run_dir: Path | None) -> list[dict[str, Any]]:
    if run_dir is None or not (run_dir / "verdict.json").is_file():
        return [{"check": "run", "status": "unknown", "summary": "no verdict (the run did not finish)"}]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    out = [{"check": c["id"], "status": c["status"], "summary": c["summary"],
            "evidence": (c.get("evidence") or [])[:3]} for c in verdict["checks"] if c["status"] != "pass"]
    if verdict.get("incomplete"):
        out.append({"check": "run.complete", "status": "unknown", "summary": verdict["incomplete"]["reason"]})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", nargs="+", default=["zookeeper", "kraft"], choices=("zookeeper", "kraft"))
    p.add_argument("--schedules", type=int, default=30)
    p.add_argument("--first", type=int, default=0, help="the first schedule index (resume a hunt)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=45.0)
    p.add_argument("--out", default="runs/hunt")
    p.add_argument("--classified", default=None)
    p.add_argument("--rerun", nargs="*", default=[], metavar="SCHEDULE",
                   help="run these schedules again (after an environment fix); the earlier result is kept under "
                        "'earlier' in hunt.json")
    p.add_argument("--reverify", action="store_true",
                   help="verify the hunt's recorded runs again with today's checks (after fixing a misreading) "
                        "instead of running schedules")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    known = json.loads(Path(args.classified).read_text()) if args.classified else []
    explained = {(k["schedule"], k["check"]): k for k in known}  # check "*": every failure of that schedule
    results: list[dict[str, Any]] = []
    results_file = out / "hunt.json"
    if results_file.is_file():
        results = json.loads(results_file.read_text())
    earlier = {r["schedule"]: r for r in results if r["schedule"] in args.rerun}
    results = [r for r in results if r["schedule"] not in earlier]
    started = time.monotonic()
    if args.reverify:
        for r in results:
            if r["run_dir"] and r["run_dir"] != "None":
                subprocess.run([sys.executable, "-m", "harness.cli", "verify", r["run_dir"]], cwd=ROOT,
                               capture_output=True, text=True, timeout=1200, check=False)
                r["failures"] = failures(Path(r["run_dir"]))
        results_file.write_text(json.dumps(results, indent=1, default=str))
    for mode in args.modes:
        for i in range(args.first, args.first + args.schedules):
            name = f"hunt-{mode}-{i:02d}"
            if args.reverify or any(r["schedule"] == name for r in results):
                continue
            path = out / f"{name}.yaml"
            path.write_text(experiment(mode, i, args.seed, args.duration))
            t0 = time.monotonic()
            run_dir = run_one(path, out / "runs")
            found = failures(run_dir)
            results.append({"schedule": name, "mode": mode, "run_dir": str(run_dir), "failures": found,
                            "wall_s": round(time.monotonic() - t0, 1),
                            **({"earlier": earlier[name]} if name in earlier else {})})
            results_file.write_text(json.dumps(results, indent=1, default=str))
            print(f"{name}: {len(found)} failing" + "".join(f"\n  {f['status']} {f['check']}: {f['summary'][:240]}"
                                                            for f in found), flush=True)
    print("\n(failures: of the final runs; a class counts every failure classified, earlier runs of a rerun "
          "schedule included)")
    print("mode        schedules  failures  kafka-bug  misreading  environment  unexplained")
    unexplained_total = 0

    def entry(schedule: str, check: str) -> dict[str, Any]:
        return dict(explained.get((schedule, check)) or explained.get((schedule, "*")) or {})

    for mode in args.modes:
        mine = [r for r in results if r["mode"] == mode]
        fails = [(r["schedule"], f) for r in mine for f in r["failures"]]
        earlier_fails = [(r["schedule"], f) for r in mine for f in (r.get("earlier") or {}).get("failures", ())]
        classes = [entry(s, f["check"]).get("class") for s, f in fails + earlier_fails]
        by = {c: sum(1 for k in classes if k == c) for c in CLASSES}
        unexplained = [(s, f) for s, f in fails if not entry(s, f["check"])]
        unexplained_total += len(unexplained)
        print(f"{mode:<11} {len(mine):>9}  {len(fails):>8}  {by['kafka-bug']:>9}  {by['misreading']:>10}  "
              f"{by['environment']:>11}  {len(unexplained):>11}")
        for s, f in unexplained:
            print(f"  unexplained: {s} {f['check']}: {f['summary'][:200]}")
    print(f"wall time: {time.monotonic() - started:.0f} s; results: {results_file}")
    return 0 if unexplained_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
