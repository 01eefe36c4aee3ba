"""`matrix:` expansion: variants, ids, substitution, and errors at the matrix line."""

from __future__ import annotations

import re

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text, load_experiments_text
from harness.experiment.matrix import parse_path

BASE = """\
name: m
duration: 10s
cluster: {brokers: 3}
topics: [{name: t, partitions: 1, replication_factor: 3}]
workload:
  producers:
    - {topic: t, acks: all}
    - {topic: t, acks: all}
"""


def test_paths_parse_indices_wildcards_and_dotted_property_names() -> None:
    assert parse_path("workload.producers[*].acks") == ("workload", "producers", "*", "acks")
    assert parse_path("topics[0].partitions") == ("topics", 0, "partitions")
    assert parse_path("cluster.broker_config.min.insync.replicas") == ("cluster", "broker_config",
                                                                       "min.insync.replicas")
    assert parse_path("a..b[") is None


def test_cross_product_in_written_order_with_short_ids() -> None:
    exps = load_experiments_text(BASE + """matrix:
  workload.producers[*].acks: [1, all]
  cluster.broker_config.min.insync.replicas: [1, 2]
""")
    assert [e.variant for e in exps] == ["acks=1,min.insync.replicas=1", "acks=1,min.insync.replicas=2",
                                         "acks=all,min.insync.replicas=1", "acks=all,min.insync.replicas=2"]
    assert all(p.acks == "1" for p in exps[0].workload.producers)
    assert exps[3].cluster.broker_config["min.insync.replicas"] == "2"
    assert exps[0].label == "m[acks=1,min.insync.replicas=1]"
    assert {e.name for e in exps} == {"m"}


def test_list_values_such_as_check_lists_get_readable_ids() -> None:
    exps = load_experiments_text(BASE + "matrix:\n  verify.checks: [[all], [controller.unique, delivery.lost_write]]\n")
    assert [e.variant for e in exps] == ["checks=all", "checks=controller.unique+delivery.lost_write"]
    assert exps[1].verify.checks == ("controller.unique", "delivery.lost_write")


def test_no_matrix_is_one_experiment_without_variant() -> None:
    (exp,) = load_experiments_text(BASE)
    assert exp.variant == "" and exp.label == "m"
    assert load_experiment_text(BASE) == exp


def test_bad_value_is_reported_at_the_matrix_line_naming_the_variant() -> None:
    with pytest.raises(ValidationError) as err:
        load_experiments_text(BASE + "matrix:\n  workload.producers[0].acks: [all, two]\n", "x.yaml")
    (problem,) = err.value.problems
    assert (problem.file, problem.line, problem.field, problem.value) == ("x.yaml", 10, "workload.producers[0].acks",
                                                                          "two")
    assert "variant acks=two" in problem.message


def test_problems_shared_by_every_variant_are_reported_once_without_variant() -> None:
    with pytest.raises(ValidationError) as err:
        load_experiments_text(BASE.replace("duration: 10s", "duration: soon")
                              + "matrix:\n  cluster.kafka: ['3.8', '3.9']\n")
    (problem,) = err.value.problems
    assert problem.field == "duration" and "variant" not in problem.message


@pytest.mark.parametrize(("axis", "message"), [
    ("topics[3].partitions: [1]", "has 1 element(s)"),
    ("name: [a, b]", "not a field path"),
    ("cluster.kafka: 7.7.1", "non-empty list"),
    ("topics.partitions: [1]", "is not a mapping"),
])
def test_bad_axes_are_errors_at_the_axis(axis: str, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        load_experiments_text(BASE + f"matrix:\n  {axis}\n")
    assert any(message in p.message and p.line == 10 for p in err.value.problems), err.value.problems


def test_a_matrix_file_needs_a_variant_when_loading_one_experiment() -> None:
    text = BASE + "matrix:\n  cluster.kafka: ['7.6.1', '7.7.1']\n"
    with pytest.raises(ValidationError, match=re.escape("has 2 variants: kafka=7.6.1, kafka=7.7.1")):
        load_experiment_text(text)
    assert load_experiment_text(text, variant="kafka=7.6.1").cluster.kafka_version == "7.6.1"
    with pytest.raises(ValidationError, match="variant ids are as listed"):
        load_experiment_text(text, variant="kafka=9")


def test_too_many_variants_is_an_error() -> None:
    axes = "".join(f"  topics[0].config.k{i}: [a, b]\n" for i in range(7))
    with pytest.raises(ValidationError, match="expands to 128 variants"):
        load_experiments_text(BASE + "matrix:\n" + axes)
