"""The `kafka-chaos` command line: exit codes and messages of validate, faults and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.faults.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[2]


def test_validate_every_shipped_experiment_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in (ROOT / "experiments").glob("*.yaml"))
    assert len(files) >= 4
    assert main(["validate", *files]) == 0
    assert capsys.readouterr().out.count(": valid") == len(files)


def test_validate_each_broken_file_exits_two_naming_line_and_field(capsys: pytest.CaptureFixture[str]) -> None:
    for path in sorted((ROOT / "tests/data/bad_experiments").glob("*.yaml")):
        assert main(["validate", str(path)]) == 2, path.name
        err = capsys.readouterr().err
        assert f"{path}:" in err and "invalid" in err


def test_faults_lists_every_kind_with_backend_actions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["faults"]) == 0
    out = capsys.readouterr().out
    for name in CATALOG:
        assert f"\n{name}: " in f"\n{out}"
    assert out.count("    process: ") == len(CATALOG) and out.count("    containers: ") == len(CATALOG)


def test_run_with_an_invalid_file_exits_two_before_touching_a_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "tests/data/bad_experiments/unknown_fault.yaml"), "--backend", "process"]) == 2
    assert "unknown fault kind" in capsys.readouterr().err


def test_verify_of_a_non_run_directory_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_unknown_backend_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", str(ROOT / "experiments/controller-failover.yaml"), "--backend", "kubernetes"])
    assert info.value.code == 2


def test_validate_lists_the_variants_of_a_matrix_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ROOT / "tests/data/plugin/controller-kill-short.yaml")]) == 0
    assert "2 matrix variants: reference_bugs=none, reference_bugs=skip_epoch_bump" in capsys.readouterr().out


def test_run_with_an_unknown_variant_exits_two_listing_the_variants(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "tests/data/plugin/controller-kill-short.yaml")
    assert main(["run", path, "--variant", "reference_bugs=all", "--backend", "process"]) == 2
    err = capsys.readouterr().err
    assert "has 2 variants: reference_bugs=none, reference_bugs=skip_epoch_bump" in err and "reference_bugs=all" in err
