"""experiments/kraft-quorum-partition.yaml on Apache Kafka 4.x (process backend): the quorum leader is cut off
from the other voters and the brokers; it loses the leadership, a new leader at a higher epoch takes over, the
isolated one never advances its high watermark alone, and no acked write is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.install.kafka import DEFAULT_KRAFT_LINE
from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_an_isolated_quorum_leader_is_replaced_at_a_higher_epoch_and_never_commits_alone(tmp_path: Path) -> None:
    apache_kafka(DEFAULT_KRAFT_LINE)
    code, run_dir = run_shipped("kraft-quorum-partition.yaml", tmp_path)
    assert run_info(run_dir)["cluster"]["mode"] == "kraft"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    cut = next(e for e in evs if e["type"] == "fault.start" and e["kind"] == "isolate")
    healed = next(e for e in evs if e["type"] == "fault.end" and e["fault_id"] == cut["fault_id"])
    victim = int(cut["target"][0].split(":")[1])
    quorum = [e for e in evs if e["type"] == "controller" and e["src"] == "quorum"]
    epoch = max(e["epoch"] for e in quorum if e["t"] <= cut["t"])
    new = [e for e in quorum if cut["t"] < e["t"] <= healed["t"]]
    assert new and new[0]["broker"] != victim and new[0]["epoch"] > epoch, new
