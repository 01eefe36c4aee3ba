"""The checker's self-test on the Spark path (docs/kafka-behaviour.md §10): every check fails on its must-fail
history and passes on its must-pass history when the history is loaded and verified through Spark, with the
same statuses as the single-process reference for every check. The `scenario()` bug switches run on Spark in
test_checks_on_fixtures.py (`test_check_fails_for_its_bug`, which also compares the reference); here: the healthy
scenario and every case that is not a switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import CHECK_IDS
from spark_analysis.reference import reference_checks
from spark_analysis.verify import verify_run
from tests.fixtures.histories import scenario, write_run
from tests.fixtures.self_test import SELF_TEST

pytestmark = [pytest.mark.integration, pytest.mark.spark]

HISTORIES = sorted({("fail", c) for c in CHECK_IDS if SELF_TEST[c].switch is None}
                   | {("pass", c) for c in CHECK_IDS if SELF_TEST[c].passing is not scenario}
                   | {("pass", "scenario")})
"""The cases not run elsewhere on Spark; the healthy scenario (every switch case's must-pass) runs once."""


def _events(which: str, check_id: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    if check_id == "scenario":
        return scenario(), None
    case = SELF_TEST[check_id]
    return (case.fail() if which == "fail" else case.passing()), case.run


@pytest.mark.parametrize(("which", "check_id"), HISTORIES, ids=lambda x: str(x))
def test_spark_path_reaches_the_self_test_status_and_agrees_with_the_reference(
        spark: Any, tmp_path: Path, which: str, check_id: str) -> None:
    events, run = _events(which, check_id)
    run_dir = write_run(tmp_path / "run", events, run=run)
    verdict = verify_run(run_dir, spark=spark, write=False)
    got = {r.check_id: r for r in verdict.checks}
    reference = {r.check_id: r.status for r in reference_checks(run_dir)}
    if check_id == "scenario":
        assert all(r.status == "pass" for r in got.values()), {k: r.summary for k, r in got.items()
                                                               if r.status != "pass"}
    else:
        assert got[check_id].status == which, got[check_id].summary
    assert {k: r.status for k, r in got.items()} == {k: s for k, s in reference.items() if k in got}
