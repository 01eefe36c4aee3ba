"""A member's drain check judges the assignment it was made on: a pass for an empty assignment (an idle member is
caught up) must not stand for the partitions a rebalance hands it next. Seen on Apache Kafka 3.9.2 under explore
(weak-isr seed 1): the member's partitions were lost in a partition, its check passed on the empty set while it
rejoined, the group handed all three back, and the group looked read to the end 41 ms later with 6,843 acknowledged
writes unread; the drain ended there and `delivery.lost_write` failed. The librdkafka member runs with a fake
consumer standing in for the client (no broker is needed to call its rebalance callback); the worker relay with a
stand-in for its worker's state."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import confluent_kafka

from harness.history.events import HistoryEvent
from harness.history.events_client import Assign
from harness.workload.consumer import ConsumerGroupWorkload
from harness.workload.java_client import WorkerMember
from harness.workload.member import Member

ALL = [("orders", 0), ("orders", 1), ("orders", 2)]


class AnsweringConsumer:
    """Stands in for librdkafka: answers `committed()`, knows no watermark or position, makes no request."""

    def committed(self, parts: list[confluent_kafka.TopicPartition], timeout: float) -> list[Any]:
        return [confluent_kafka.TopicPartition(p.topic, p.partition, -1001) for p in parts]

    def __getattr__(self, name: str) -> Any:
        return lambda *_args, **_kwargs: None


def _member(events: list[HistoryEvent]) -> Member:
    member = Member(group="billing", slot=0, topics=["orders"], config={}, commit="sync", commit_interval_s=1.0,
                    incremental=False, sink=events.append)
    member.known_partitions = set(ALL)
    return member


def test_a_drain_check_passed_on_no_partitions_does_not_stand_for_the_partitions_assigned_next() -> None:
    events: list[HistoryEvent] = []
    member, consumer = _member(events), AnsweringConsumer()
    member.caught_up = member._check_caught_up(consumer)  # type: ignore[arg-type]  # as the poll loop does
    assert member.caught_up and member.assignment == frozenset()  # nothing owned: nothing left to read
    member._rebalance(consumer, [confluent_kafka.TopicPartition(t, p) for t, p in ALL], "assign")  # type: ignore[arg-type]
    assert member.assignment == frozenset(ALL) and isinstance(events[-1], Assign)
    assert member.caught_up is False
    assert not ConsumerGroupWorkload._drained([member])


def test_the_worker_relay_clears_a_members_drain_pass_when_its_assignment_changes() -> None:
    events: list[HistoryEvent] = []
    stand_in = SimpleNamespace(caught_up=True, _assignment=frozenset(), member_id=None, _sink=events.append)
    assign = Assign(src="consumer:billing/0", wall=0, consumer="billing/0", group="billing", member="m-1",
                    generation=2, partitions=tuple(ALL), incremental=False, assignment=tuple(ALL))
    WorkerMember._record(stand_in, assign)  # type: ignore[arg-type]
    assert stand_in._assignment == frozenset(ALL) and stand_in.caught_up is False and events == [assign]
