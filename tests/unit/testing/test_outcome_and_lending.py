"""What a failed experiment prints and records (Outcome), and how chaos_cluster lends one cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cluster.base import ClusterSpec
from harness.errors import BackendError
from harness.experiment import load_experiment_text
from harness.testing.session import Outcome
from harness.testing.shared import SharedCluster
from spark_analysis.result import CheckResult, Status
from spark_analysis.verdict import Verdict

EXP = load_experiment_text("""\
name: short
seed: 5
duration: 10s
topics: [{name: t, partitions: 1, replication_factor: 1}]
matrix:
  cluster.broker_config.min.insync.replicas: [1]
""", "exp.yaml", "min.insync.replicas=1")


def _verdict(status: Status) -> Verdict:
    checks = (
        CheckResult("controller.unique", "pass", "one controller per epoch"),
        CheckResult("controller.epoch_monotonic", "fail", "epoch 3 seen again after a controller change",
                    evidence=tuple({"t": float(i), "type": "controller", "epoch": 3} for i in range(5)),
                    fault="fault #1 kill controller"),
        CheckResult("slo.rebalance", "unknown", "no group.state events", allowed=True),
    )
    return Verdict(status=status, checks=checks, run={"title": "Apache Kafka 3.9.2"})


def test_failure_names_failed_checks_first_evidence_report_and_reproduce_line(tmp_path: Path) -> None:
    outcome = Outcome(EXP, "process", tmp_path, "completed", _verdict("fail"))
    text = outcome.describe_failure()
    assert [c.check_id for c in outcome.failed_checks()] == ["controller.epoch_monotonic"]
    assert "FAIL    controller.epoch_monotonic: epoch 3 seen again" in text
    assert "[during fault #1 kill controller]" in text
    assert text.count('"type": "controller"') == 3  # the first evidence rows only
    assert "slo.rebalance" not in text  # allowed
    assert "Apache Kafka 3.9.2" in text
    assert ("reproduce: kafka-chaos run exp.yaml --variant min.insync.replicas=1 --seed 5 "
            "--backend process") in text


def test_junit_properties_carry_seed_backend_run_dir_and_every_check(tmp_path: Path) -> None:
    props = dict(Outcome(EXP, "process", tmp_path, "completed", _verdict("fail")).properties())
    assert props["seed"] == "5" and props["backend"] == "process" and props["run_dir"] == str(tmp_path)
    assert props["variant"] == "min.insync.replicas=1" and props["verdict"] == "fail"
    assert props["check.controller.epoch_monotonic"] == "fail"
    assert props["check.slo.rebalance"] == "unknown (allowed)"


def test_a_run_that_did_not_complete_is_never_pass(tmp_path: Path) -> None:
    assert Outcome(EXP, "process", tmp_path, "crashed", _verdict("pass")).status == "unknown"
    assert Outcome(EXP, "process", tmp_path, "completed", None, "no Spark").status == "unknown"


class RecordingCluster:
    """Stands in for a running cluster (unit test of the lending seam only): records `down`."""

    bootstrap_servers = "127.0.0.1:1"
    downs = 0

    def down(self) -> None:
        self.downs += 1


class RecordingBackend:
    name = "process"

    def __init__(self) -> None:
        self.cluster = RecordingCluster()

    def available(self) -> tuple[bool, str]:
        return True, "test"

    def up(self, spec: ClusterSpec, workdir: Path) -> Any:
        return self.cluster


def test_lent_cluster_survives_each_run_and_goes_down_once_with_the_fixture(tmp_path: Path) -> None:
    real = RecordingBackend()
    spec = ClusterSpec(brokers=3, broker_config={"min.insync.replicas": "2"})
    with SharedCluster(real, "why", spec, tmp_path) as shared:
        backend, reason = shared.lending()
        assert backend.name == "process" and "shared across experiments" in reason
        for _ in range(2):
            with backend.up(spec, tmp_path) as loan:
                assert loan.bootstrap_servers == "127.0.0.1:1"
                loan.down()
        assert real.cluster.downs == 0 and shared.runs == 2
    assert real.cluster.downs == 1


def test_lending_refuses_an_experiment_that_wants_another_cluster_shape(tmp_path: Path) -> None:
    with SharedCluster(RecordingBackend(), "why", ClusterSpec(brokers=3), tmp_path) as shared:
        backend, _ = shared.lending()
        with pytest.raises(BackendError, match="brokers: experiment wants 5, shared cluster has 3"):
            backend.up(ClusterSpec(brokers=5), tmp_path)


def test_lending_compares_the_whole_shape_mode_included_but_not_what_the_run_sets(tmp_path: Path) -> None:
    with SharedCluster(RecordingBackend(), "why", ClusterSpec(brokers=3), tmp_path) as shared:
        backend, _ = shared.lending()
        with pytest.raises(BackendError, match="mode: experiment wants 'kraft', shared cluster has 'zookeeper'"):
            backend.up(ClusterSpec(brokers=3, zookeepers=0, mode="kraft", controllers=3), tmp_path)
        backend.up(ClusterSpec(brokers=3, cluster_id="abc", ready_timeout_s=5), tmp_path)
        assert shared.runs == 1
