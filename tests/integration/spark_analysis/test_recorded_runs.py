"""Recorded Apache Kafka runs (tests/data/recorded/, `tests.fixtures.recorded`), verified by the real verifiers:
each verdict must give every check the status recorded as right for it, and the run status. They are the
known-bugs corpus on its affected and fixed releases, the runs on which a check once misread Kafka, and the runs of
the retired reference broker's bug flags (`reference-<flag>`, and `reference-clean-<experiment>` for each
experiment without a flag): there the checks that own the flag (`owners` in expected.json) must be among the
failures, and every other check must have its recorded status (a flag's consequences, such as the writes an
unclean election truncates, fail their own checks too).

The same verdict is held against the in-process evaluator: the checks with one judge for both paths
(`same_words.SAME_WORDS`) say the same words on each run, the weak-configuration run's permitted duplicates,
overwritten offsets and reorderings included (one Spark verify per run serves both; the in-process statuses
against expected.json are tests/unit/spark_analysis/test_recorded_runs_inprocess.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.verify import verify_run
from tests.fixtures.recorded import Recorded, recorded_runs
from tests.integration.spark_analysis.same_words import assert_same_words

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize("recorded", recorded_runs(), ids=lambda r: r.name)
def test_a_recorded_run_gets_the_verdict_recorded_as_right_for_it_in_the_in_process_evaluators_words(
    recorded: Recorded, spark: Any, tmp_path: Path,
) -> None:
    run_dir = recorded.unpack(tmp_path)
    verdict = verify_run(run_dir, spark=spark, write=False)
    reference = {r.check_id: r for r in inprocess_checks(run_dir)}
    same = {r.check_id: r for r in verdict.checks}
    assert {k: r.status for k, r in same.items()} == {k: r.status for k, r in reference.items() if k in same}
    assert_same_words(same, reference)
    expected = recorded.expected
    got = {c.check_id: c.status for c in verdict.checks}
    wrong = {k: (got.get(k), v) for k, v in dict(expected["checks"]).items() if got.get(k) != v}  # type: ignore[call-overload]
    assert not wrong, f"{recorded.name}: check (got, expected): {wrong}; summaries: " + "; ".join(
        c.summary for c in verdict.checks if c.check_id in wrong)
    assert verdict.status == expected["status"], f"{recorded.name}: {expected.get('why', '')}"
    assert sorted(verdict.not_selected) == sorted(expected["not_selected"])  # type: ignore[arg-type]
    owners = list(expected.get("owners") or ())  # type: ignore[call-overload]
    assert all(got.get(o) == "fail" for o in owners), f"{recorded.name}: owners {owners} must fail: {got}"
    permitted = {c.check_id: c.permitted for c in verdict.checks}
    for check_id, setting in dict(expected.get("permitted") or {}).items():  # type: ignore[call-overload]
        assert any(setting in p for p in permitted.get(check_id, ())), (recorded.name, check_id, permitted)
