"""experiments/consumer-rebalance.yaml on Apache Kafka 3.9 (process backend): members killed, frozen and
their coordinator killed; every check passes, and every member is assigned again after each fault."""

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
    assigns = [e for e in evs if e["type"] == "assign"]
    for fault in faults:
        assert any(a["t"] > fault["t"] for a in assigns), f"no assignment after {fault['description']}"
