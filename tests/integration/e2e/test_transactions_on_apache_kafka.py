"""experiments/transactions.yaml on Apache Kafka 3.9 (process backend): a transactional producer (one
transaction in five aborted on purpose) through a kill of its transaction coordinator (the leader of its
`__transaction_state` partition, resolved when the fault fires), an abrupt producer restart and a zombie;
read_committed and read_uncommitted groups. Every check passes, the txn.* checks included, and they judged real
data: the zombie was fenced."""

from __future__ import annotations

from pathlib import Path

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
    kill = next(e for e in evs if e["type"] == "fault.start")
    coordinator = {e["leader"] for e in evs if e["type"] == "partition.state" and e["topic"] == "__transaction_state"
                   and e["t"] < kill["t"]}
    assert kill["description"] == "#0 kill txn_coordinator:payments-tx" and kill["brokers"][0] in coordinator
    ends = [e for e in evs if e["type"] in ("txn.commit", "txn.abort")]
    outcomes = {(e["type"], e["outcome"]) for e in ends}
    assert {("txn.commit", "committed"), ("txn.abort", "aborted")} <= outcomes, outcomes
    after = [e for e in ends if e["type"] == "txn.commit" and e["outcome"] == "committed" and e["t"] > kill["t"]]
    assert after, "no transaction committed after the coordinator was killed"
    isolations = {e.get("isolation") for e in evs if e["type"] == "poll"}
    assert isolations == {"read_committed", "read_uncommitted"}
    zombie = next(e for e in evs if e["type"] == "txn.zombie")
    assert zombie["outcome"] == "fenced", zombie
    judged = {cid: c["summary"] for cid, c in check_results(run_dir).items() if cid.startswith("txn.")}
    assert set(judged) == {"txn.aborted_read", "txn.atomic_visibility", "txn.lost_commit", "txn.zombie_fenced",
                           "txn.exactly_once_pipeline"}
    assert all("nothing to judge" not in s for cid, s in judged.items() if cid != "txn.exactly_once_pipeline"), judged
