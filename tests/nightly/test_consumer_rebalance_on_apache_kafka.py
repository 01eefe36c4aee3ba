"""experiments/consumer-rebalance.yaml on Apache Kafka 3.9 (process backend): members killed, frozen and
their coordinator killed; every check passes. A member's loss (killed: session timeout; frozen: poll interval)
moves its partitions to the others; the coordinator's loss leaves the group Stable under the new coordinator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_consumer_rebalance_passes_on_apache_kafka_with_a_rebalance_per_fault(tmp_path: Path) -> None:
    apache_kafka()
    code, run_dir = run_shipped("consumer-rebalance.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    faults = [e for e in evs if e["type"] == "fault.start"]
    assert [f["kind"] for f in faults] == ["kill", "pause", "kill"]
    member_faults, coordinator_kill = faults[:2], faults[2]
    for fault in member_faults:
        end = next(e["t"] for e in evs if e["type"] == "fault.end" and e["fault_id"] == fault["fault_id"])
        moved = [e for e in evs if e["type"] == "assign" and fault["t"] < e["t"] < end and e["partitions"]]
        assert moved, f"no member got partitions while {fault['description']} was in force"
    assert any(e["type"] == "group.state" and e["state"] == "Stable" and e["t"] > coordinator_kill["t"]
               for e in evs), f"group not seen Stable after {coordinator_kill['description']}"
