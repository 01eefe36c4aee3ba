"""The JSON Schema of experiment files (`harness.experiment.json_schema`, `kafka-chaos schema`): the committed copy is
the generated one; every shipped experiment names it on its first line (a comment the loader skips) and validates
against it; it refuses the bad experiments that are bad in shape (an unknown key, a wrong type, a bad choice, a value
out of bounds) and accepts the ones only the loader can judge (cross-field rules, target syntax)."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness.cli import main
from harness.errors import ValidationError
from harness.experiment import load_experiments, load_experiments_text
from harness.experiment.json_schema import REGENERATE, experiment_schema, schema_text

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "experiment.schema.json"
SHIPPED = sorted([*(ROOT / "experiments").glob("*.yaml"), *(ROOT / "experiments" / "known-bugs").glob("*.yaml")])
BAD = ROOT / "tests" / "data" / "bad_experiments"
HEADER = "# yaml-language-server: $schema="

SCHEMA_BAD = {  # file -> a field the schema refuses there ("" is the document)
    "explore_block.yaml": "explore.durations.1",  # a number where a duration is due
    "hostile_values.yaml": "cluster.brokers",  # above the readers' bound
    "negative_rate.yaml": "workload.producers.0.rate",
    "power_loss_targets.yaml": "schedule.1",  # `targets:` for a kind that acts on one node
    "reference_broker_retired.yaml": "cluster.broker",
    "several_errors.yaml": "cluster.brokers",
    "transactions.yaml": "workload.consumers.0.isolation",
    "unknown_fault.yaml": "schedule.0.fault",
    "unknown_key.yaml": "",
    "wrong_type.yaml": "cluster.brokers",
    "zero_brokers.yaml": "cluster.brokers",
}
LOADER_ONLY = {  # file -> why only the loader refuses it
    "broker_beyond_cluster.yaml": "a target beyond the cluster's brokers (cross-field)",
    "duplicate_key.yaml": "a key given twice (a YAML parser keeps the last)",
    "fault_after_duration.yaml": "a fault at or after the experiment's end (cross-field)",
    "malformed_target.yaml": "target syntax (a target is a string to the schema)",
    "overlapping_faults.yaml": "two faults on one node at once (cross-field)",
    "replication_above_brokers.yaml": "a replication factor above the broker count (cross-field)",
    "undeclared_group.yaml": "a group not declared under workload.consumers (cross-field)",
    "undeclared_topic.yaml": "a topic not declared under topics (cross-field)",
}
NOT_A_DOCUMENT = {  # the loader's input guard refuses these before there is a document to check
    "alias_bomb.yaml", "binary_file.yaml", "deep_nesting.yaml", "not_utf8.yaml", "yaml_syntax.yaml"}


@functools.cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(experiment_schema())


def _error_paths(doc: Any) -> set[str]:
    return {".".join(map(str, e.absolute_path)) for e in _validator().iter_errors(doc)}


def _doc(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_generated_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = experiment_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_the_committed_schema_is_the_generated_one() -> None:
    same = COMMITTED.is_file() and COMMITTED.read_text(encoding="utf-8") == schema_text()
    assert same, f"{COMMITTED.relative_to(ROOT)} is not what the loader gives now: regenerate it with `{REGENERATE}`"


def test_kafka_chaos_schema_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == experiment_schema()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_shipped_experiment_names_the_committed_schema_on_its_first_line_and_still_loads(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == HEADER + Path(os.path.relpath(COMMITTED, path.parent)).as_posix(), (
        f"{path.name}: the first line must name the schema relative to the file")
    assert load_experiments(path)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_shipped_experiment_validates_against_the_schema(path: Path) -> None:
    assert _error_paths(_doc(path)) == set()


def test_every_bad_experiment_is_classified_as_schema_bad_or_loader_only() -> None:
    files = {p.name for p in BAD.glob("*.yaml")}
    assert not SCHEMA_BAD.keys() & (LOADER_ONLY.keys() | NOT_A_DOCUMENT)
    assert files - SCHEMA_BAD.keys() == LOADER_ONLY.keys() | NOT_A_DOCUMENT, (
        "a bad experiment the schema does not refuse must be listed in LOADER_ONLY (or NOT_A_DOCUMENT), with why")


@pytest.mark.parametrize("name", sorted(SCHEMA_BAD))
def test_the_schema_refuses_each_experiment_that_is_bad_in_shape(name: str) -> None:
    paths = _error_paths(_doc(BAD / name))
    assert SCHEMA_BAD[name] in paths, f"the schema refuses {name} at {sorted(paths) or 'nothing'}"


@pytest.mark.parametrize("name", sorted(LOADER_ONLY))
def test_the_schema_leaves_semantic_errors_to_the_loader(name: str) -> None:
    assert _error_paths(_doc(BAD / name)) == set(), f"{name} ({LOADER_ONLY[name]}) is refused by the schema"


BASE = """name: x
duration: 30s
cluster: {brokers: 3}
topics: [{name: t, partitions: 2, replication_factor: 3}]
"""


@pytest.mark.parametrize(("extra", "valid"), [
    ("workload: {producers: [{topic: t, acks: 1, idempotence: false}]}", True),
    ("workload: {producers: [{topic: t, rate: 0}]}", False),
    ("workload: {consumers: [{group: g, topics: t, strategy: sticky}]}", False),
    ("schedule: [{at: 1s, fault: latency, link: client->broker:1, duration: 5s, params: {latency_ms: 5}}]", True),
    ("schedule: [{at: 1s, fault: latency, target: broker:1, duration: 5s, params: {latency_ms: 5}}]", False),
    ("schedule: [{at: 1s, fault: latency, link: client->broker:1, duration: 5s}]", False),
    ("schedule: [{at: 1s, fault: latency, link: client->broker:1, duration: 5s, params: {latency: 5}}]", False),
    ("schedule: [{at: 1, fault: kill, target: broker:1}]", False),
    ("schedule: [{at: 1s, fault: power_loss, targets: [broker:1, broker:2]}]", True),
    ("schedule: [{at: 1s, action: reassign, topic: t, shuffle: true}]", True),
    ("schedule: [{at: 1s, action: reassign, topic: t, shuffle: true, fault: kill}]", False),
    ("cluster: {mode: kraft, controllers: 3, brokers: 3}", True),
    ("cluster: {brokers: 3, kafka: '3.9', reference_bugs: []}", False),
    ("verify: {checks: [delivery], allow: [duplicate], slo: {rebalance: 15s, write_unavailable: null}}", True),
    ("verify: {checks: [deliveries]}", False),
    ("expect: {'*': {fail: [lost_write], why: a weak setting}}", True),
    ("explore: {faults: [kill], per_schedule: [1, 3], durations: [2s, 8s]}", True),
    ("explore: {per_schedule: [1, 2, 3]}", False),
    ("explore: {overlap: 0.8}", True),
    ("explore: {overlap: -0.1}", False),
    ("explore: {overlap: 1.5}", False),
])
def test_the_schema_and_the_loader_agree_on_small_documents(extra: str, valid: bool) -> None:
    text = BASE.replace("cluster: {brokers: 3}\n", "") + extra if extra.startswith("cluster:") else BASE + extra
    try:
        load_experiments_text(text, "small.yaml")
        loads = True
    except ValidationError:
        loads = False
    assert (loads, _error_paths(yaml.safe_load(text)) == set()) == (valid, valid)
