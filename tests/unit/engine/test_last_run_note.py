"""What a new run says about the last run under the runs directory (issue 36: "the next run says what it found"):
a run that failed (its disk filled up), or one still marked running whose harness is gone; nothing about a run that
ended, or one whose harness still runs (a second terminal)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.engine.bundle import last_run_note, owner


def _run(runs: Path, name: str, **info: object) -> Path:
    run = runs / name
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(info))
    return run


def test_a_failed_last_run_is_named_with_its_reason(tmp_path: Path) -> None:
    _run(tmp_path, "old", status="completed")
    failed = _run(tmp_path, "new", status="failed", error="no space left on runs/new/history.jsonl: 0 bytes free")
    os.utime(tmp_path / "old" / "run.json", (1, 1))
    assert last_run_note(tmp_path) == (f"the last run here, {failed}, failed: no space left on "
                                       "runs/new/history.jsonl: 0 bytes free")


def test_a_run_left_running_by_a_dead_harness_is_named_with_how_to_verify_it(tmp_path: Path) -> None:
    dead = {"pid": 2**22 + 17, "created": 1.0, "host": owner()["host"]}
    left = _run(tmp_path, "left", status="running", owner=dead)
    note = last_run_note(tmp_path)
    assert note is not None and note.startswith(f"the last run here, {left}, never finished")
    assert note.endswith(f"kafka-chaos verify {left}")


def test_a_run_whose_harness_still_runs_and_a_run_that_ended_say_nothing(tmp_path: Path) -> None:
    _run(tmp_path, "live", status="running", owner=owner())
    assert last_run_note(tmp_path) is None
    _run(tmp_path / "other", "done", status="completed")
    assert last_run_note(tmp_path / "other") is None
    assert last_run_note(tmp_path / "empty") is None
