"""The partition count a consumer group generation is judged against when `add_partitions` grows a topic:
the count before the growth, until the generation holds one of the new partitions (then all of them)."""

from __future__ import annotations

from spark_analysis.checks.group.holdings import Holding, base_partition_counts, generation_counts


def _held(*parts: int) -> Holding:
    return Holding("g", 1, "c1", "m1", frozenset(("t", p) for p in parts), {})


STATES = [{"t": 1.0, "topic": "t", "partition": p} for p in range(3)] + [
    {"t": 12.0, "topic": "t", "partition": p} for p in range(5)] + [{"t": 2.0, "topic": "u", "partition": 0}]


def test_a_grown_topic_counts_only_its_partitions_before_the_growth() -> None:
    assert base_partition_counts(STATES, {"t": 10.0}) == {"t": 3, "u": 1}
    assert base_partition_counts(STATES, {}) == {"t": 5, "u": 1}


def test_a_generation_holding_a_new_partition_is_judged_against_every_partition_up_to_it() -> None:
    base = base_partition_counts(STATES, {"t": 10.0})
    assert generation_counts(base, [_held(0, 1), _held(2)]) == {"t": 3, "u": 1}
    assert generation_counts(base, [_held(0, 1), _held(4)]) == {"t": 5, "u": 1}
