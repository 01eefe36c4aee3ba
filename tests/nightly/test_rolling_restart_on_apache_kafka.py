"""experiments/rolling-restart.yaml on Apache Kafka 3.9 (process backend): every broker restarted in turn under
acks=all load with min.insync.replicas=2, and the producer restarted twice (new idempotent sessions, one
purged abruptly); every check passes (no acked write lost, each leader change a
controlled shutdown's, writes within the stall SLO), and the history shows each broker's stop as its own
`stop` fault window, one at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_rolling_restart_passes_on_apache_kafka_one_broker_down_at_a_time(tmp_path: Path) -> None:
    apache_kafka()
    code, run_dir = run_shipped("rolling-restart.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    ends = {e["action"] + (" abrupt" if "abrupt" in e["description"] else ""): e for e in evs if e["type"] == "op.end"}
    assert {a: e["outcome"] for a, e in ends.items()} == {
        "rolling_restart": "done", "restart_producer": "done", "restart_producer abrupt": "done"}, ends
    assert ends["restart_producer abrupt"]["detail"].startswith("session 3: ")
    windows = [(e["type"], e["fault_id"], e["target"]) for e in evs if e["type"] in ("fault.start", "fault.end")]
    assert windows == [(f"fault.{w}", f"0.{b}", [f"broker:{b}"]) for b in (1, 2, 3) for w in ("start", "end")]
