"""The pipeline gives a session up when librdkafka's send_offsets_to_transaction blocks past its timeout
(librdkafka#5456/#5511): fake clients stand in for librdkafka here, because the hang cannot be provoked on
demand; the blocking call is the fake's."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.history.jsonl import record_of
from harness.workload import pipeline
from harness.workload.pipeline import HungCall, PipelineWorkload, call_bounded


class FakeMessage:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def value(self) -> bytes:
        return str(100 + self._offset).encode()

    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


class FakeProducer:
    """Begins, produces and blocks in send_offsets_to_transaction until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.calls.append(f"produce {topic}")

    def poll(self, timeout: float = 0) -> int:
        return 0

    def send_offsets_to_transaction(self, positions: Any, metadata: Any, timeout: float) -> None:
        self.calls.append("send_offsets")
        self.release.wait(30)

    def commit_transaction(self, timeout: float) -> None:  # pragma: no cover - must not be reached
        self.calls.append("commit")


class FakeConsumer:
    def committed(self, tps: Any, timeout: float) -> list[Any]:  # it answers (common.answers)
        return []

    def assignment(self) -> list[Any]:
        return []

    def position(self, tps: Any) -> list[Any]:
        return []

    def consumer_group_metadata(self) -> object:
        return object()


def test_call_bounded_returns_raises_the_calls_error_or_reports_a_hang() -> None:
    call_bounded(lambda: None, 30.0, "quick")  # returns as soon as the call does
    with pytest.raises(ValueError, match="bad"):
        call_bounded(lambda: (_ for _ in ()).throw(ValueError("bad")), 30.0, "failing")
    gate = threading.Event()
    with pytest.raises(HungCall, match=r"stuck has not returned within 0\.05s"):
        call_bounded(lambda: gate.wait(5), 0.05, "stuck")
    gate.set()


def test_a_hung_send_offsets_gives_the_session_up_with_the_transaction_aborted_with_fake_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "CALL_TIMEOUT_S", 0.05)
    monkeypatch.setattr(pipeline, "HUNG_GRACE_S", 0.05)
    events: list[dict[str, Any]] = []
    work = PipelineWorkload("127.0.0.1:1", lambda e: events.append(record_of(e)), pipeline_id="enrich",
                            group="enrich", input_topic="in",
                            output_topic="out", transactional_id="enrich-tx", records=2)
    producer = FakeProducer()
    try:
        ok = work._one_transaction(producer, FakeConsumer(), [FakeMessage(0), FakeMessage(1)], 3)  # type: ignore[arg-type]
    finally:
        producer.release.set()
    assert not ok and "commit" not in producer.calls
    error = next(e for e in events if e["type"] == "client.error")
    assert error["error"] == "_TIMED_OUT" and not error["fatal"] and "librdkafka#5456" in error["error_detail"]
    end = next(e for e in events if e["type"] == "txn.commit")
    assert (end["txn"], end["outcome"], end["definite"], end["error"]) == (0, "aborted", True, "_TIMED_OUT")
    assert [e["value"] for e in events if e["type"] == "pipe.read"] == [100, 101]
