"""One cluster spec: an experiment's `cluster:` section and a test module's `chaos_cluster(**spec)` marker
read into the same `ClusterSpec` by the same rules, and a bad marker keyword is reported as a bad `cluster:` key
is, naming the test module, the marker's line, the keyword and the value."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cluster.base import RUN_FIELDS, ClusterSpec
from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.cluster_fields import CLUSTER_KEYS, RETIRED_KEYS, SPEC_FIELDS, read_marker
from harness.pytest_plugin import _cluster_spec

HEAD = "name: x\nduration: 60s\n"
SHAPES: list[dict[str, Any]] = [
    {},
    {"brokers": 5, "zookeepers": 3},
    {"brokers": 1, "kafka": "3.8", "broker": "apache-kafka",
     "broker_config": {"min.insync.replicas": 2, "auto.create.topics.enable": True}},
    {"mode": "kraft"},
    {"brokers": 4, "kafka": "4", "controllers": 3, "combined": True},
    {"broker": "apache-kafka", "images": {"kafka": "local"}},
]


def _yaml(shape: dict[str, Any]) -> ClusterSpec:
    return load_experiment_text(HEAD + yaml.safe_dump({"cluster": shape}), "c.yaml").cluster


def _module(tmp_path: Path, marker: str) -> Path:
    path = tmp_path / "test_shared.py"
    path.write_text(f"import pytest\n\npytestmark = pytest.mark.{marker}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: ",".join(s) or "defaults")
def test_the_marker_and_the_yaml_give_equal_specs_for_the_same_shape(shape: dict[str, Any], tmp_path: Path) -> None:
    assert read_marker(shape, _module(tmp_path, "chaos_cluster()")) == _yaml(shape)


def test_no_marker_and_an_empty_cluster_section_are_the_spec_defaults(tmp_path: Path) -> None:
    assert _cluster_spec(None, _module(tmp_path, "chaos")) == _yaml({}) == ClusterSpec()
    assert load_experiment_text(HEAD, "c.yaml").cluster == ClusterSpec()


def test_every_spec_field_is_a_cluster_key_or_set_by_the_run() -> None:
    names = {f.name for f in dataclasses.fields(ClusterSpec)}
    assert set(SPEC_FIELDS.values()) | set(RUN_FIELDS) == names
    assert set(CLUSTER_KEYS) == set(SPEC_FIELDS) | set(RETIRED_KEYS)
    assert not set(SPEC_FIELDS.values()) & set(RUN_FIELDS)


@pytest.mark.parametrize(("shape", "field", "message"), [
    ({"brokers": 0}, "brokers", "must be positive (got 0)"),
    ({"kafka": "4.1", "mode": "zookeeper"}, "kafka", "has no ZooKeeper mode"),
    ({"mode": "kraft", "controllers": 2}, "controllers", "1, 3 or 5 voters (got 2)"),
    ({"broker_config": {"broker.id": 3}}, "broker_config['broker.id']", "reserved"),
    ({"broker": "reference"}, "broker", "the reference broker was retired; use apache-kafka"),
    ({"reference_bugs": ["skip_epoch_bump"]}, "reference_bugs", "the reference broker was retired"),
])
def test_a_bad_keyword_is_reported_as_the_bad_cluster_key_naming_module_line_keyword_and_value(
        shape: dict[str, Any], field: str, message: str, tmp_path: Path) -> None:
    module = _module(tmp_path, "chaos_cluster(...)")
    with pytest.raises(ValidationError) as marker:
        read_marker(shape, module)
    with pytest.raises(ValidationError) as section:
        _yaml(shape)
    assert str(marker.value).startswith(f"{module} (chaos_cluster marker):3:26: {field}: ")
    assert message in str(marker.value) and f"cluster.{field}: " in str(section.value)
    assert [p.message for p in marker.value.problems] == [p.message for p in section.value.problems]


def test_an_unknown_keyword_is_refused_with_the_nearest_key(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match=r"brokrs: unknown key in chaos_cluster marker .*'brokers'"):
        _cluster_spec(pytest.mark.chaos_cluster(brokrs=3).mark, _module(tmp_path, "chaos_cluster(brokrs=3)"))
