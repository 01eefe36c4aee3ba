"""A completed run whose consumer group was still behind when the drain ended (`group.drain` not ok: a stuck client,
as librdkafka 2.1.0's consumer after a leader change) leaves the acked writes beyond what the group reached unseen,
not lost: `delivery.lost_write` is unknown, never a fail blamed on the brokers. After a drain that caught up they are
lost, and a write the consumers read past is lost either way. In-process evaluator; the Spark path gathers the same
facts (`tests/integration/spark_analysis/test_checks_on_fixtures.py` keeps the two paths agreeing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult
from tests.fixtures.histories import WALL0, ClientHistory, python_context, write_run


def _history(drain_ok: bool | None, *, read_past: bool = False) -> list[dict[str, Any]]:
    """Three acked writes on orders/0; the group polls the first (and, with `read_past`, the third); with
    `drain_ok` not None, the group's drain ends with that outcome."""
    h = ClientHistory()
    values = [h.write(1.0 + n, 1.1 + n) for n in range(3)]
    h.poll(1.5, values[0])
    if read_past:
        h.poll(3.5, values[2])
    events = h.events()
    if drain_ok is not None:
        events.insert(-1, {"t": 19.0, "wall": WALL0 + 19000, "src": "group:g1", "type": "group.drain", "group": "g1",
                           "ok": drain_ok, "detail": None if drain_ok else "member 0: orders/0: read up to 1, end 3"})
    return events


def _lost_write(tmp_path: Path, events: list[dict[str, Any]]) -> CheckResult:
    results = inprocess_checks(write_run(tmp_path / "run", events))
    (result,) = [r for r in results if r.check_id == "delivery.lost_write"]
    return result


def test_acked_writes_beyond_a_group_still_behind_at_the_drains_end_are_unseen_not_lost(tmp_path: Path) -> None:
    result = _lost_write(tmp_path, _history(drain_ok=False))
    assert result.status == "unknown", result.summary
    assert result.metrics["unseen"] == 2 and result.metrics["lost"] == 0
    assert "had not caught up by the drain's end" in result.summary


def test_after_a_drain_that_caught_up_an_acked_write_never_polled_is_lost(tmp_path: Path) -> None:
    assert _lost_write(tmp_path, _history(drain_ok=True)).status == "fail"
    assert _lost_write(tmp_path / "old", _history(drain_ok=None)).status == "fail", "histories before group.drain"


def test_a_write_the_group_read_past_is_lost_even_when_the_drain_ended_behind(tmp_path: Path) -> None:
    result = _lost_write(tmp_path, _history(drain_ok=False, read_past=True))
    assert result.status == "fail" and result.metrics["lost"] == 1


def test_the_context_is_drained_only_when_completed_and_no_group_drain_ended_behind() -> None:
    assert python_context(_history(drain_ok=True)).drained
    assert python_context(_history(drain_ok=None)).drained
    assert not python_context(_history(drain_ok=False)).drained
