"""`partition.election_conforms` judges the first leader of a partition that an `add_partitions` operation
creates as the `new` strategy (first live replica in AR order), on rows (the Spark check reads the same rows)."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.partition.checks import ElectionConforms
from tests.fixtures.histories import Event, python_context, scenario


def _grown(leader: int, created_at: float = 1.5) -> list[Event]:
    """The healthy fixture run with orders/2 added at 1 s (done at 2 s), first seen at `created_at`."""
    op = {"src": "engine", "op_id": 9, "action": "add_partitions", "topic": "orders",
          "description": "#9 add_partitions orders -> 3 partitions"}
    extra: list[Event] = [
        {**op, "t": 1.0, "type": "op.start", "partitions": [["orders", "2"]], "reassignment": [], "timeout_s": 30.0},
        {**op, "t": 2.0, "type": "op.end", "outcome": "done", "via": "CreatePartitions", "detail": "",
         "elapsed_s": 1.0, "results": [{"topic": "orders", "partition": 2, "error": None, "replicas": [2, 3, 1]}]},
        {"t": created_at, "wall": 0, "src": "zk", "type": "partition.state", "topic": "orders", "partition": 2,
         "leader": leader, "leader_epoch": 0, "isr": [2, 3, 1], "replicas": [2, 3, 1], "controller_epoch": 1},
    ]
    return sorted([*scenario(), *extra], key=lambda e: e["t"])


def _judge(events: list[Event]) -> Any:
    return ElectionConforms().run(python_context(events))


def test_a_new_partitions_first_leader_is_its_first_live_replica() -> None:
    result = _judge(_grown(leader=2))
    assert result.status == "pass", result.summary
    assert result.metrics["by_strategy"]["new"] == 1


def test_a_new_partition_led_by_another_replica_fails_naming_the_rule() -> None:
    result = _judge(_grown(leader=3))
    assert result.status == "fail"
    assert "orders/2 new partition's first leader is 3, model prescribes 2" in result.summary


def test_a_partitions_first_state_outside_an_add_partitions_is_not_judged() -> None:
    result = _judge(_grown(leader=3, created_at=30.0))
    assert "new" not in result.metrics["by_strategy"]
