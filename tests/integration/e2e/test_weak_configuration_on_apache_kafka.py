"""A weak configuration on Apache Kafka 3.9 (issue 34): experiments/weak-durability.yaml runs min.insync.replicas 1,
unclean elections on and a producer without idempotence through a correlated partition and a broker kill. Kafka
then does what that configuration allows: it elects outside the ISR and truncates acknowledged writes away, stores
retried batches twice and out of key order. The run must pass, every such anomaly reported as permitted by the
setting that allows it (docs/kafka-behaviour.md §9 "Promised when"), and no check may fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import check_results, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

WEAK_SETTINGS = ("unclean.leader.election.enable=true", "enable.idempotence=false", "acks=", "min.insync.replicas")
"""What a permitted anomaly of this experiment may name: the settings the experiment weakens."""


def test_a_weak_configuration_passes_with_each_anomaly_permitted_by_the_setting_that_allows_it(
    tmp_path: Path,
) -> None:
    """No false fail: whatever Kafka loses, duplicates or reorders here, its configuration allowed, and the
    verdict says which setting allowed each anomaly instead of failing the run."""
    apache_kafka()
    code, run_dir = run_shipped("weak-durability.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    results = check_results(run_dir)
    permitted = {cid: c for cid, c in results.items() if c["permitted"]}
    for cid, c in sorted(permitted.items()):
        print(f"{cid}: {c['summary']}")
        assert all(any(s in p for s in WEAK_SETTINGS) for p in c["permitted"]), (cid, c["permitted"])
        assert "permitted by" in c["summary"] or "allowed by" in c["summary"], (cid, c["summary"])
    unclean = results["partition.unclean_only_when_enabled"]
    if unclean["metrics"].get("unclean_elections", 0):
        assert unclean["permitted"] == ["unclean.leader.election.enable=true"], unclean
