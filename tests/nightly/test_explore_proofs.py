"""Explore's proofs on Apache Kafka (issue 40, item 7), nightly. Two of them: plain explore finds KAFKA-15489 on
3.6.2 from the bug's fault kinds (below), and, on Apache Kafka 3.9, a weak configuration (RF 3,
`min.insync.replicas` 1, unclean elections on, an acks=all producer and a batch consumer:
tests/data/explore/weak-isr.yaml, whose `explore:` block names the faults that can leave a lone leader and kill it:
kills, partitions, correlated losses), `kafka-chaos explore --find delivery.lost_write` finds a schedule that loses
acknowledged writes (an anomaly the configuration permits: the question is a trade-off, not a bug) and shrinks it to
at most 2 faults, within a 30-minute budget; and `kafka-chaos run minimal.yaml` loses writes again. Five explore
seeds; the goal is 4 of 5, so each seed is its own case. `make test` runs a cheap form
(experiments/weak-durability.yaml's own schedule, one run, no shrink) in
tests/integration/e2e/test_weak_configuration_on_apache_kafka.py.

Why acks=all with a batch consumer: `delivery.lost_write` judges acks=all writes only (an acks=1 write promises
nothing past the leader, so one never polled is counted, not lost: the file's first form, with acks=1, could never
be found), and a consumer keeping up reads what a lone leader acknowledged before an unclean election truncates it
(the offsets then hold two values); one fetching every 10 s has not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.experiment import load_experiment

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(2700)]

ROOT = Path(__file__).resolve().parents[2]
WEAK = ROOT / "tests" / "data" / "explore" / "weak-isr.yaml"


@pytest.mark.xfail(strict=False, reason=(
    "the goal is 4 of 5 seeds, each seed its own case, so one seed may miss: on 161bb1e (Apache Kafka 3.9.2, the "
    "controller pinned to its broker, no fault shrunk below 8 s) seeds 1, 4 and 5 found lost writes within 168 s and "
    "handed back 2 faults that lost writes in 3, 2 and 3 of 3 runs; seeds 2 and 3 did on edeab39 and 067c9bc. "
    "docs/apache-kafka.md, 'Explore on Apache Kafka'"))
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_explore_finds_lost_writes_a_weak_configuration_permits_and_shrinks_them_to_two_faults(
    tmp_path: Path, seed: int,
) -> None:
    out = tmp_path / "explore"
    code = main(["explore", str(WEAK), "--find", "delivery.lost_write", "--budget", "30m",
                 "--seed", str(seed), "--backend", "process", "--out", str(out)])
    report = json.loads((out / "explore.json").read_text())
    print(f"seed {seed}: exit {code}, {len(report['tried'])} runs, found {report['found']}, minimal "
          f"{report['minimal']}, local minimum {report['local_minimum']}")
    assert code == 1 and report["found"], f"no lost write in {len(report['tried'])} runs"
    minimal = load_experiment(out / "minimal.yaml")
    assert len(minimal.schedule) + len(minimal.operations) <= 2, report["minimal"]
    again = tmp_path / "again"
    main(["run", str(out / "minimal.yaml"), "--backend", "process", "--runs-dir", str(again)])
    (run_dir,) = list(again.iterdir())
    checks = {c["id"]: c for c in json.loads((run_dir / "verdict.json").read_text())["checks"]}
    assert checks["delivery.lost_write"]["permitted"] or checks["delivery.lost_write"]["status"] == "fail", checks[
        "delivery.lost_write"]["summary"]


KNOWN_BUG = ROOT / "experiments" / "known-bugs" / "KAFKA-15489.yaml"


@pytest.mark.xfail(strict=False, reason=(
    "the goal is 4 of 5 seeds, each seed its own case, so one seed may miss: on edeab39 (2026-12-03, Apache Kafka "
    "3.6.2) all 5 found quorum.leader_resigns and shrank it to 1 fault, and every minimal.yaml failed it 3 of 3. "
    "docs/apache-kafka.md, 'Explore on Apache Kafka'"))
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_plain_explore_finds_kafka_15489_on_its_affected_release_from_the_bugs_fault_kinds(
    tmp_path: Path, seed: int,
) -> None:
    """KAFKA-15489 (a KRaft quorum leader cut off from the voters stays leader; Apache Kafka 3.6.2): explore draws
    from the bug's own fault kinds (cutting a voter, or whichever voter leads, off from the other voters; killing or
    pausing the controller; killing a broker), not its schedule, finds `quorum.leader_resigns` failing (the corpus
    file's `expect:` is dropped: a known failure is what explore looks for), shrinks it, and `kafka-chaos run
    minimal.yaml` fails the check again."""
    out = tmp_path / "explore"
    code = main(["explore", str(KNOWN_BUG), "--variant", "kafka=3.6.2", "--faults",
                 "quorum_partition,controller_kill,kill", "--budget", "30m", "--seed", str(seed),
                 "--backend", "process", "--out", str(out)])
    report = json.loads((out / "explore.json").read_text())
    print(f"seed {seed}: exit {code}, {len(report['tried'])} runs, found {report['target_checks']}, minimal "
          f"{report['minimal']}")
    assert code == 1 and "quorum.leader_resigns" in report["target_checks"], report["target_checks"]
    again = tmp_path / "again"
    main(["run", str(out / "minimal.yaml"), "--backend", "process", "--runs-dir", str(again)])
    (run_dir,) = list(again.iterdir())
    checks = {c["id"]: c for c in json.loads((run_dir / "verdict.json").read_text())["checks"]}
    assert checks["quorum.leader_resigns"]["status"] == "fail", checks["quorum.leader_resigns"]["summary"]
