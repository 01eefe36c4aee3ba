"""A consumer whose librdkafka main thread no longer answers (a stand-in for the deadlock seen on librdkafka 2.16.0,
docs/apache-kafka.md "A librdkafka consumer that deadlocks"): the member's drain check and its graceful leave ask
`committed()` first, which releases the GIL and times out, and then make none of the calls confluent-kafka makes
holding the GIL (the cached watermarks, `position()`, `unsubscribe()`, `assignment()`, the group metadata); a client
that answers, even with an error, is checked as before; and the poll loop reads the group metadata at commits, not at
every poll. A fake
consumer stands in for librdkafka here: the deadlock cannot be made on demand."""

from __future__ import annotations

from typing import Any

import confluent_kafka

from harness.workload.member import Member


class FakeConsumer:
    """Records every call; `committed()` times out when `wedged`, or raises `error` when one is given."""

    def __init__(self, *, wedged: bool, error: int | None = None) -> None:
        self.wedged = wedged
        self.error = error
        self.calls: list[str] = []

    def committed(self, parts: list[confluent_kafka.TopicPartition], timeout: float) -> list[Any]:
        self.calls.append("committed")
        if self.wedged:
            raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT))
        if self.error is not None:
            raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(self.error))
        return [confluent_kafka.TopicPartition(p.topic, p.partition, 5) for p in parts]

    def __getattr__(self, name: str) -> Any:
        def call(*_args: Any, **_kwargs: Any) -> Any:
            self.calls.append(name)
            if name == "get_watermark_offsets":
                return (0, 10)
            if name == "list_topics":
                raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(confluent_kafka.KafkaError._TRANSPORT))
            if name == "poll":
                return None
            if name == "assignment":
                return []
            return None
        return call


def _member() -> Member:
    member = Member(group="billing", slot=0, topics=["orders"], config={}, commit="sync", commit_interval_s=1.0,
                    incremental=False, sink=lambda _event: None)
    member._assignment.add(("orders", 0))
    return member


def test_the_drain_check_of_an_unanswering_client_makes_no_call_that_holds_the_gil() -> None:
    member, consumer = _member(), FakeConsumer(wedged=True)
    assert member._check_caught_up(consumer) is False  # type: ignore[arg-type]
    assert consumer.calls == ["committed"]
    assert member.last_check_error is not None and "did not answer within 1 s" in member.last_check_error


def test_the_graceful_leave_of_an_unanswering_client_goes_straight_to_close() -> None:
    member, consumer = _member(), FakeConsumer(wedged=True)
    member._leave(consumer)  # type: ignore[arg-type]
    assert consumer.calls == ["committed"]


def test_a_client_that_answers_with_an_error_is_checked_and_leaves_as_before() -> None:
    member = _member()
    consumer = FakeConsumer(wedged=False, error=confluent_kafka.KafkaError.COORDINATOR_NOT_AVAILABLE)
    assert member._answers(consumer, 1.0)  # type: ignore[arg-type]
    consumer.calls.clear()
    member._check_caught_up(consumer)  # type: ignore[arg-type]
    # on to the checks: the partitions are asked on the side channel (no broker here, so that fails and says so)
    assert consumer.calls == ["committed"] and member.last_check_error, member.last_check_error
    consumer.calls.clear()
    member._leave(consumer)  # type: ignore[arg-type]
    assert consumer.calls[:3] == ["committed", "unsubscribe", "poll"]


def test_the_group_metadata_is_read_at_a_commit_not_at_every_poll() -> None:
    member, consumer = _member(), FakeConsumer(wedged=False)
    polls = 0

    def poll(_timeout: float) -> None:
        nonlocal polls
        polls += 1
        consumer.calls.append("poll")
        if polls == 5:
            member._end_mode = "close"

    consumer.poll = poll  # type: ignore[method-assign]
    member._loop(consumer)  # type: ignore[arg-type]
    assert consumer.calls == ["poll"] * 5
    member._dirty = True
    member._do_commit(consumer)  # type: ignore[arg-type]
    assert consumer.calls[5:7] == ["committed", "consumer_group_metadata"] and "commit" in consumer.calls[7:]
    wedged = FakeConsumer(wedged=True)
    member._dirty = True
    member._do_commit(wedged)  # type: ignore[arg-type]
    assert "consumer_group_metadata" not in wedged.calls and wedged.calls[0] == "committed"
