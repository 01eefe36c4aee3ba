"""The checker's self-test on the Spark path (docs/kafka-behaviour.md §10): every check fails on its must-fail
history and passes on its must-pass history when the history is loaded and verified through Spark, with the
same statuses as the in-process evaluator for every check. The `scenario()` bug switches run on Spark in
test_checks_on_fixtures.py (`test_check_fails_for_its_bug`, which also compares the reference); here: the healthy
scenario and every case that is not a switch, each distinct history once (the transaction checks share their
must-pass history). The checks that read the bulk events decide their verdicts in one judge for both paths
(`same_words.SAME_WORDS`), so for them the summary, fault, metrics and evidence must be the reference's too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import CHECK_IDS
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.verify import verify_run
from tests.fixtures.histories import scenario, write_run
from tests.fixtures.self_test import SELF_TEST
from tests.integration.spark_analysis.same_words import assert_same_words

pytestmark = [pytest.mark.integration, pytest.mark.spark]

History = tuple[Callable[[], list[dict[str, Any]]], dict[str, Any] | None]


def _histories() -> dict[tuple[str, str], tuple[History, list[str]]]:
    """(which, first check id) -> the history and every check whose `which` history it is (the same builder and
    run.json); the cases not run elsewhere on Spark, and the healthy scenario (every switch case's must-pass)."""
    out: dict[tuple[str, str], tuple[History, list[str]]] = {("pass", "scenario"): ((scenario, None), [])}
    seen: dict[tuple[str, int, str], tuple[str, str]] = {}
    for check_id in CHECK_IDS:
        case = SELF_TEST[check_id]
        for which, build in (("fail", case.fail), ("pass", case.passing)):
            if (which == "fail" and case.switch is not None) or build is scenario:
                continue
            key = (which, id(build), json.dumps(case.run, sort_keys=True))
            if key not in seen:
                seen[key] = (which, check_id)
                out[(which, check_id)] = ((build, case.run), [])
            out[seen[key]][1].append(check_id)
    return out


HISTORIES = _histories()


@pytest.mark.parametrize(("which", "check_id"), sorted(HISTORIES), ids=lambda x: str(x))
def test_spark_path_reaches_the_self_test_status_and_agrees_with_the_reference(
        spark: Any, tmp_path: Path, which: str, check_id: str) -> None:
    (build, run), judged = HISTORIES[(which, check_id)]
    run_dir = write_run(tmp_path / "run", build(), run=run)
    verdict = verify_run(run_dir, spark=spark, write=False)
    got = {r.check_id: r for r in verdict.checks}
    reference = {r.check_id: r for r in inprocess_checks(run_dir)}
    if check_id == "scenario":
        assert all(r.status == "pass" for r in got.values()), {k: r.summary for k, r in got.items()
                                                               if r.status != "pass"}
    for judged_id in judged:
        assert got[judged_id].status == which, (judged_id, got[judged_id].summary)
    assert {k: r.status for k, r in got.items()} == {k: r.status for k, r in reference.items() if k in got}
    assert_same_words(got, reference)
