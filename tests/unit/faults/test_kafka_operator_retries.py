"""Which admin errors the operator retries with a fresh client until its timeout, and which end the
operation as an error (librdkafka's own KafkaError objects)."""

from __future__ import annotations

import pytest
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


class _ControllerThatDiesBeforeAnswering:
    """A stand-in for kafka-python's admin client (no broker): the first AlterPartitionReassignments goes through
    and its answer is lost (the controller was killed); a second one is refused the way Apache Kafka 3.9's new
    controller refuses a move onto a broker that is not alive (`KafkaController.validateReplicas`)."""

    def __init__(self) -> None:
        self.sent = 0
        self.pending: dict[int, dict[str, list[int]]] = {}

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return {45: (0, 0), 46: (0, 0)}

    def alter_partition_reassignments(self, moves: dict[object, list[int]], timeout_ms: int) -> dict[object, object]:
        from kafka.errors import InvalidReplicationAssignmentError

        self.sent += 1
        if self.sent == 1:
            self.pending = {tp.partition: {"replicas": [*r, 2], "adding_replicas": [3],  # type: ignore[attr-defined]
                                           "removing_replicas": [2]} for tp, r in moves.items()}
            raise ConnectionError("the controller went away before it answered")
        return {tp: InvalidReplicationAssignmentError for tp in moves}

    def list_partition_reassignments(self, wanted: dict[str, list[int]]) -> dict[object, dict[str, list[int]]]:
        from kafka import TopicPartition

        return {TopicPartition("orders", p): state for p, state in self.pending.items()}


def test_a_reassignment_whose_answer_was_lost_is_not_sent_again_when_it_went_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CI run of experiments/reassignment.yaml on 3.9.2 (2026-11-29): the move onto broker 3 was written, the
    controller was killed before it answered, and the move sent again to the new controller was refused while
    broker 3 was down, so the operation was reported refused although it finished. Stand-ins for both clients."""
    from types import SimpleNamespace

    from harness.faults.kafka_operator import KafkaOperator

    admin = _ControllerThatDiesBeforeAnswering()
    fresh = SimpleNamespace(get=lambda: admin, reset=lambda: None)
    listed = {0: [1, 2]}
    metadata = SimpleNamespace(list_topics=lambda topic, timeout: SimpleNamespace(topics={topic: SimpleNamespace(
        error=None, partitions={p: SimpleNamespace(replicas=r) for p, r in listed.items()})}))

    def finish_when_polled(seconds: float) -> None:
        listed[0] = [3, 1]
        admin.pending = {}

    import harness.faults.kafka_operator as module

    monkeypatch.setattr(module.time, "sleep", finish_when_polled)
    outcome = KafkaOperator("unused:9092")._reassign(fresh, metadata, "orders", {0: [3, 1]}, 30.0)
    assert admin.sent == 1
    assert outcome.outcome == "done", outcome
