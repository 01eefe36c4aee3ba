"""`kafka-chaos run experiments/secured-failover.yaml --backend containers --broker apache-kafka` (its ZooKeeper
variant) end to end, as a user runs it (a subprocess of the CLI): Apache Kafka comes up through Testcontainers (on
Podman: the cache's install in the local Kafka image) with TLS, SASL/SCRAM and ACLs on every listener, the
controller is killed twice and replaced, the workloads' password is rotated, the run completes, verification runs,
run.json names Apache Kafka, its version and the cluster's security, the brokers' log files are in the run's
cluster/ directory, and no container or network is left behind. It is controller-failover's run plus the security,
so the plaintext file is not run again here (`make nightly BACKEND=containers` runs it).
Nightly, not `make test`: beside make test's other JVMs it took 190-330 s and once (CI, stop 53) never reached its
steady state; make test keeps the containers backend's own tests (tests/containers/: bring-up, every fault, the
KRaft quorum leader's loss, teardown) and the secured cluster on the process backend
(tests/integration/process_backend/test_secured_cluster_on_apache_kafka.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.containers.helpers import local_kafka, run_leftovers
from tests.fixtures.podman import DockerEngine

pytestmark = [pytest.mark.containers, pytest.mark.slow, pytest.mark.spark]
ROOT = Path(__file__).resolve().parents[2]
# What the containers backend is responsible for: the faults happened and were seen, and nothing the
# cluster acknowledged was lost (asserted first, so a failure names them).
BACKEND_CHECKS = ("controller.unique", "controller.epoch_monotonic", "slo.controller_failover",
                  "partition.leader_in_isr", "delivery.lost_write", "delivery.duplicate")


@pytest.mark.timeout(540)
def test_the_secured_controller_failover_experiment_runs_end_to_end_through_containers(
        docker_env: DockerEngine, tmp_path: Path) -> None:
    kafka = local_kafka(docker_env)  # installed into the cache first when missing (not timed by the run)
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "harness.cli", "run", "experiments/secured-failover.yaml", "--variant",
           "mode=zookeeper", "--backend", "containers", "--broker", "apache-kafka", "--runs-dir", str(runs)]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=500,
                          check=False)
    out = proc.stdout + proc.stderr
    assert "backend: containers" in out, out[-3000:]
    (run_dir,) = runs.iterdir()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "completed", out[-3000:]
    info = meta["cluster_info"]
    assert info["backend"] == "containers" and info["engine"]
    assert info["security"]["protocol"] == "SASL_SSL" and info["security"]["mechanism"] == "SCRAM-SHA-512"
    broker = meta["broker"]
    assert broker["flavour"] == "apache-kafka" and broker["version"].startswith("3.9"), broker
    if kafka is not None:  # the local images: this install's jars, its log files in the run's cluster/ dir
        assert broker["version"] == kafka.version and info["kafka"]["image"].endswith(f":{kafka.version}")
        for k in (1, 2, 3):
            logs = run_dir / "cluster" / f"broker-{k}" / "logs"
            assert (logs / "server.log").stat().st_size > 0 and (logs / "state-change.log").is_file()
    assert run_leftovers(info["run_id"]) == [], "containers or network left after the run"
    verdict = json.loads((run_dir / "verdict.json").read_text())
    checks = {c["id"]: c for c in verdict["checks"]}
    failed = {name: checks[name]["summary"] for name in BACKEND_CHECKS if checks[name]["status"] != "pass"}
    assert not failed, f"verdict {verdict['status']}: {failed}"
    # on Apache Kafka every check judges Kafka itself (the group checks too): the experiment passes
    others = {c["id"]: f"{c['status']}: {c['summary']}" for c in verdict["checks"] if c["status"] != "pass"}
    assert verdict["status"] == "pass" and proc.returncode == 0, (proc.returncode, others)
    assert [f["kind"] for f in verdict["faults"]] == ["kill", "kill", "credential_rotation"]
    print(f"verdict {verdict['status']}: " + ", ".join(f"{c['id']}={c['status']}" for c in verdict["checks"]))
