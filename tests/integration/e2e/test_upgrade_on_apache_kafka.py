"""`action: upgrade` on Apache Kafka (process backend), make test's representative of the upgrades
(tests/data/apache_kafka/upgrade-without-finalize.yaml: experiments/rolling-upgrade.yaml's first half; the whole
file, the finalize's second roll too, runs nightly in tests/nightly/test_zk_rolling_upgrade_on_apache_kafka.py; the
migration to KRaft is test_migration_into_dual_write_on_apache_kafka.py). A ZooKeeper-mode cluster on 3.7.0 with the
protocol pinned to 3.7 is upgraded to 3.9.2 broker by broker under acks=all load: every rule's check passes (an SLO
breach alone is the machine's load: see `failing_rules`), the operation is done, each broker's last start ran
3.9.2's jars with the protocol still pinned, and each stop is its own `stop` fault window, one at a time.

Marked `serial`, as the migration is: `make test` runs it alone after the parallel suite. Beside the other heavy
tests its roll and verify took 217-229 s (this machine's fresh clone at e5f6c09, and CI), against 53 s alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import ROOT, events, exit_code_for, failing_rules, run_info

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.serial,
              pytest.mark.timeout(600)]  # three restarts and a verify; about half the whole roll's 90-294 s
EXPERIMENT = ROOT / "tests" / "data" / "apache_kafka" / "upgrade-without-finalize.yaml"


def test_a_rolling_upgrade_passes_on_apache_kafka_and_every_broker_restarts_on_the_new_release(
    tmp_path: Path,
) -> None:
    apache_kafka("3.7.0")
    apache_kafka("3.9.2")
    code = main(["run", str(EXPERIMENT), "--backend", "process", "--runs-dir", str(tmp_path)])
    (run_dir,) = list(tmp_path.iterdir())
    assert run_info(run_dir)["broker"]["version"] == "3.7.0"
    assert not failing_rules(run_dir), failing_rules(run_dir)
    assert code == exit_code_for(run_dir)
    evs = events(run_dir)
    ends = {e["action"]: e for e in evs if e["type"] == "op.end"}
    assert {a: e["outcome"] for a, e in ends.items()} == {"upgrade": "done"}, ends
    assert ends["upgrade"]["detail"].startswith("broker 1 as Apache Kafka 3.9.2 ")
    windows = [(e["type"], e["fault_id"], e["target"]) for e in evs if e["type"] in ("fault.start", "fault.end")]
    assert windows == [(f"fault.{w}", f"0.{b}", [f"broker:{b}"]) for b in (1, 2, 3) for w in ("start", "end")]
    for b in (1, 2, 3):
        broker_dir = run_dir / "cluster" / f"broker-{b}"
        starts = [line for line in (broker_dir / "broker.log").read_text().splitlines()
                  if line.startswith("--- kafka-chaos: starting")]
        assert len(starts) == 2 and "kafka-3.7.0" in starts[0] and "kafka-3.9.2" in starts[-1], starts
        assert "inter.broker.protocol.version=3.7" in (broker_dir / "server.properties").read_text()
