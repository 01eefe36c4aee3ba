"""experiments/leader-election.yaml, variant mode=zookeeper, on Apache Kafka 3.9 (process backend): every check
passes, and the graceful stop of a partition's leader moves its leadership before the broker's registration
vanishes (controlled shutdown, KAFKA-BEHAVIOUR.md), as observed in ZooKeeper; the kill of a broker that leads
nothing takes it out of the ISRs it was in, which `partition.offline_replica_leaves_isr` judged. (The KRaft variant:
tests/nightly/test_kraft_leader_election_on_apache_kafka.py.) Nightly: in `make test`, offline elections are judged
on Apache Kafka by the weak-configuration run, and graceful stops that move leaders first by the
upgrade's three (tests/integration/e2e/test_upgrade_on_apache_kafka.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import check_results, events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_leader_election_passes_on_apache_kafka_and_a_stop_moves_leadership_first(tmp_path: Path) -> None:
    apache_kafka()
    code, run_dir = run_shipped("leader-election.yaml", tmp_path, "--variant", "mode=zookeeper")
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    stop = next(e for e in evs if e["type"] == "fault.start" and e["kind"] == "stop")
    victim = stop["brokers"][0]
    zk = [e for e in evs if e["src"] == "zk"]
    gone = next(e["t"] for e in zk if e["type"] == "broker.down" and e["broker"] == victim
                and e["t"] >= stop["t"])
    led = {(e["topic"], e["partition"]) for e in zk if e["type"] == "partition.state" and e["t"] < gone
           and e["leader"] == victim}
    moved = {(e["topic"], e["partition"]) for e in zk if e["type"] == "partition.state"
             and gone - 30 <= e["t"] <= gone and e["leader"] not in (victim, -1)}
    assert led and led <= moved, f"led by {victim}: {sorted(led)}, moved before it deregistered: {sorted(moved)}"
    results = check_results(run_dir)
    assert results["partition.controlled_shutdown_moves_leaders"]["metrics"]["leaders_moved"] >= len(led)
    idle_kill = next(e for e in evs if e["type"] in ("fault.start", "fault.skipped") and e["fault_id"] == 1)
    if idle_kill["type"] == "fault.skipped":  # the killed leader was not back yet: there was no idle broker to kill
        assert "every live broker leads a partition" in idle_kill["error"] and "live [1, 2, 3]" not in \
            idle_kill["error"], idle_kill
    assert results["partition.offline_replica_leaves_isr"]["metrics"]["replicas_judged"] > 0
