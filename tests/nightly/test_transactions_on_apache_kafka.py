"""experiments/transactions.yaml on Apache Kafka 3.9 (process backend): a transactional producer (one
transaction in five aborted on purpose) through a kill of its transaction coordinator (the leader of its
`__transaction_state` partition, resolved when the fault fires), an abrupt producer restart and a zombie; a
second one paused past its transaction timeout; read_committed and read_uncommitted groups. Every check passes,
the txn.* checks included, and they judged real data: the zombie was fenced, and so was the paused producer,
which went on in a new session.
Nightly since stop 53 (make test ran 25 min 22 s in a fresh clone on 2 cores with it, over its 25 minutes; 142 s
here). make test keeps transactions on Apache Kafka in
tests/integration/workload/test_transactions_on_apache_kafka.py and the transaction checks on Spark
(tests/integration/spark_analysis/test_txn_checks_spark.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import check_results, events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_transactions_keep_their_promises_through_a_coordinator_kill_on_apache_kafka(tmp_path: Path) -> None:
    apache_kafka()
    code, run_dir = run_shipped("transactions.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    pause, kill = (e for e in evs if e["type"] == "fault.start")
    coordinator = {e["leader"] for e in evs if e["type"] == "partition.state" and e["topic"] == "__transaction_state"
                   and e["t"] < kill["t"]}
    assert kill["description"] == "#1 kill txn_coordinator:payments-tx" and kill["brokers"][0] in coordinator
    ends = [e for e in evs if e["type"] in ("txn.commit", "txn.abort")]
    outcomes = {(e["type"], e["outcome"]) for e in ends}
    assert {("txn.commit", "committed"), ("txn.abort", "aborted")} <= outcomes, outcomes
    after = [e for e in ends if e["type"] == "txn.commit" and e["outcome"] == "committed" and e["t"] > kill["t"]]
    assert after, "no transaction committed after the coordinator was killed"
    isolations = {e.get("isolation") for e in evs if e["type"] == "poll"}
    assert isolations == {"read_committed", "read_uncommitted"}
    zombie = next(e for e in evs if e["type"] == "txn.zombie")
    assert zombie["outcome"] == "fenced", zombie
    _the_paused_producer_was_fenced_and_went_on(evs, pause)
    judged = {cid: c["summary"] for cid, c in check_results(run_dir).items() if cid.startswith("txn.")}
    assert set(judged) == {"txn.aborted_read", "txn.atomic_visibility", "txn.lost_commit", "txn.zombie_fenced",
                           "txn.exactly_once_pipeline", "txn.verification_retriable"}
    assert all("nothing to judge" not in s for cid, s in judged.items() if cid != "txn.exactly_once_pipeline"), judged


def _the_paused_producer_was_fenced_and_went_on(evs: list[dict[str, Any]], pause: dict[str, Any]) -> None:
    """The transaction held open across the pause is fenced once it goes on (after the pause), and ends aborted;
    every fence came after the transaction timeout (a coordinator kill may add some); later transactions commit."""
    assert pause["target"] == ["producer:batch-job"]
    resumed = next(e["t"] for e in evs if e["type"] == "fault.end" and e["fault_id"] == pause["fault_id"])
    began = {e["txn"]: e["t"] for e in evs if e["type"] == "txn.begin" and e["producer"] == "batch-job"}
    fences = [e for e in evs if e["type"] == "txn.fenced"]
    assert fences and all(e["producer"] == "batch-job" and e["open_ms"] >= e["timeout_ms"] == 4000 for e in fences)
    held = [e for e in fences if began[e["txn"]] < resumed <= e["t"]]
    assert held, f"no transaction open during the pause was fenced after it: {fences}"
    ends = {e["txn"]: e for e in evs if e["type"] == "txn.commit" and e["producer"] == "batch-job"}
    assert all((ends[e["txn"]]["outcome"], ends[e["txn"]]["definite"]) == ("aborted", True) for e in fences)
    assert any(e["outcome"] == "committed" and e["t"] > held[0]["t"] for e in ends.values())
