"""The in-process evaluator weighs anomalies against the run's configuration as the Spark checks do
(`checks.shared.permits`, decided in the judges both paths call): a value stored twice by a producer without
idempotence is
permitted, one stored twice by an idempotent producer is a violation; with both in one run the check fails on the
violation alone and counts the permitted one beside it. tests/integration/spark_analysis/test_permits_on_both_paths.py
holds Spark to the same words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spark_analysis.inprocess.evaluator import inprocess_checks
from tests.fixtures.histories import RUN_JSON, Event, scenario, write_run

WEAK = "enable.idempotence=false (producer pa)"


def run_json(second_idempotent: bool = True) -> dict[str, Any]:
    """The fixture's run.json with two producers: `pa` (values 1-7, no idempotence, acks=1) and `pb` (values from 8
    on; idempotent unless `second_idempotent` is False)."""
    run = json.loads(json.dumps(RUN_JSON))
    run["workload"] = {"producers": [
        {"id": "pa", "topic": "orders", "acks": "1", "idempotence": False, "value_base": 1},
        {"id": "pb", "topic": "orders", "acks": "all", "idempotence": second_idempotent, "value_base": 8}]}
    return run


def two_duplicates() -> list[Event]:
    """The fixture with value 7 (pa's) stored twice, and value 8 (pb's, on orders/1) polled again at offset 99 by
    c2 after its last poll."""
    events = scenario(duplicate=True)
    last = max((e for e in events if e["type"] == "poll" and e.get("consumer") == "c2"), key=lambda e: e["t"])
    again = {**next(e for e in events if e["type"] == "poll" and e.get("value") == 8), "offset": 99,
             "t": last["t"] + 0.001, "wall": last["wall"] + 1}
    return sorted([*events, again], key=lambda e: e["t"])


def test_a_duplicate_by_a_producer_without_idempotence_is_permitted_beside_the_violation(tmp_path: Path) -> None:
    got = {r.check_id: r for r in inprocess_checks(write_run(tmp_path / "mixed", two_duplicates(), run=run_json()))}
    dup = got["delivery.duplicate"]
    assert dup.status == "fail" and dup.permitted == (WEAK,), dup.summary
    assert dup.summary.startswith("1 value appear at more than one offset, e.g. value 8 at orders/1@")
    assert dup.summary.endswith(f"(1 more permitted by {WEAK})")
    assert (dup.metrics["duplicated_values"], dup.metrics["permitted"]) == (1, 1)
    assert {e["value"] for e in dup.evidence} == {8}, "the evidence shows the violation alone"


def test_duplicates_all_permitted_pass_naming_the_setting(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "weak", two_duplicates(), run=run_json(second_idempotent=False))
    dup = {r.check_id: r for r in inprocess_checks(run_dir)}["delivery.duplicate"]
    assert dup.status == "pass", dup.summary
    assert dup.summary == ("2 values at two offsets: permitted by enable.idempotence=false (producer pa); "
                           "enable.idempotence=false (producer pb)")
    assert dup.metrics["violations"] == 0 and all(e["permitted"] for e in dup.evidence)
    assert {e["value"] for e in dup.evidence} == {7, 8}
