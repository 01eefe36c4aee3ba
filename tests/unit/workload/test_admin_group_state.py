"""How the AdminObserver turns a confluent-kafka ConsumerGroupDescription into `group.state` fields."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, Node, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberAssignment, MemberDescription

from harness.observe.admin import group_state


def description(state: ConsumerGroupState, members: list[MemberDescription]) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(
        "billing", False, members, "range", state, Node(2, "127.0.0.1", 9092), type=ConsumerGroupType.CLASSIC
    )


def member(member_id: str, *parts: int) -> MemberDescription:
    assignment = MemberAssignment([TopicPartition("orders", p) for p in parts])
    return MemberDescription(member_id, f"client-{member_id}", "/127.0.0.1", assignment)


def test_group_state_uses_kafka_state_names_and_reports_unknown_fields_as_null() -> None:
    _, state = group_state(description(ConsumerGroupState.PREPARING_REBALANCING, [member("m1", 1, 0)]))
    assert state.to_json() == {
        "type": "group.state",
        "src": "admin",
        "group": "billing",
        "state": "PreparingRebalance",
        "generation": None,
        "coordinator": 2,
        "leader": None,
        "protocol": "range",
        "members": [
            {
                "member_id": "m1",
                "client_id": "client-m1",
                "host": "/127.0.0.1",
                "assignment": [["orders", 0], ["orders", 1]],
            }
        ],
        "group_type": "classic",
    }


def test_group_state_key_ignores_member_order_but_sees_assignment_changes() -> None:
    a, _ = group_state(description(ConsumerGroupState.STABLE, [member("m1", 0), member("m2", 1)]))
    b, _ = group_state(description(ConsumerGroupState.STABLE, [member("m2", 1), member("m1", 0)]))
    c, _ = group_state(description(ConsumerGroupState.STABLE, [member("m1", 1), member("m2", 0)]))
    assert a == b and a != c
