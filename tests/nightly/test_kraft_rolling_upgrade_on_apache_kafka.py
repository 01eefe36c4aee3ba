"""experiments/kraft-rolling-upgrade.yaml on Apache Kafka (process backend): a KRaft cluster (3 dedicated controllers,
3 brokers) upgraded from 3.9.2 to 4.4.0 node by node under acks=all load, the controllers first, then finalized
(metadata.version bumped through UpdateFeatures). Real nodes of both releases, real clients and Spark: every check
passes, both operations are done, the six stops come controllers first, and every node's last start ran 4.4.0's
jars. Nightly: `make test`'s upgrade representative is a ZooKeeper-mode one
(tests/integration/e2e/test_upgrade_on_apache_kafka.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_a_kraft_rolling_upgrade_rolls_the_controllers_first_and_finalizes_metadata_version_on_apache_kafka(
    tmp_path: Path,
) -> None:
    apache_kafka("3.9.2")
    apache_kafka("4.4.0")
    code, run_dir = run_shipped("kraft-rolling-upgrade.yaml", tmp_path)
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
    evs = events(run_dir)
    ends = {e["action"]: e for e in evs if e["type"] == "op.end"}
    assert {a: e["outcome"] for a, e in ends.items()} == {"upgrade": "done", "finalize_upgrade": "done"}, ends
    assert ends["finalize_upgrade"]["detail"].startswith("metadata.version level ")
    stops = [e["target"] for e in evs if e["type"] == "fault.start"]
    assert stops == [["controller:101"], ["controller:102"], ["controller:103"], ["broker:1"], ["broker:2"],
                     ["broker:3"]], stops
    for node in ("controller-101", "controller-102", "controller-103", "broker-1", "broker-2", "broker-3"):
        log = run_dir / "cluster" / node / ("controller.log" if node.startswith("controller") else "broker.log")
        starts = [line for line in log.read_text().splitlines() if line.startswith("--- kafka-chaos: starting")]
        assert "kafka-3.9.2" in starts[0] and "kafka-4.4.0" in starts[-1], (node, starts)
