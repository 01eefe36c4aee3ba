"""Issue 37's shipped experiments on the clients out of process, each with its shipped seed. On the Java client
(`kafka-chaos run --client java`): controller-failover, consumer-rebalance, transactions and exactly-once-pipeline on
Apache Kafka 3.9 (ZooKeeper), kraft-controller-failover and consumer-rebalance-kip848 (KIP-848's consumer protocol) on
the newest 4.x; the run names the Java client of the broker's release. On a pinned librdkafka (`--client-version
2.6.0`, confluent-kafka from PyPI): the four on 3.9. Every check passes. Nightly: about 2 minutes each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("experiment", ["controller-failover", "consumer-rebalance", "transactions",
                                        "exactly-once-pipeline", "kraft-controller-failover",
                                        "consumer-rebalance-kip848"])
def test_a_shipped_experiment_passes_on_the_java_client(experiment: str, tmp_path: Path) -> None:
    run = _passing_run(experiment, ["--client", "java"], tmp_path)
    assert run["client"] == {"name": "java", "library": "kafka-clients", "version": run["broker"]["version"]}


@pytest.mark.parametrize("experiment", ["controller-failover", "consumer-rebalance", "transactions",
                                        "exactly-once-pipeline"])
def test_a_shipped_experiment_passes_on_a_pinned_librdkafka(experiment: str, tmp_path: Path) -> None:
    run = _passing_run(experiment, ["--client-version", "2.6.0"], tmp_path)
    assert run["client"] == {"name": "librdkafka", "library": "confluent-kafka", "version": "2.6.0"}


def _passing_run(experiment: str, client: list[str], runs: Path) -> dict[str, Any]:
    """`kafka-chaos run` of a shipped experiment on the process backend; its run.json, once every check passed."""
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(EXPERIMENTS / f"{experiment}.yaml"),
                           *client, "--backend", "process", "--runs-dir", str(runs)],
                          capture_output=True, text=True, timeout=900, check=False)
    (run_dir,) = list(runs.iterdir())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    failing = {c["id"]: c["summary"] for c in verdict["checks"] if c["status"] != "pass"}
    assert not failing and done.returncode == 0, (failing, done.stdout[-2000:], done.stderr[-2000:])
    run: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return run
