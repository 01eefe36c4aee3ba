"""While the verdict is due, `verify_run` says what it is doing: reading the history, each check in turn, writing
the reports (the CLI shows it on a status line). On a recorded Apache Kafka run, with the real Spark session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.verify import verify_run
from tests.fixtures.recorded import recorded_runs

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_verify_reports_its_steps_in_order(spark: Any, tmp_path: Path) -> None:
    run = next(r for r in recorded_runs() if r.name.startswith("zk-3.9.2-"))
    steps: list[str] = []
    verdict = verify_run(run.unpack(tmp_path / "run"), spark=spark, progress=steps.append)
    assert steps[0].startswith("reading the history (") and steps[-1].startswith("writing verdict.json")
    checks = [s for s in steps if s.startswith("check ")]
    assert len(checks) == len(verdict.checks) and checks[0].startswith(f"check 1/{len(checks)}: ")
