"""experiments/consumer-scaling.yaml on Apache Kafka 3.9 (process backend): two groups (eager range and
cooperative-sticky) grow from 2 to 4 members, shrink cleanly and abruptly, and grow again under load, with a
broker stopped gracefully meanwhile; every check passes, and every scaling shows in the history (new members
assigned partitions, leaving ones gone).
Nightly since stop 53: make test on 2 cores ran over its 25 minutes (26.8 min for the parallel part in a fresh
clone, 31 min on CI), and this was among its heaviest tests (96-131 s). make test keeps the group workloads on
Apache Kafka (tests/integration/workload/) and the assignment model's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_consumer_scaling_passes_on_apache_kafka_and_each_scaling_moves_partitions(tmp_path: Path) -> None:
    apache_kafka()
    code, run_dir = run_shipped("consumer-scaling.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    ends = {e["op_id"]: e for e in evs if e["type"] == "op.end"}
    assert [e["outcome"] for e in ends.values()] == ["done"] * 5, ends
    assigned = {e["consumer"] for e in evs if e["type"] == "assign" and e["partitions"]}
    assert {"ingest/2", "ingest/3", "audit/2", "audit/3", "audit/4"} <= assigned, sorted(assigned)
