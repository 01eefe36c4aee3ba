"""Issue 37's shipped experiments on the Java client (`kafka-chaos run --client java`), each with its shipped seed:
controller-failover, consumer-rebalance, transactions and exactly-once-pipeline on Apache Kafka 3.9 (ZooKeeper),
kraft-controller-failover and consumer-rebalance-kip848 (KIP-848's consumer protocol) on the newest 4.x. Every
check passes and the run names the Java client of the broker's release. Nightly: about 2 minutes each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("experiment", ["controller-failover", "consumer-rebalance", "transactions",
                                        "exactly-once-pipeline", "kraft-controller-failover",
                                        "consumer-rebalance-kip848"])
def test_a_shipped_experiment_passes_on_the_java_client(experiment: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(EXPERIMENTS / f"{experiment}.yaml"),
                           "--client", "java", "--backend", "process", "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=900, check=False)
    (run_dir,) = list(tmp_path.iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    failing = {c["id"]: c["summary"] for c in verdict["checks"] if c["status"] != "pass"}
    assert run["client"] == {"name": "java", "library": "kafka-clients", "version": run["broker"]["version"]}
    assert not failing and done.returncode == 0, (failing, done.stdout[-2000:], done.stderr[-2000:])
