"""Nightly (KAFKA_CHAOS_NIGHTLY=1, `make nightly`): experiments/kraft-controller-failover.yaml on Apache Kafka 4.x
(process backend): the quorum leader is killed twice; each time a voter takes over at a higher epoch, no split
brain, no acked write lost, every check passes. In `make test` a KRaft quorum leader's loss is
tests/integration/process_backend/test_kraft_cluster.py and KAFKA-15489's corpus pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.install.kafka import DEFAULT_KRAFT_LINE
from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_killing_the_quorum_leader_twice_elects_new_leaders_at_higher_epochs(tmp_path: Path) -> None:
    apache_kafka(DEFAULT_KRAFT_LINE)
    code, run_dir = run_shipped("kraft-controller-failover.yaml", tmp_path)
    assert run_info(run_dir)["cluster"]["mode"] == "kraft"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    kills = [e for e in evs if e["type"] == "fault.start" and e["kind"] == "kill"]
    assert [k["target"][0].startswith("controller:10") for k in kills] == [True, True], kills
    assert [(k["effect"]["down"], k["effect"]["nodes"][0]["role"]) for k in kills] == [(True, "controller")] * 2
    quorum = [e for e in evs if e["type"] == "controller" and e["src"] == "quorum"]
    for kill in kills:
        victim = int(kill["target"][0].split(":")[1])
        before = max(e["epoch"] for e in quorum if e["t"] <= kill["t"])
        after = [e for e in quorum if e["t"] > kill["t"]]
        assert after and after[0]["broker"] != victim and after[0]["epoch"] > before, (kill, after[:2])
