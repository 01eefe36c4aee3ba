"""A pipeline whose input consumer's librdkafka main thread no longer answers (a stand-in for the deadlock seen on
librdkafka 2.16.0, docs/apache-kafka.md "A librdkafka consumer that deadlocks"): before a transaction's offsets are
read, `committed()` is asked first (it releases the GIL and times out); the session is then given up with the
transaction recorded aborted, and none of the calls that hold the GIL (`position()`, `assignment()`,
`consumer_group_metadata()`) is made. A fake consumer and producer stand in for librdkafka: the deadlock cannot be
made on demand."""

from __future__ import annotations

from typing import Any

import confluent_kafka

from harness.history.events import ClientError, TxnAbort, TxnCommit
from harness.history.events_base import HistoryEvent
from harness.workload.pipeline import PipelineWorkload
from tests.unit.workload.test_member_unanswering_client import FakeConsumer


class AnsweringConsumer(FakeConsumer):
    """A consumer that answers: no partition assigned, so no position."""

    def position(self, parts: list[confluent_kafka.TopicPartition]) -> list[confluent_kafka.TopicPartition]:
        self.calls.append("position")
        return []


class FakeProducer:
    """Accepts every call (begin_transaction, produce, poll) and does nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *_args, **_kwargs: None


class FakeMessage:
    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7

    def value(self) -> bytes:
        return b"1000000001"


def _pipeline(events: list[HistoryEvent]) -> PipelineWorkload:
    """A pipeline recording into `events`, whose output records go nowhere."""
    pipe = PipelineWorkload("127.0.0.1:1", events.append, pipeline_id="enrich", group="g", input_topic="in",
                            output_topic="out", transactional_id="enrich-tx")
    pipe._send_one = lambda _producer, _partition: None  # type: ignore[method-assign]
    return pipe


def test_a_pipeline_whose_consumer_stops_answering_gives_its_session_up_without_a_call_that_holds_the_gil() -> None:
    events: list[HistoryEvent] = []
    pipe = _pipeline(events)
    consumer = FakeConsumer(wedged=True)
    kept_on = pipe._one_transaction(FakeProducer(), consumer, [FakeMessage()], 1)  # type: ignore[arg-type, list-item]
    assert kept_on is False
    assert consumer.calls == ["committed"]
    (aborted,) = [e for e in events if isinstance(e, TxnAbort | TxnCommit)]
    assert aborted.outcome == "aborted" and "did not answer committed()" in str(aborted.error_detail)
    assert any(isinstance(e, ClientError) and e.error == "_TIMED_OUT" for e in events)


def test_a_pipeline_whose_consumer_answers_reads_its_positions_and_group_metadata() -> None:
    pipe = _pipeline([])
    consumer = AnsweringConsumer(wedged=False)
    pipe._one_transaction(FakeProducer(), consumer, [FakeMessage()], 1)  # type: ignore[arg-type, list-item]
    assert consumer.calls[:4] == ["committed", "assignment", "position", "consumer_group_metadata"]
