"""`kafka-chaos run`'s --broker/--kafka/--seed overrides pass the loader's rules before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import EXIT_ERROR, main

ROOT = Path(__file__).resolve().parents[2]


def test_broker_override_that_contradicts_reference_bugs_is_refused_before_any_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", str(ROOT / "tests/data/plugin/controller-kill-short.yaml"), "--broker", "apache-kafka",
                 "--runs-dir", str(tmp_path)])
    assert code == EXIT_ERROR
    err = capsys.readouterr().err
    assert "controller-kill-short.yaml (with --seed/--broker/--kafka)" in err and "cluster.reference_bugs" in err
    assert list(tmp_path.iterdir()) == []


def test_kafka_4_override_is_refused_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(ROOT / "experiments/controller-failover.yaml"), "--kafka", "4.0",
                 "--runs-dir", str(tmp_path)])
    assert code == EXIT_ERROR
    assert "cluster.kafka" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
