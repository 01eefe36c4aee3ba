"""experiments/exactly-once-pipeline.yaml on Apache Kafka 3.9 (process backend): a read-process-write pipeline
(read_committed input, one output record per input record, offsets committed in the same transaction) through
a kill of its own transaction coordinator and the isolation of the upstream producer's. Every check passes, and
the history shows each committed input in the output exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import check_results, events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_the_pipeline_writes_every_committed_input_exactly_once_through_coordinator_failures(tmp_path: Path) -> None:
    apache_kafka()
    code, run_dir = run_shipped("exactly-once-pipeline.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    kills = [e["description"] for e in evs if e["type"] == "fault.start"]
    assert kills == ["#0 kill txn_coordinator:enrich-tx", "#1 isolate txn_coordinator:payments-tx"]
    outcome = {(e["producer"], e["txn"]): e["outcome"] for e in evs if e["type"] in ("txn.commit", "txn.abort")}
    committed_inputs = {e["value"] for e in evs if e["type"] == "ack" and e["producer"] == "payments-api"
                        and outcome.get(("payments-api", e["txn"])) == "committed"}
    outputs = Counter(e["input_value"] for e in evs if e["type"] == "ack" and e["producer"] == "enrich"
                      and outcome.get(("enrich", e["txn"])) == "committed")
    assert committed_inputs and set(outputs) == committed_inputs and set(outputs.values()) == {1}
    summary = check_results(run_dir)["txn.exactly_once_pipeline"]["summary"]
    assert summary.startswith(f"pipeline enrich processed each of {len(committed_inputs)} inputs"), summary
