"""What a writer's settings ask Kafka for (docs/kafka-behaviour.md R3, R5, R7), and the setting each answer names."""

from __future__ import annotations

from harness.model.promises import Writer, ack_withdrawn, once_withdrawn, order_withdrawn, unclean_permits


def test_once_only_storage_is_promised_to_idempotent_and_transactional_writers_only() -> None:
    assert once_withdrawn(Writer("p0", "t")) is None
    assert once_withdrawn(Writer("p0", "t", idempotence=False, transactional=True)) is None
    assert once_withdrawn(Writer("p0", "t", idempotence=False)) == "enable.idempotence=false (producer p0)"


def test_key_order_is_promised_with_idempotence_or_one_request_in_flight() -> None:
    assert order_withdrawn(Writer("p0", "t", idempotence=False, max_in_flight=1)) is None
    assert order_withdrawn(Writer("p0", "t")) is None
    reason = order_withdrawn(Writer("p0", "t", idempotence=False))
    assert reason is not None and "1000000 (librdkafka's default)" in reason and "p0" in reason


def test_only_acks_all_writes_survive_a_clean_election_and_an_unclean_one_is_named_with_its_setting() -> None:
    assert ack_withdrawn(Writer("p0", "t")) is None
    assert ack_withdrawn(Writer("p1", "t", acks="1")) == "acks=1 (producer p1)"
    assert unclean_permits(False, 2, 35.16, "orders/2") is None
    assert unclean_permits(True, 2, 35.16, "orders/2") == ("unclean.leader.election.enable=true (an unclean election "
                                                          "of broker 2 at 35.160s on orders/2)")
