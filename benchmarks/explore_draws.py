"""Which of an explore seed's draws have the shape lost writes mostly need on a weak configuration (issue 40,
tests/data/explore/weak-isr.yaml), read off the draws alone (pure: no Kafka): a partition that leaves one broker
alone with ZooKeeper (so the ISRs shrink to it and it acknowledges acks=all writes alone), and a kill that can hit
that broker (it by id, or a role it holds then: the controller, a leader, a coordinator), starting at least 3 s into
the partition and lasting past its end (so an out-of-sync replica is elected uncleanly). A heuristic: runs decide,
and a draw of another shape can lose writes too. It prints, for seeds 1-5, the draws of that shape among the first
20, and over seeds 100-299 how many have one within their first 10.

    .venv/bin/python benchmarks/explore_draws.py tests/data/explore/weak-isr.yaml
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from harness.experiment import load_experiment_text
from harness.explore.session import Exploration
from harness.faults.generator import Entry, seconds


def _alone_with_zookeeper(entry: Entry) -> int | None:
    """The broker a partition leaves alone with ZooKeeper, if it leaves one."""
    if entry.get("fault") != "partition":
        return None
    side = next((g for g in entry.get("groups", ()) if "zookeeper:1" in g), [])
    brokers = [int(m.split(":")[1]) for m in side if m.startswith("broker:")]
    return brokers[0] if len(brokers) == 1 else None


def lone_leader_killed(schedule: Sequence[Entry]) -> bool:
    """Whether `schedule` has the shape (the module's docstring)."""
    for cut in schedule:
        lone = _alone_with_zookeeper(cut)
        if lone is None:
            continue
        start, end = seconds(cut["at"]), seconds(cut["at"]) + seconds(cut["duration"])
        for kill in (e for e in schedule if e.get("fault") == "kill"):
            target = str(kill["target"])
            hits = target == f"broker:{lone}" or target.split(":")[0] in ("controller", "leader", "coordinator")
            if hits and start + 3 < seconds(kill["at"]) < end < seconds(kill["at"]) + seconds(kill["duration"]):
                return True
    return False


def shaped(path: Path, seeds: range, draws: int) -> dict[int, list[int]]:
    text = path.read_text(encoding="utf-8")
    exp = load_experiment_text(text, str(path))
    found: dict[int, list[int]] = {}
    for seed in seeds:
        exploration = Exploration.of(exp, text, seed, None)
        found[seed] = [i for i in range(draws) if lone_leader_killed(exploration.draw(i)[0])]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    args = parser.parse_args()
    for seed, indices in shaped(args.file, range(1, 6), 20).items():
        print(f"seed {seed}: {len(indices)} of the first 20 draws have the shape: {indices}")
    many = shaped(args.file, range(100, 300), 10)
    share = sum(bool(v) for v in many.values()) / len(many)
    print(f"seeds 100-299: {share:.0%} have one within their first 10 draws")


if __name__ == "__main__":
    main()
