"""`kafka-chaos run experiments/controller-failover.yaml --backend containers` end to end, as a user runs
it (a subprocess of the CLI): the cluster comes up through Testcontainers, the controller is killed twice
and replaced, the run completes, verification runs, and no container or network is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.containers.helpers import run_leftovers
from tests.fixtures.podman import DockerEngine

pytestmark = [pytest.mark.containers, pytest.mark.slow, pytest.mark.spark]
ROOT = Path(__file__).resolve().parents[2]
# What the containers backend is responsible for: the faults happened and were seen, and nothing the
# cluster acknowledged was lost. Group checks judge the broker's group coordinator and the workload
# (their own suites); they are reported in the verdict, not asserted here.
BACKEND_CHECKS = ("controller.unique", "controller.epoch_monotonic", "slo.controller_failover",
                  "partition.leader_in_isr", "delivery.lost_write", "delivery.duplicate")


@pytest.mark.timeout(540)
def test_controller_failover_experiment_runs_end_to_end_through_containers(
        docker_env: DockerEngine, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "harness.cli", "run", "experiments/controller-failover.yaml",
           "--backend", "containers", "--runs-dir", str(runs)]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=500,
                          check=False)
    out = proc.stdout + proc.stderr
    assert "backend: containers" in out, out[-3000:]
    (run_dir,) = runs.iterdir()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "completed", out[-3000:]
    info = meta["cluster_info"]
    assert info["backend"] == "containers" and info["engine"]
    assert run_leftovers(info["run_id"]) == [], "containers or network left after the run"
    verdict = json.loads((run_dir / "verdict.json").read_text())
    checks = {c["id"]: c for c in verdict["checks"]}
    failed = {name: checks[name]["summary"] for name in BACKEND_CHECKS if checks[name]["status"] != "pass"}
    assert not failed, f"verdict {verdict['status']}: {failed}"
    assert [f["kind"] for f in verdict["faults"]] == ["kill", "kill"]
    print(f"verdict {verdict['status']}: " + ", ".join(f"{c['id']}={c['status']}" for c in verdict["checks"]))
