"""experiments/leader-election.yaml, variant mode=kraft, on Apache Kafka 4.x with 3 dedicated controllers (process
backend): every check passes, elections are judged against the KRaft rules (ELR, KIP-966), and the graceful stop
of a leader moves its leaderships before the broker is fenced (KRaft controlled shutdown, KIP-631), and a killed
pure follower leaves the ISRs it was in when it is fenced."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.install.kafka import DEFAULT_KRAFT_LINE
from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import check_results, events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_leader_election_passes_in_kraft_mode_and_a_stop_moves_leadership_before_fencing(tmp_path: Path) -> None:
    apache_kafka(DEFAULT_KRAFT_LINE)
    code, run_dir = run_shipped("leader-election.yaml", tmp_path, "--variant", "mode=kraft")
    info = run_info(run_dir)
    assert info["broker"]["flavour"] == "apache-kafka" and info["broker"]["version"].startswith("4.")
    assert info["cluster"]["mode"] == "kraft"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    stop = next(e for e in evs if e["type"] == "fault.start" and e["kind"] == "stop")
    victim = stop["brokers"][0]
    kraft = [e for e in evs if e["src"] == "kraft"]
    # fault.start carries the time the stop began: the fencing follows the controlled shutdown
    fenced = next(e["t"] for e in kraft if e["type"] in ("broker.fenced", "broker.down") and e["broker"] == victim
                  and e["t"] >= stop["t"])
    led = {(e["topic"], e["partition"]) for e in kraft if e["type"] == "partition.state" and e["t"] < fenced
           and e["leader"] == victim}
    moved = {(e["topic"], e["partition"]) for e in kraft if e["type"] == "partition.state"
             and fenced - 30 <= e["t"] <= fenced and e["leader"] not in (victim, -1)}
    assert led and led <= moved, f"led by {victim}: {sorted(led)}, moved before it was fenced: {sorted(moved)}"
    results = check_results(run_dir)
    assert results["partition.controlled_shutdown_moves_leaders"]["metrics"]["leaders_moved"] >= len(led)
    assert results["partition.offline_replica_leaves_isr"]["metrics"]["replicas_judged"] > 0
