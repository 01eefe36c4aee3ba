"""The recorded Apache Kafka runs that pass with nothing found (`tests.fixtures.recorded`, not `finds_anomalies`:
the fixed releases of the known-bugs corpus, the runs on which a check once misread Kafka, the reference broker's
clean twins), verified on the Spark path: their recorded verdict, in the in-process evaluator's words
(`recorded_verdict`). `make test` verifies them on the in-process evaluator, which calls the same judges and runs
the same row checks, and holds the Spark path on the runs where a check finds something
(tests/integration/spark_analysis/test_recorded_runs.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.recorded import Recorded, recorded_runs
from tests.integration.spark_analysis.recorded_verdict import assert_recorded_verdict

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize("recorded", [r for r in recorded_runs() if not r.finds_anomalies], ids=lambda r: r.name)
def test_a_recorded_passing_run_passes_on_spark_in_the_in_process_words(recorded: Recorded, spark: Any,
                                                                       tmp_path: Path) -> None:
    assert_recorded_verdict(recorded, spark, tmp_path)
