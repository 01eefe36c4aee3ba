"""Recorded Apache Kafka runs (tests/data/recorded/, `tests.fixtures.recorded`), verified by the real verifiers:
each verdict must give every check the status recorded as right for it, and the run status. They are the
known-bugs corpus on its affected and fixed releases, the runs on which a check once misread Kafka, and the runs of
the retired reference broker's bug flags (`reference-<flag>`, and `reference-clean-<experiment>` for each
experiment without a flag): there the checks that own the flag (`owners` in expected.json) must be among the
failures, and every other check must have its recorded status (a flag's consequences, such as the writes an
unclean election truncates, fail their own checks too).

The same verdict is held against the in-process evaluator: the checks with one judge for both paths
(`same_words.SAME_WORDS`) say the same words on each run, the weak-configuration run's permitted duplicates,
overwritten offsets and reorderings included (one Spark verify per run serves both; `recorded_verdict`).

Here: the runs where a check finds something (`Recorded.finds_anomalies`: a failure, or what the configuration
permits), where Spark's own plans must find it. The passing runs are verified on Spark by the nightly
(tests/nightly/test_recorded_passing_runs_on_spark.py); `make test` verifies every run, passing ones too, on the
in-process evaluator (tests/unit/spark_analysis/test_recorded_runs_inprocess.py), which runs the same judges and
row checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.recorded import Recorded, recorded_runs
from tests.integration.spark_analysis.recorded_verdict import assert_recorded_verdict

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize("recorded", [r for r in recorded_runs() if r.finds_anomalies], ids=lambda r: r.name)
def test_a_recorded_run_where_a_check_finds_something_gets_its_recorded_verdict_in_the_in_process_words(
    recorded: Recorded, spark: Any, tmp_path: Path,
) -> None:
    assert_recorded_verdict(recorded, spark, tmp_path)


def test_the_spark_path_in_make_test_covers_each_known_bug_and_reference_flag() -> None:
    chosen = {r.name for r in recorded_runs() if r.finds_anomalies}
    every = {r.name for r in recorded_runs()}
    assert {n for n in every if n.endswith("-affected")} <= chosen
    assert {n for n in every if n.startswith("reference-") and not n.startswith("reference-clean-")} <= chosen
