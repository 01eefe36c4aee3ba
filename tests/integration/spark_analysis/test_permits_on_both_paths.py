"""Anomalies weighed against the configuration (`checks.shared.permits`) on the Spark path and the in-process evaluator:
with a permitted duplicate beside a violation, Spark judges the violation alone from its own sample of the
violations (`frames.weighed`), and both paths say the same words (tests/unit/spark_analysis/test_inprocess_permits.py
states the behaviour on the in-process evaluator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.verify import verify_run
from tests.fixtures.histories import write_run
from tests.integration.spark_analysis.same_words import assert_same_words
from tests.unit.spark_analysis.test_inprocess_permits import WEAK, run_json, two_duplicates

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize("second_idempotent", [True, False], ids=["mixed", "all-permitted"])
def test_permitted_and_violating_duplicates_say_the_same_on_both_paths(spark: Any, tmp_path: Path,
                                                                      second_idempotent: bool) -> None:
    run_dir = write_run(tmp_path / "run", two_duplicates(), run=run_json(second_idempotent))
    got = {r.check_id: r for r in verify_run(run_dir, spark=spark, write=False).checks}
    reference = {r.check_id: r for r in inprocess_checks(run_dir)}
    assert got["delivery.duplicate"].status == ("fail" if second_idempotent else "pass")
    assert WEAK in got["delivery.duplicate"].permitted
    assert {k: r.status for k, r in got.items()} == {k: r.status for k, r in reference.items() if k in got}
    assert_same_words(got, reference)
