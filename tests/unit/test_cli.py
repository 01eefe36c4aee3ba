"""The `kafka-chaos` command line: exit codes and messages of validate, faults and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.faults.catalog import CATALOG, OPERATIONS
from spark_analysis.verdict import Verdict

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
    assert out.count("    process: ") == len(CATALOG)
    assert out.count("    containers: ") == len(CATALOG) + sum("containers" in op.how for op in OPERATIONS.values())


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
    assert "2 matrix variants: controller_failover=10s, controller_failover=1s" in capsys.readouterr().out


def test_run_with_an_unknown_variant_exits_two_listing_the_variants(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "tests/data/plugin/controller-kill-short.yaml")
    assert main(["run", path, "--variant", "controller_failover=2s", "--backend", "process"]) == 2
    err = capsys.readouterr().err
    assert "has 2 variants: controller_failover=10s, controller_failover=1s" in err and "controller_failover=2s" in err


# -- issue 22: `verify` and `run` print why a run cannot pass and the history lines they skipped --------

def _incomplete_verdict() -> Verdict:
    from spark_analysis.result import passed

    incomplete = {"status": "running", "missing_phases": ["heal", "drain", "teardown"],
                  "reason": "the run never finished: run.json still says 'running' and the history has no run.end "
                            "(harness killed?); phases never reached: heal, drain, teardown"}
    history = {"lines": 412, "events": 375, "skipped_lines": 37,
               "damage": {"skipped_lines": 37, "by_kind": {"torn": 37}, "by_type": {"poll": 30, "?": 7},
                          "sample": [{"line": 120, "t": 9.1, "kind": "torn", "type": "poll"}]}}
    return Verdict(status="unknown", checks=(passed("controller.unique", "one controller at a time"),),
                   run={"experiment": "fixture"}, history=history, incomplete=incomplete)


def _fake_verify(monkeypatch: pytest.MonkeyPatch, verdict: Verdict) -> list[Path]:
    import spark_analysis.verify

    seen: list[Path] = []

    def fake(run_dir: Path, **_: object) -> Verdict:
        seen.append(Path(run_dir))
        return verdict

    monkeypatch.setattr(spark_analysis.verify, "verify_run", fake)
    return seen


def test_verify_of_an_incomplete_damaged_run_prints_why_and_the_skipped_lines_and_exits_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "history.jsonl").write_text("{}\n")
    seen = _fake_verify(monkeypatch, _incomplete_verdict())
    assert main(["verify", str(tmp_path)]) == 1
    assert seen == [tmp_path]
    out = capsys.readouterr().out.splitlines()
    assert ("damaged history: 37 of 412 history lines skipped (37 torn; types poll 30, ? 7), first at line 120"
            in out)
    assert ("incomplete run (running), cannot pass: the run never finished: run.json still says 'running' and the "
            "history has no run.end (harness killed?); phases never reached: heal, drain, teardown") in out
    assert out[-1].startswith("verdict: unknown  report: ")


def test_verify_of_a_complete_intact_run_prints_no_such_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    (tmp_path / "history.jsonl").write_text("{}\n")
    clean = dataclasses.replace(_incomplete_verdict(), status="pass", incomplete=None,
                                history={"lines": 412, "events": 412, "skipped_lines": 0})
    _fake_verify(monkeypatch, clean)
    assert main(["verify", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "damaged history" not in out and "incomplete run" not in out and "verdict: pass" in out


def _run_one_with(result_status: str, error: str, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch, warm: bool = False) -> tuple[int, list[Path]]:
    import argparse
    import types

    import harness.engine.runner
    from harness.cli import _run_one
    from harness.engine.interrupts import INTERRUPTS
    from harness.engine.runner import RunResult

    INTERRUPTS.reset()
    run_dir = tmp_path / "fixture-run"
    run_dir.mkdir()
    monkeypatch.setattr(harness.engine.runner, "run_experiment", lambda *a, **k: RunResult(
        run_dir, result_status, error))
    seen = _fake_verify(monkeypatch, _incomplete_verdict())
    exp = types.SimpleNamespace(variant="", source="fixture.yaml", seed=7, cluster=types.SimpleNamespace(broker="auto"))
    backend = types.SimpleNamespace(name="process")
    args = argparse.Namespace(runs_dir=str(tmp_path), no_verify=False, no_warmup=not warm, spark_master=None)
    return _run_one(exp, backend, "test", args), seen  # type: ignore[arg-type]


def test_run_prints_why_a_run_that_did_not_complete_cannot_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that failed on its own (no signal) is verified, and the CLI says why it cannot pass."""
    code, seen = _run_one_with("crashed", "backend error: broker:2 did not start", tmp_path, monkeypatch)
    assert code == 2 and seen == [tmp_path / "fixture-run"]
    out = capsys.readouterr().out
    assert "run crashed: " in out and "incomplete run (running), cannot pass: " in out
    assert "damaged history: 37 of 412" in out and "reproduce: kafka-chaos run fixture.yaml" in out


def test_a_run_whose_record_could_not_be_written_is_not_verified_and_says_why_and_what_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A full disk (`failed`): verifying would write to the same full disk; exit 2 with the reason on stderr."""
    reason = "no space left on runs/x/history.jsonl: 0 bytes free"
    code, seen = _run_one_with("failed", reason, tmp_path, monkeypatch)
    assert code == 2 and seen == []
    captured = capsys.readouterr()
    assert f"error: {reason}" in captured.err
    assert f"make room, then: kafka-chaos verify {tmp_path / 'fixture-run'}" in captured.out


def test_an_interrupted_run_is_not_verified_and_says_how_to_verify_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """After a signal the CLI exits promptly: no Spark verification, exit 2, and the command to verify later."""
    code, seen = _run_one_with("interrupted", "interrupted by SIGTERM", tmp_path, monkeypatch)
    assert code == 2 and seen == []
    out = capsys.readouterr().out
    assert "run interrupted: " in out and "interrupted by SIGTERM" in out
    assert f"verify later with: kafka-chaos verify {tmp_path / 'fixture-run'}" in out
    assert "reproduce: kafka-chaos run fixture.yaml" in out



class _FakeWarmup:
    """Stands in for `spark_analysis.warmup.Warmup` (no Spark here): records what the CLI did with it."""

    calls: list[str] = []
    started = True

    def __init__(self, spark_master: str | None) -> None:
        self.calls.append(f"start {spark_master}")

    def hear_phase(self, name: str) -> None:
        self.calls.append(f"phase {name}")

    def abandon(self) -> None:
        self.calls.append("abandon")

    def __enter__(self) -> _FakeWarmup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.calls.append("exit")

    def wait(self) -> object:
        from spark_analysis.warmup import WarmupResult

        self.calls.append("wait")
        return WarmupResult(True, 4.2)


def test_run_waits_for_the_background_warmup_before_verifying_and_says_how_long_it_took(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import spark_analysis.warmup

    monkeypatch.setattr(spark_analysis.warmup, "Warmup", _FakeWarmup)
    _FakeWarmup.calls = []
    _, seen = _run_one_with("completed", "", tmp_path, monkeypatch, warm=True)
    assert seen == [tmp_path / "fixture-run"] and _FakeWarmup.calls == ["start None", "wait", "exit"]
    assert "verifier warmed in the background in 4.2 s" in capsys.readouterr().out


@pytest.mark.parametrize("status", ["interrupted", "failed"])
def test_a_run_that_is_not_verified_abandons_the_warmup_instead_of_waiting_for_it(
        status: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import spark_analysis.warmup

    monkeypatch.setattr(spark_analysis.warmup, "Warmup", _FakeWarmup)
    _FakeWarmup.calls = []
    code, seen = _run_one_with(status, "interrupted by SIGINT", tmp_path, monkeypatch, warm=True)
    assert code == 2 and seen == [] and _FakeWarmup.calls == ["start None", "abandon", "exit"]

def test_progress_lines_carry_no_source_location(capsys: pytest.CaptureFixture[str]) -> None:
    """A user reads "phase chaos", not "phase chaos  cli_progress.py:23"."""
    from harness.cli_progress import RichProgress

    progress = RichProgress()
    progress.phase("chaos")
    progress.close()
    err = capsys.readouterr().err
    assert "phase chaos" in err and ".py:" not in err


def test_verify_progress_prints_each_step_but_the_per_check_ones_off_a_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    """In a CI log the verify says what it waits for (Spark, the history, the reports), without 33 check lines."""
    from harness.cli_progress import VerifyProgress

    with VerifyProgress() as progress:
        for step in ("starting Spark", "reading the history (1.2 MB)", "check 1/33: controller.unique",
                     "writing verdict.json, report.html, junit.xml"):
            progress(step)
    err = capsys.readouterr().err
    assert "verifying: starting Spark" in err and "verifying: writing verdict.json" in err
    assert "controller.unique" not in err
