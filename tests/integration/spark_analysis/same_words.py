"""The checks that decide their verdict in one judge for the Spark path and the in-process evaluator
(`spark_analysis.inprocess.evaluator`): both gather the same facts and call the same judge, so each must say the same
words on
both paths (status, summary, fault, metrics, evidence and the settings that permit what it found)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spark_analysis.result import CheckResult

SAME_WORDS = ("delivery.lost_write", "delivery.duplicate", "delivery.inconsistent_offsets", "delivery.key_order",
              "consumer.nonmonotonic_poll", "consumer.poll_skip", "group.commit_monotonic", "slo.write_unavailable",
              "slo.read_unavailable", "txn.aborted_read", "txn.atomic_visibility", "txn.lost_commit",
              "txn.zombie_fenced", "txn.exactly_once_pipeline")
"""Every check that reads the bulk events: one judge for both paths (`checks.delivery.judge`, `placement_judge`,
`checks.consumer.judge`, `checks.group.judge`, `checks.slo.stall`, `checks.txn.judge`, `checks.txn.eos_judge`)."""


def words(result: CheckResult) -> dict[str, Any]:
    """What a check says, without its timing, nor whether the experiment's `verify.allow` or `expect:` names it
    (marked on the verdict by `spark_analysis.verdict` after the checks ran, not by a check; the reference has no
    verdict)."""
    data = result.to_json()
    for marked_later in ("duration_s", "allowed", "expected"):
        data.pop(marked_later)
    return data


def assert_same_words(spark: Mapping[str, CheckResult], reference: Mapping[str, CheckResult],
                      ids: Iterable[str] = SAME_WORDS) -> None:
    """Each of `ids` that Spark answered says the same words on the reference."""
    for check_id in ids:
        if check_id in spark:
            got, ref = words(spark[check_id]), words(reference[check_id])
            assert got == ref, (check_id, {k: (got.get(k), ref.get(k)) for k in got.keys() | ref.keys()
                                           if got.get(k) != ref.get(k)})
