"""Transactional records on the Spark path, beside the self-test's histories (test_self_test_spark.py): the delivery,
consumer and transaction checks reach the reference's statuses (and, for the `txn.*` checks, its words) on a run
whose read_committed group and pipeline skip aborted records while a read_uncommitted group wrongly skips them
too, on a run cut short before committed records were read, and on a run of a zombie and pipelines with every
fault `txn.zombie_fenced` and `txn.exactly_once_pipeline` know; the word bit sets and the per-value frame count
transactional records alike. tests/unit/spark_analysis/test_txn_checks.py and test_txn_eos_checks.py state the
behaviour on the reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import BY_ID
from spark_analysis.checks.delivery.checks import LOST_COUNTERS
from spark_analysis.checks.shared.bitsets import write_counters
from spark_analysis.checks.shared.frames import per_value_stats
from spark_analysis.facts.context import spark_context
from spark_analysis.ingest.load import load_history
from spark_analysis.ingest.runinfo import load_run_info
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult, run_check
from spark_analysis.session.spark_session import SMALL_RUN_CONF, scoped_conf
from tests.fixtures.histories import write_run
from tests.fixtures.histories_txn import (
    CRASHED_RUN,
    PIPELINE_FAULTS,
    ZOMBIE_FAULTS,
    aborted_read_history,
    eos_history,
    lost_commit_history,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CHECKS = ("delivery.lost_write", "delivery.duplicate", "delivery.inconsistent_offsets", "delivery.key_order",
          "consumer.nonmonotonic_poll", "consumer.poll_skip", "slo.read_unavailable", "txn.aborted_read",
          "txn.atomic_visibility", "txn.lost_commit", "txn.zombie_fenced", "txn.exactly_once_pipeline")


def on_spark(spark: Any, run_dir: Path) -> tuple[dict[str, CheckResult], dict[str, int], dict[str, int]]:
    """The CHECKS on Spark, and the lost-write counters by the word bit sets and by the per-value frame."""
    with scoped_conf(spark, SMALL_RUN_CONF):  # as `verify_run` verifies a small history
        loaded = load_history(spark, run_dir / "history.jsonl")
        events = loaded.events.coalesce(1).cache()
        ctx = spark_context(load_run_info(run_dir), spark, events, loaded.type_counts, loaded.end_t)
        try:
            results = {c: run_check(BY_ID[c], ctx) for c in CHECKS}
            keys = (*LOST_COUNTERS, "values_seen")
            fast, slow = write_counters(ctx), per_value_stats(ctx)
            return results, {k: fast[k] for k in keys}, {k: int(slow[k] or 0) for k in keys}
        finally:
            ctx.close()
            events.unpersist()


def agree(spark: Any, run_dir: Path) -> dict[str, CheckResult]:
    got, fast, slow = on_spark(spark, run_dir)
    ref = {r.check_id: r for r in inprocess_checks(run_dir)}
    assert {c: r.status for c, r in got.items()} == {c: ref[c].status for c in CHECKS}
    for c in CHECKS:
        if c.startswith("txn."):
            assert (got[c].summary, dict(got[c].metrics), [dict(e) for e in got[c].evidence]) == (
                ref[c].summary, dict(ref[c].metrics), [dict(e) for e in ref[c].evidence]), c
    assert fast == slow
    return got


def test_aborted_records_skipped_by_read_committed_consumers_only_fail_the_read_uncommitted_skip(
        spark: Any, tmp_path: Path) -> None:
    """`ledger` (read_committed) and the pipeline `enrich` read past txn 1's aborted records: no lost write, no
    skip, no aborted read; `audit` (read_uncommitted) skips them as well: a poll skip of a1's only."""
    got = agree(spark, write_run(tmp_path / "run", aborted_read_history(audit_skips=True, pipeline=True)))
    # enrich's pipe.reads name transactions no event ends: nothing lies below offsets it committed
    assert {c: r.status for c, r in got.items() if r.status != "pass"} == {
        "consumer.poll_skip": "fail", "txn.exactly_once_pipeline": "unknown"}
    assert {e.get("consumer") for e in got["consumer.poll_skip"].evidence} == {"a1"}
    lost = got["delivery.lost_write"].metrics
    assert (lost["acked"], lost["txn_aborted_records"], lost["lost"]) == (4, 2, 0)
    assert got["txn.atomic_visibility"].metrics["group_transactions_judged"] == 4, "ledger and enrich, 2 txns each"


def test_committed_records_not_reached_before_a_crash_are_unseen_on_spark_too(spark: Any, tmp_path: Path) -> None:
    got = agree(spark, write_run(tmp_path / "run", lost_commit_history(completed=False), run=CRASHED_RUN))
    assert (got["txn.lost_commit"].status, got["delivery.lost_write"].status) == ("unknown", "unknown")
    assert got["txn.lost_commit"].metrics["unseen"] == 2


def test_a_zombie_and_pipelines_with_every_fault_fail_on_spark_as_on_the_reference(spark: Any, tmp_path: Path) -> None:
    """One run for every failure kind (each pipeline judged on its own): the words, metrics and evidence are the
    reference's, and `delivery.lost_write` judges the pipelines' input topic as read (by their pipe.reads)."""
    got = agree(spark, write_run(tmp_path / "run", eos_history(*PIPELINE_FAULTS, *ZOMBIE_FAULTS)))
    assert (got["txn.zombie_fenced"].status, got["txn.exactly_once_pipeline"].status) == ("fail", "fail")
    metrics = got["txn.exactly_once_pipeline"].metrics
    assert {k: metrics[k] for k in ("processed_twice", "lost", "offset_mismatches", "outputs_from_aborted")} == {
        "processed_twice": 2, "lost": 2, "offset_mismatches": 2, "outputs_from_aborted": 1}
    assert got["delivery.lost_write"].status == "pass"
    assert got["delivery.lost_write"].metrics["unverifiable_no_consumer"] == 27, "only the pipelines' outputs"
