"""`slo.write_unavailable` and `slo.read_unavailable` on Spark give what the in-process evaluator gives
(status, summary, the worst stall per key, the per-fault stalls, the distribution and counters) on the
hand-written stall histories (tests/unit/spark_analysis/test_stall_slos.py states their behaviour) and on
the healthy fixture run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import BY_ID
from spark_analysis.checks.slo.stall_frames import fault_case
from spark_analysis.checks.slo.stalls import stall_fault
from spark_analysis.facts.context import spark_context
from spark_analysis.facts.faults import FaultWindow
from spark_analysis.ingest.load import load_history
from spark_analysis.ingest.runinfo import load_run_info
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import STALL_HISTORIES, scenario, stall_slo_run

pytestmark = [pytest.mark.integration, pytest.mark.spark]

STALL_CHECKS = ("slo.write_unavailable", "slo.read_unavailable")
COMPARED = ("distribution", "samples", "worst", "by_fault", "slo_s", "over_slo", "open_at_end", "stalls", "acks",
            "errors_with_partition", "errors_without_partition", "pending_without_partition", "polls", "groups")


def on_spark(spark: Any, run_dir: Path) -> dict[str, CheckResult]:
    loaded = load_history(spark, run_dir / "history.jsonl")
    ctx = spark_context(load_run_info(run_dir), spark, loaded.events, loaded.type_counts, loaded.end_t)
    try:
        return {c: run_check(BY_ID[c], ctx) for c in STALL_CHECKS}
    finally:
        ctx.close()


def assert_same(spark: Any, run_dir: Path) -> dict[str, CheckResult]:
    ref = {r.check_id: r for r in inprocess_checks(run_dir)}
    got = on_spark(spark, run_dir)
    for check_id in STALL_CHECKS:
        a, b = got[check_id], ref[check_id]
        assert (a.status, a.summary, a.fault) == (b.status, b.summary, b.fault), (check_id, a, b)
        assert {k: a.metrics.get(k) for k in COMPARED} == {k: b.metrics.get(k) for k in COMPARED}, check_id
        assert [(e.get("seq"), e.get("type"), e.get("problem")) for e in a.evidence] == \
            [(e.get("seq"), e.get("type"), e.get("problem")) for e in b.evidence], check_id
    return got


@pytest.mark.parametrize("name", sorted(STALL_HISTORIES))
def test_spark_finds_the_same_stalls_as_the_reference(spark: Any, make_run: Any, name: str) -> None:
    """Against a 3 s SLO for both checks: each history passes or fails alike on both paths, with the same worst
    stall per key (start, end, duration, fault) and the same evidence."""
    got = assert_same(spark, make_run(name, STALL_HISTORIES[name](), run=stall_slo_run(write="3s", read="3s")))
    assert {got[c].status for c in STALL_CHECKS} & {"fail", "pass"}


def test_spark_and_reference_pass_the_healthy_fixture_with_the_same_stalls(spark: Any, make_run: Any) -> None:
    got = assert_same(spark, make_run("healthy", scenario(), run=stall_slo_run(write="1s", read="1s")))
    assert {c: r.status for c, r in got.items()} == {c: "pass" for c in STALL_CHECKS}
    assert [w["key"] for w in got["slo.read_unavailable"].metrics["worst"]] == ["billing orders/0",
                                                                                 "billing orders/1"]


def test_spark_ties_each_stall_to_the_same_fault_as_the_reference_rule(spark: Any) -> None:
    """`stall_frames.fault_case` (Spark SQL) against `stalls.stall_fault` (Python) on a grid of stall starts and
    ends around three windows, one of them open: in force, nearest within the grace before or after, overlapping,
    none."""
    windows = [FaultWindow("1", "kill", "broker 1", 1.0, 2.0), FaultWindow("2", "pause", "broker 2", 10.0, 11.0),
               FaultWindow("3", "kill", "broker 3", 12.0, None)]
    grid = [(s / 4, s / 4 + d) for s in range(0, 64) for d in (0.25, 1.0, 3.0, 9.0, 40.0)]
    frame = spark.createDataFrame(grid, "start double, until double")
    got = [r["fault"] for r in frame.selectExpr(f"{fault_case(windows, 'start', 'until')} AS fault").collect()]
    assert got == [stall_fault(windows, s, u) for s, u in grid]
