"""experiments/reassignment.yaml end to end on Apache Kafka 3.9 (process backend, real ZooKeeper, the embedded
Toxiproxy, librdkafka, Spark): reassignments and preferred elections under load with broker 3 killed in the
middle. Nightly: in `make test` it ran inside the pytest plugin's session, whose setup then took up to 480 s
beside the suite's other JVMs; the plugin's own tests (tests/nightly/test_pytest_plugin_runs.py) keep a shorter
experiment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.experiment.schema import CHECK_IDS
from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import check_results, events, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]


def test_the_reassignment_experiment_moves_replicas_through_a_broker_loss_and_its_elections_are_judged(
    tmp_path: Path,
) -> None:
    """Both reassignments finish (the second one only after the killed broker is back), through
    AlterPartitionReassignments, and the leader moves they cause are judged by the reassignment rule
    (three partitions on three brokers: one of them is led by broker 3, which the first move drops)."""
    apache_kafka()
    code, run_dir = run_shipped("reassignment.yaml", tmp_path)
    info = run_info(run_dir)
    assert info["status"] == "completed" and info["broker"]["flavour"] == "apache-kafka"
    checks = check_results(run_dir)
    assert set(checks) == {c for c in CHECK_IDS if not c.startswith("quorum.")}  # quorum.*: KRaft only
    evs = events(run_dir)
    ends = {e["op_id"]: e for e in evs if e["type"] == "op.end"}
    starts = {e["op_id"]: e for e in evs if e["type"] == "op.start"}
    assert sorted(starts) == sorted(ends) == [0, 2, 4, 5]
    assert {e["outcome"] for e in ends.values()} == {"done"}, ends
    assert {ends[i]["via"] for i in (0, 2)} == {"AlterPartitionReassignments"}
    killed = next(e for e in evs if e["type"] == "fault.start" and e["kind"] == "kill")
    # The broker died in the middle: the move began before the kill and finished only after broker 3 had
    # registered in ZooKeeper again (fault.end is stamped when the heal's readiness wait is over, which may
    # be later than the move's end, so the order is read from broker 3's own registration).
    back = [e["t"] for e in evs if e["type"] == "broker.up" and e["src"] == "zk" and e["broker"] == 3
            and e["t"] > killed["t"]]
    assert back, "broker 3 never registered again after the kill"
    assert starts[2]["t"] < killed["t"] < back[0] < ends[2]["t"]
    assert {(r["partition"], tuple(r["replicas"])) for r in ends[2]["results"]} == {(0, (3, 1)), (1, (2, 3))}
    # What the preferred elections answered depends on when broker 3 caught up (the answers themselves are
    # pinned down in tests/integration/operations/test_kafka_operator.py).
    print("preferred elections answered:", [ends[i]["results"] for i in (4, 5)])
    assert checks["operation.completes"]["metrics"]["by_outcome"] == {"done": 4}
    print(f"elections: {checks['partition.election_conforms']['metrics']}")
    assert checks["partition.election_conforms"]["metrics"]["by_strategy"].get("reassign", 0) >= 1
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["status"] == "pass" and code == 0, {c: s["summary"] for c, s in checks.items()
                                                        if s["status"] != "pass"}
