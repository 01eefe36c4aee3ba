"""The client as a matrix dimension, and what a run on the Java client tells afterwards: run.json's client in the
report's header (`RunInfo.client_title`) and in the reproduce line, which names the client exactly (a `--client`
override is not in the experiment file)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.experiment import load_experiments_text
from harness.experiment.reproduce import reproduce_line
from spark_analysis.ingest.runinfo import load_run_info

MATRIX = """name: m
duration: 30s
topics: [{name: t}]
workload:
  producers: [{topic: t}]
matrix:
  workload.client: [librdkafka, java]
"""


def test_a_client_axis_runs_the_experiment_on_each_client() -> None:
    variants = load_experiments_text(MATRIX, "m.yaml")
    assert [(v.variant, v.workload.client) for v in variants] == [("client=librdkafka", "librdkafka"),
                                                                  ("client=java", "java")]


def _run_dir(tmp_path: Path, client: dict[str, str]) -> Path:
    (tmp_path / "run.json").write_text(json.dumps({
        "experiment": "m", "broker": {"flavour": "apache-kafka", "version": "3.9.2", "describe": "Apache Kafka 3.9.2"},
        "versions": {"harness": "0.1.0", "librdkafka": "2.16.0"}, "client": client}))
    return tmp_path


def test_a_java_run_names_its_client_in_the_header_and_the_reproduce_line(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, {"name": "java", "library": "kafka-clients", "version": "3.9.1"})
    assert load_run_info(run_dir).client_title == "Java client (kafka-clients 3.9.1)"
    line = reproduce_line("x.yaml", seed=3, backend="process", run_dir=run_dir)
    assert "--client java --client-version 3.9.1" in line and "Java client kafka-clients 3.9.1" in line
    assert "librdkafka" not in line


def test_a_librdkafka_run_names_librdkafka_and_adds_no_client_flag(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, {"name": "librdkafka", "library": "confluent-kafka", "version": "2.16.0"})
    assert load_run_info(run_dir).client_title == "librdkafka 2.16.0"
    line = reproduce_line("x.yaml", seed=3, backend="process", run_dir=run_dir)
    assert "--client" not in line and "librdkafka 2.16.0" in line
