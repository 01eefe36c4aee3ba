"""The recorded Apache Kafka runs (tests/data/recorded/, `tests.fixtures.recorded`) on the in-process evaluator
(`spark_analysis.inprocess.evaluator`), without Spark: every check gets the status recorded as right for it, and the
run its
status, as on the Spark path (tests/integration/spark_analysis/test_recorded_runs.py). The weak-configuration run's
anomalies are permitted on this path too: the permits (`checks.shared.permits`) are decided in the judges both paths
call."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history.jsonl import iter_lines
from spark_analysis.checks import CHECK_IDS
from spark_analysis.facts.completion import ENDING_TYPES, incompleteness
from spark_analysis.ingest.runinfo import load_run_info
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.verdict import apply_allow, apply_expect, run_status
from tests.fixtures.recorded import Recorded, recorded_runs

WEAK = "zk-3.9.2-weak-correlated-expiry"
PERMITTED_IN_WEAK = {"delivery.duplicate", "delivery.inconsistent_offsets", "delivery.key_order"}
"""What Kafka did under the weak configuration and the configuration permits (its expected.json says why)."""


@pytest.mark.parametrize("recorded", recorded_runs(), ids=lambda r: r.name)
def test_the_reference_gives_a_recorded_run_the_verdict_recorded_as_right_for_it(recorded: Recorded,
                                                                                 tmp_path: Path) -> None:
    run_dir = recorded.unpack(tmp_path)
    run = load_run_info(run_dir)
    results = [r for r in inprocess_checks(run_dir) if run.is_selected(r.check_id)]  # as `verify_run` selects
    expected = recorded.expected
    got = {r.check_id: r for r in results}
    wrong = {k: (got[k].status if k in got else None, v) for k, v in dict(expected["checks"]).items()  # type: ignore[call-overload]
             if k not in got or got[k].status != v}
    assert not wrong, f"{recorded.name}: check (got, expected): {wrong}; summaries: " + "; ".join(
        got[k].summary for k in wrong if k in got)
    assert sorted(c for c in CHECK_IDS if not run.is_selected(c)) == sorted(expected["not_selected"])  # type: ignore[call-overload]
    endings = [line.record for line in iter_lines(run_dir / "history.jsonl")
               if line.record is not None and line.record.get("type") in ENDING_TYPES]
    counted, expectation = apply_expect(apply_allow(results, run), run)
    assert run_status(counted, incompleteness(run, endings), expectation) == expected["status"]
    if recorded.name == WEAK:
        permitted = {r.check_id: r for r in results if r.permitted}
        assert set(permitted) >= PERMITTED_IN_WEAK, sorted(permitted)
        assert all(r.metrics["violations"] == 0 and r.metrics["permitted"] > 0
                   for c, r in permitted.items() if c in PERMITTED_IN_WEAK)


def test_the_weak_configuration_run_is_recorded() -> None:
    assert WEAK in {r.name for r in recorded_runs()}
