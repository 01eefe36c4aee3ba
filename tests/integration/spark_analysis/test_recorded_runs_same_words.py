"""The recorded Apache Kafka runs (tests/data/recorded/) on both paths: the checks with one judge for the Spark path
and the in-process evaluator (`same_words.SAME_WORDS`) say the same words on each, the weak-configuration run's
permitted duplicates, overwritten offsets and reorderings included (their statuses against expected.json:
test_recorded_runs.py on Spark, tests/unit/spark_analysis/test_recorded_runs_inprocess.py on the in-process
evaluator)."""

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
def test_a_recorded_run_gets_the_same_words_from_spark_and_the_reference(recorded: Recorded, spark: Any,
                                                                        tmp_path: Path) -> None:
    run_dir = recorded.unpack(tmp_path)
    verdict = verify_run(run_dir, spark=spark, write=False)
    reference = {r.check_id: r for r in inprocess_checks(run_dir)}
    got = {r.check_id: r for r in verdict.checks}
    assert {k: r.status for k, r in got.items()} == {k: r.status for k, r in reference.items() if k in got}
    assert_same_words(got, reference)
