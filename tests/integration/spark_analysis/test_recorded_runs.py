"""Recorded Apache Kafka runs (tests/data/recorded/, `tests.fixtures.recorded`), verified by the real verifiers:
each verdict must give every check the status recorded as right for it, and the run status. They are the
known-bugs corpus on its affected and fixed releases, the runs on which a check once misread Kafka, and the runs of
the retired reference broker's bug flags (`reference-<flag>`, and `reference-clean-<experiment>` for each
experiment without a flag): there the checks that own the flag (`owners` in expected.json) must be among the
failures, and every other check must have its recorded status (a flag's consequences, such as the writes an
unclean election truncates, fail their own checks too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.verify import verify_run
from tests.fixtures.recorded import Recorded, recorded_runs

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize("recorded", recorded_runs(), ids=lambda r: r.name)
def test_a_recorded_run_gets_the_verdict_recorded_as_right_for_it(recorded: Recorded, spark: Any,
                                                                  tmp_path: Path) -> None:
    verdict = verify_run(recorded.unpack(tmp_path), spark=spark)
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
