"""run.json as the bundle writes it at the start of a run: what the verifiers read from it."""

from __future__ import annotations

import json
from pathlib import Path

from harness.engine.bundle import RunBundle
from harness.experiment import load_experiment_text
from spark_analysis.ingest.runinfo import load_run_info

EXP = """
name: bundle
seed: 1
cluster:
  brokers: 3
  broker_config: {unclean.leader.election.enable: true, offsets.topic.num.partitions: 5}
topics: [{name: t, partitions: 1, replication_factor: 3}]
duration: 1s
"""


def test_run_json_records_the_broker_config_the_verifiers_read(tmp_path: Path) -> None:
    """unclean.leader.election.enable reaches `RunInfo.unclean_election` (the partition checks tolerate or
    demand unclean elections by it)."""
    bundle = RunBundle.create(tmp_path, load_experiment_text(EXP, "bundle.yaml"), backend="fake",
                              backend_reason="test")
    cluster = json.loads(bundle.run_json.read_text())["cluster"]
    assert cluster["broker_config"]["unclean.leader.election.enable"] in ("true", "True")
    info = load_run_info(bundle.dir)
    assert info.unclean_election and info.offsets_topic_partitions == 5
