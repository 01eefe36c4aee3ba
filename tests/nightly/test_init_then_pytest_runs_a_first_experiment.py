"""`kafka-chaos init` then `pytest` (issue 42): the starter project runs its first experiment end to end on the
process backend (Apache Kafka 3.9, real ZooKeeper, the embedded Toxiproxy, librdkafka, the Spark verifiers) with
nothing but the files init wrote: no conftest.py, no arguments beyond the backend, and it passes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from tests.fixtures.process_cluster import apache_kafka

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]


def test_init_then_pytest_runs_the_starter_experiment_and_it_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    apache_kafka()
    project = tmp_path / "project"
    assert main(["init", str(project)]) == 0
    assert "next: cd" in capsys.readouterr().out
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--chaos-backend", "process"]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=840, check=False)
    output = done.stdout + done.stderr
    print(output[-4000:])
    assert done.returncode == 0, output[-4000:]
    assert "1 passed" in done.stdout, done.stdout[-2000:]
    verdicts = sorted((project / "runs").glob("*/verdict.json"))
    assert len(verdicts) == 1, f"one run directory under runs/: {verdicts}"
    verdict = json.loads(verdicts[0].read_text())
    assert verdict["status"] == "pass", verdict
