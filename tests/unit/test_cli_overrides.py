"""`kafka-chaos run`'s --broker/--kafka/--seed overrides pass the loader's rules before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import EXIT_ERROR, main

ROOT = Path(__file__).resolve().parents[2]


def test_broker_reference_is_refused_saying_it_was_retired_and_what_to_write_before_any_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", str(ROOT / "experiments/controller-failover.yaml"), "--broker", "reference",
              "--runs-dir", str(tmp_path)])
    assert info.value.code == EXIT_ERROR
    err = capsys.readouterr().err
    assert "--broker: the reference broker was retired; use apache-kafka" in err
    assert "tests/data/recorded/reference-*" in err and list(tmp_path.iterdir()) == []


def test_kafka_4_override_is_refused_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(ROOT / "experiments/controller-failover.yaml"), "--kafka", "4.0",
                 "--runs-dir", str(tmp_path)])
    assert code == EXIT_ERROR
    assert "cluster.kafka" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
