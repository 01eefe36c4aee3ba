"""`validate` refuses what the asked-for Kafka release cannot do, naming the line, the field, the release, since
when and the source (harness/model/releases.py)."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text, load_experiments_text

BASE = """\
name: r
duration: 10s
cluster:
  brokers: 3
  kafka: "{kafka}"
  broker_config: {{{config}}}
topics: [{{name: t, partitions: 1, replication_factor: 3}}]
workload:
  consumers: [{{group: g, topics: [t], config: {{group.protocol: {protocol}}}}}]
"""


def _load(kafka: str, config: str = "", protocol: str = "classic", mode: str = "") -> None:
    text = BASE.format(kafka=kafka, config=config, protocol=protocol)
    if mode:
        text = text.replace("  brokers: 3\n", f"  brokers: 3\n  mode: {mode}\n")
    load_experiment_text(text, "r.yaml")


@pytest.mark.parametrize(("kafka", "config", "protocol", "mode", "line", "field", "words"), [
    ("3.5.2", "transaction.partition.verification.enable: false", "classic", "", 6,
     "cluster.broker_config['transaction.partition.verification.enable']", ["3.5.2", "came in 3.6.0", "KIP-890"]),
    ("4", "log.message.timestamp.difference.max.ms: 1000", "classic", "", 6,
     "cluster.broker_config['log.message.timestamp.difference.max.ms']", ["4.0.0 removed it", "KIP-937",
                                                                       "log.message.timestamp.before.max.ms"]),
    ("3.9", "", "consumer", "", 9, "workload.consumers[0].config['group.protocol']", ["3.9.0", "4.0.0", "KIP-848"]),
    ("3.2.3", "", "classic", "kraft", 6, "cluster.kafka", ["3.2.3", "3.3.0", "KIP-833"]),
    ("4.0.0", "", "classic", "zookeeper", 6, "cluster.kafka", ["4.0.0", "removed it", "KIP-833"]),
])
def test_a_feature_the_release_lacks_is_refused_with_the_release_and_its_source(
        kafka: str, config: str, protocol: str, mode: str, line: int, field: str, words: list[str]) -> None:
    with pytest.raises(ValidationError) as err:
        _load(kafka, config, protocol, mode)
    problem = next(p for p in err.value.problems if p.field == field)
    assert problem.file == "r.yaml" and problem.line == line
    assert all(w in problem.message for w in words), problem.message


def test_the_same_settings_pass_on_releases_that_have_them() -> None:
    _load("3.6.1", "transaction.partition.verification.enable: false")
    _load("3.9.2", "log.message.timestamp.difference.max.ms: 1000")
    _load("4", "", "consumer")


def test_a_matrix_names_the_variant_whose_release_lacks_it() -> None:
    text = BASE.format(kafka="3.9", config="transaction.partition.verification.enable: false",
                       protocol="classic") + 'matrix:\n  cluster.kafka: ["3.5.2", "3.6.1"]\n'
    with pytest.raises(ValidationError) as err:
        load_experiments_text(text, "r.yaml")
    assert any("[variant kafka=3.5.2]" in p.message and "3.6.0" in p.message for p in err.value.problems)


def test_a_3x_release_without_a_mode_runs_zookeeper_mode_and_a_4x_one_kraft() -> None:
    text = BASE.format(kafka="3.0.2", config="", protocol="classic")
    assert load_experiment_text(text).cluster.mode == "zookeeper"
    assert load_experiment_text(BASE.format(kafka="4.1.0", config="", protocol="classic")).cluster.mode == "kraft"
