"""The small-run mode of `verify_run` (history cached in memory as one partition, interpreted expressions,
no AQE, one shuffle partition) reaches exactly the verdict of the Parquet-backed mode, timeline included,
and leaves the session's settings as it found them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.session.spark_session import SMALL_RUN_CONF
from spark_analysis.verify import verify_run
from tests.fixtures.histories import BUGS, scenario

pytestmark = [pytest.mark.integration, pytest.mark.spark]

BROKEN = dict.fromkeys(BUGS, True)
"""Every bug switch of the fixture at once: most checks fail, with evidence."""


def _comparable(run_dir: Path, spark: Any, small_run_bytes: int) -> dict[str, Any]:
    """verify.json's content without what measures time (the analysis block, each check's duration)."""
    data = verify_run(run_dir, spark=spark, write=False, small_run_bytes=small_run_bytes).to_json()
    data.pop("analysis")
    for check in data["checks"]:
        check.pop("duration_s")
    return data


def test_small_run_mode_gives_the_verdict_of_the_parquet_backed_mode(spark: Any, make_run: Any) -> None:
    """Every check's status, summary, metrics and evidence, the faults and the timeline are the same (on the
    fixture with every bug on: most checks fail, with evidence, and the passing paths run too)."""
    run_dir = make_run("small-broken", scenario(**BROKEN))
    small = _comparable(run_dir, spark, small_run_bytes=1 << 40)
    large = _comparable(run_dir, spark, small_run_bytes=0)
    assert small["status"] == "fail"
    assert small == large


def test_small_run_mode_restores_the_session_settings(spark: Any, make_run: Any) -> None:
    """The settings the small-run mode changes are back to what they were after the verify."""
    before = {key: spark.conf.get(key, None) for key in SMALL_RUN_CONF}
    verify_run(make_run("restore", scenario()), spark=spark, write=False)
    assert {key: spark.conf.get(key, None) for key in SMALL_RUN_CONF} == before
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty(), "the cached events were released"
