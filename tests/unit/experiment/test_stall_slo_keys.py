"""The optional stall SLOs (`verify.slo.write_unavailable` / `read_unavailable`): absent means not declared
(None), a declared one is a duration like the others, survives the resolved YAML and reaches run.json, where
the verifiers read it as `ctx.run.slo`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.engine.bundle import RunBundle
from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.dump import dump_experiment
from spark_analysis.ingest.runinfo import load_run_info

MINIMAL = "name: tiny\nduration: 30s\n"


def test_the_stall_slos_are_not_declared_by_default() -> None:
    slo = load_experiment_text(MINIMAL).verify.slo
    assert (slo.write_unavailable, slo.read_unavailable) == (None, None)
    assert (slo.controller_failover, slo.partition_unavailable, slo.rebalance) == (30.0, 40.0, 60.0)
    again = load_experiment_text(MINIMAL + "verify: {slo: {write_unavailable: null}}\n").verify.slo
    assert again.write_unavailable is None


def test_declared_stall_slos_are_durations_and_leave_the_other_slos_at_their_defaults() -> None:
    exp = load_experiment_text(MINIMAL + "verify: {slo: {write_unavailable: 5s, read_unavailable: 1500ms}}\n")
    slo = exp.verify.slo
    assert (slo.write_unavailable, slo.read_unavailable) == (5.0, 1.5)
    assert slo.rebalance == 60.0


@pytest.mark.parametrize(("text", "fragment"), [
    ("verify: {slo: {write_unavailable: 5}}\n", "verify.slo.write_unavailable: must be a duration with a unit"),
    ("verify: {slo: {read_unavailable: 0s}}\n", "verify.slo.read_unavailable: must be positive"),
    ("verify: {slo: {read_unavailble: 5s}}\n", "read_unavailble"),
])
def test_a_bad_stall_slo_is_reported_with_its_field(text: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_experiment_text(MINIMAL + text)
    assert any(fragment in p.render() for p in info.value.problems), [p.render() for p in info.value.problems]


def test_the_resolved_yaml_keeps_a_declared_stall_slo_and_leaves_an_undeclared_one_out() -> None:
    exp = load_experiment_text(MINIMAL + "verify: {slo: {write_unavailable: 5s}}\n")
    text = dump_experiment(exp)
    assert "write_unavailable: 5s" in text and "read_unavailable" not in text
    again = load_experiment_text(text)
    assert again.verify.slo == exp.verify.slo


def test_run_json_carries_only_the_declared_stall_slos_and_the_verifiers_read_them(tmp_path: Path) -> None:
    exp = load_experiment_text(MINIMAL + "verify: {slo: {read_unavailable: 2s}}\n")
    bundle = RunBundle.create(tmp_path, exp, backend="fake", backend_reason="test")
    slo = json.loads((bundle.dir / "run.json").read_text())["verify"]["slo"]
    assert slo["read_unavailable"] == 2.0 and "write_unavailable" not in slo
    info = load_run_info(bundle.dir)
    assert info.slo.get("read_unavailable") == 2.0 and "write_unavailable" not in info.slo
