"""The in-process evaluator and the Spark path read damaged histories alike (issue 22): the same
lines are skipped and counted (torn, untyped, ill-typed, by event type), and the delivery and
consumer checks reach the same statuses under the damaged-history rule, on the fixture history with
its damage; the checks with one judge for both paths (`same_words.SAME_WORDS`) say the same words."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.ingest.load import load_history
from spark_analysis.inprocess.evaluator import INPROCESS_CHECKS, inprocess_checks, inprocess_damage
from spark_analysis.verify import verify_run
from tests.fixtures.histories import history_lines, ill_typed, scenario, tear_middle, write_lines
from tests.integration.spark_analysis.same_words import assert_same_words

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

EVERY_KIND = [
    '{"t":1.0,"src":"consumer:c9","type":"poll","value":7.0,"offset":1,"partition":0,"topic":"orders"}',
    '{"t":1.0,"src":"consumer:c9","type":"poll","value":"","offset":1,"partition":0,"topic":"orders"}',
    '{"t":"late","src":"consumer:c9","type":"poll","value":1,"offset":1,"partition":0,"topic":"orders"}',
    '{"t":"NaN","src":"admin","type":"probe","name":"x","ok":true}',
    '{"t":1.0,"src":"producer:p9","type":"send.error","value":1,"definite":"true"}',
    '{"t":1.0,"src":"producer:p9","type":"send","value":1,"key":{"k":1},"topic":"orders"}',
    '{"t":1.0,"src":"zk","type":"partition.state","topic":"x","partition":0,"leader":1,"isr":[1,"a"]}',
    '{"t":1.0,"src":"zk","type":"partition.state","topic":"x","partition":0,"leader":"2","isr":[2,null]}',
    '{"t":1.0,"src":"admin","type":"group.state","group":"g9","members":"m1"}',
    '{"t":1.0,"src":"consumer:c9","type":"assign","group":"g9","partitions":["x",0]}',
    '{"t":1.0,"wall":"noon","src":"engine","type":"probe","name":"y","ok":false}',
    '{"t":1.0,"src":"engine","type":null}',
    '{"t":1.0,"src":"engine"}',
    '{"t":1.0,"src":"engine","type":5}',
    '[1,2]',
    '',
    '{"t":3.5,"src":"consumer:c9","type":"poll","val',
    '{"t":1.0,"src":"engine","type":"probe","name":"z","ok":true} trailing',
]
"""One line of each damage the loader knows and of each near miss it accepts (as Spark's reader does)."""


def _with(bug: str = "", **ill: Any) -> Callable[[], list[str]]:
    def lines() -> list[str]:
        events = scenario(**({bug: True} if bug else {}))
        if ill:
            events, _ = ill_typed(events, **ill)
        return history_lines(events)
    return lines


def _every_kind() -> list[str]:
    lines = history_lines(scenario())
    return [*lines[:20], *EVERY_KIND, *lines[20:]]


CASES: dict[str, Callable[[], list[str]]] = {
    "wrong-typed poll value in a fault window": _with(event_type="poll", field="value", value="not-a-number", nth=10),
    "37 torn lines in the middle": lambda: tear_middle(history_lines(scenario()), 37)[0],
    "float ack offset": _with(event_type="ack", field="offset", value=1.5, nth=3),
    "non-integer partition leader": _with(event_type="partition.state", field="leader", value="two"),
    "duplicate and a damaged poll": _with("duplicate", event_type="poll", field="value", value="x", nth=10),
    "lost writes and a damaged group.state": _with("lost", event_type="group.state", field="members", value="m1"),
    "every kind of damage": _every_kind,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reference_and_spark_skip_the_same_lines_and_reach_the_same_statuses(
        spark: Any, tmp_path: Path, case: str) -> None:
    run_dir = write_lines(tmp_path / "run", CASES[case]())
    history = run_dir / "history.jsonl"

    ours, theirs = inprocess_damage(history), load_history(spark, history).damage
    assert ours.skipped > 0 and (ours.total_lines, ours.skipped) == (theirs.total_lines, theirs.skipped)
    assert dict(ours.by_kind) == dict(theirs.by_kind) and dict(ours.by_type) == dict(theirs.by_type)
    # Spark cannot number a line that is not an object (`[1,2]`): compare what it does know.
    assert Counter((d.kind, d.type, d.t) for d in ours.listed) == Counter((d.kind, d.type, d.t) for d in theirs.listed)
    numbered = {d.line for d in theirs.listed if d.line is not None}
    assert numbered <= {d.line for d in ours.listed}

    reference = {r.check_id: r for r in inprocess_checks(run_dir)}
    verdict = verify_run(run_dir, spark=spark, write=False)
    spark_side = {r.check_id: r for r in verdict.checks if r.check_id in INPROCESS_CHECKS}
    assert {k: r.status for k, r in reference.items()} == {k: r.status for k, r in spark_side.items()}, case
    for check_id, r in spark_side.items():  # the damage rule said the same about the same lines
        keys = ("damaged_lines", "damaged_by_type", "damaged_in_fault_windows", "status_without_damage_rule")
        assert {k: r.metrics.get(k) for k in keys} == {k: reference[check_id].metrics.get(k) for k in keys}, (
            check_id, json.dumps(dict(r.metrics), default=str))
    assert_same_words(spark_side, reference)
