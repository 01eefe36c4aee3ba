"""Which admin errors the operator retries with a fresh client until its timeout, and which end the
operation as an error (librdkafka's own KafkaError objects)."""

from __future__ import annotations

from confluent_kafka import KafkaError

from harness.faults.kafka_operator import _worth_retrying, offered_api_keys


def test_no_answer_a_retriable_error_and_not_controller_are_retried() -> None:
    assert _worth_retrying(KafkaError(KafkaError._TIMED_OUT))
    assert _worth_retrying(KafkaError(KafkaError.NOT_CONTROLLER))
    assert _worth_retrying(KafkaError(KafkaError.REQUEST_TIMED_OUT, retriable=True))


def test_an_answer_that_refuses_the_operation_is_not_retried() -> None:
    assert not _worth_retrying(KafkaError(KafkaError.INVALID_PARTITIONS))
    assert not _worth_retrying(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))


def test_api_keys_kafka_python_does_not_know_do_not_hide_the_ones_it_does() -> None:
    """kafka-python 3.0.12's `api_versions()` raises ValueError("93 is not a valid ApiKey") against Apache Kafka
    4.4.0; the keys are then read as the broker sent them. A stand-in client (no broker): the fake holds the raw
    ApiVersions answer kafka-python keeps."""
    from types import SimpleNamespace

    from kafka.protocol.api_key import ApiKey

    raw = {45: (0, 0), 46: (0, 0), 93: (0, 1)}

    def strict() -> dict[ApiKey, tuple[int, int]]:
        return {ApiKey(k): v for k, v in raw.items()}

    client = SimpleNamespace(api_versions=strict, _manager=SimpleNamespace(
        broker_version_data=SimpleNamespace(api_versions=raw)))
    assert offered_api_keys(client) == {45, 46, 93}
    client.api_versions = lambda: {ApiKey(45): (0, 0)}
    assert offered_api_keys(client) == {45}
