"""`delivery.fatal_error` and transactional fences (`txn.fenced`): a fence after the transaction outlived
transaction.timeout.ms is what Kafka does and passes; a fence within it, or with no transaction open, fails."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks import BY_ID
from spark_analysis.result import run_check
from tests.fixtures.histories import python_context, scenario


def _fenced(open_ms: int | None, timeout_ms: int = 3000) -> dict[str, Any]:
    return {"t": 12.0, "src": "producer:p1", "type": "txn.fenced", "producer": "p1", "transactional_id": "p1-tx",
            "txn": None if open_ms is None else 7, "error": "_FENCED", "open_ms": open_ms, "timeout_ms": timeout_ms,
            "error_detail": "transactional producer fenced by newer producer instance"}


def _verdict(*extra: dict[str, Any]) -> Any:
    events = sorted([*scenario(), *extra], key=lambda e: e["t"])
    return run_check(BY_ID["delivery.fatal_error"], python_context(events))


def test_a_fence_after_the_transaction_timeout_passes_and_is_counted() -> None:
    result = _verdict(_fenced(7149))
    assert result.status == "pass", result.summary
    assert result.metrics["fenced_after_timeout"] == 1 and "1 transactional session fenced" in result.summary


def test_a_fence_within_the_transaction_timeout_fails_naming_how_long_the_transaction_was_open() -> None:
    result = _verdict(_fenced(1200))
    assert result.status == "fail"
    want = "p1: fenced after its transaction was open 1200 ms, within transaction.timeout.ms (3000 ms)"
    assert want in result.summary
    assert result.evidence[0]["type"] == "txn.fenced"


def test_a_fence_with_no_transaction_open_fails() -> None:
    result = _verdict(_fenced(None))
    assert result.status == "fail" and "fenced with no transaction open" in result.summary


def _clock_step(start: float, end: float, offset_s: int) -> list[dict[str, Any]]:
    effect = {"nodes": [{"role": "broker", "id": 1}], "down": False, "graceful": False, "unreachable": [],
              "links": [], "toxics": [], "clocks": [{"role": "broker", "id": 1, "offset_s": offset_s}]}
    return [{"t": start, "src": "engine", "type": "fault.start", "fault_id": 0, "kind": "clock_skew",
             "target": ["broker:1"], "effect": effect},
            {"t": end, "src": "engine", "type": "fault.end", "fault_id": 0, "kind": "clock_skew",
             "target": ["broker:1"]}]


def test_a_fence_within_the_timeout_while_a_clock_was_stepped_ahead_passes_and_says_so() -> None:
    """The coordinator measures a transaction's timeout on its wall clock (TransactionStateManager
    .timedOutTransactions), so a clock stepped an hour ahead makes it due at once (seen in clock-skew.yaml)."""
    result = _verdict(_fenced(1245), *_clock_step(11.5, 20.0, 3600))
    assert result.status == "pass", result.summary
    assert result.metrics["fenced_by_clock_step"] == 1 and "clock stepped ahead" in result.summary


def test_a_clock_stepped_back_or_before_the_transaction_opened_explains_no_fence() -> None:
    assert _verdict(_fenced(1245), *_clock_step(11.5, 20.0, -3600)).status == "fail"
    assert _verdict(_fenced(1245), *_clock_step(1.0, 3.0, 3600)).status == "fail"
