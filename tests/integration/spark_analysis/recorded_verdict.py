"""What the Spark verifiers must say on a recorded Apache Kafka run (`tests.fixtures.recorded`): every check the
status recorded as right for it, the run its status, the owners of a retired reference-broker flag among the
failures, the permits recorded, and the same words as the in-process evaluator for the checks with one judge
for both paths (`same_words.SAME_WORDS`). One Spark verify per run serves both. `make test` holds it on the runs
where a check finds something (`test_recorded_runs.py`), the nightly on the passing rest
(`tests/nightly/test_recorded_passing_runs_on_spark.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.verify import verify_run
from tests.fixtures.recorded import Recorded
from tests.integration.spark_analysis.same_words import assert_same_words


def assert_recorded_verdict(recorded: Recorded, spark: Any, tmp_path: Path) -> None:
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
