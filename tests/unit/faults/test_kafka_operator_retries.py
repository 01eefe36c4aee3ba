"""Which admin errors the operator retries with a fresh client until its timeout, and which end the
operation as an error (librdkafka's own KafkaError objects)."""

from __future__ import annotations

from confluent_kafka import KafkaError

from harness.faults.kafka_operator import _worth_retrying


def test_no_answer_a_retriable_error_and_not_controller_are_retried() -> None:
    assert _worth_retrying(KafkaError(KafkaError._TIMED_OUT))
    assert _worth_retrying(KafkaError(KafkaError.NOT_CONTROLLER))
    assert _worth_retrying(KafkaError(KafkaError.REQUEST_TIMED_OUT, retriable=True))


def test_an_answer_that_refuses_the_operation_is_not_retried() -> None:
    assert not _worth_retrying(KafkaError(KafkaError.INVALID_PARTITIONS))
    assert not _worth_retrying(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
