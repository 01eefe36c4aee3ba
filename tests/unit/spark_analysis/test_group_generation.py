"""group.generation_monotonic on a member assigned twice under one generation: Kafka hands a rejoining follower
the current generation again (no rebalance in between, or a new coordinator that lost the rebalance in flight);
a rebalance completed at the same coordinator without a new generation, or other partitions, is a reuse."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.group.checks import GenerationMonotonic
from spark_analysis.result import run_check
from tests.fixtures.histories import python_context


def _state(t: float, state: str, coordinator: int) -> dict[str, Any]:
    return {"t": t, "wall": 0, "src": "admin", "type": "group.state", "group": "g", "state": state,
            "generation": None, "coordinator": coordinator, "members": []}


def _assign(t: float, parts: list[int], member: str = "m0") -> dict[str, Any]:
    return {"t": t, "wall": 0, "src": "consumer:g/0", "type": "assign", "group": "g", "member": member,
            "generation": 2, "partitions": [["orders", p] for p in parts]}


def _status(events: list[dict[str, Any]]) -> str:
    return run_check(GenerationMonotonic(), python_context(events)).status


def test_the_same_assignment_again_after_the_coordinator_moved_mid_rebalance_passes() -> None:
    """Recorded: tests/data/recorded/kraft-4.4.0-follower-rejoins-current-generation."""
    events = [_state(1.0, "Stable", 3), _assign(1.1, [0, 1]), _state(5.0, "PreparingRebalance", 3),
              _state(9.0, "Stable", 1), _assign(9.5, [0, 1])]
    assert _status(events) == "pass"


def test_the_same_assignment_again_in_a_stable_group_passes() -> None:
    assert _status([_state(1.0, "Stable", 3), _assign(1.1, [0, 1]), _assign(4.0, [0, 1])]) == "pass"


def test_a_rebalance_at_the_same_coordinator_that_kept_the_generation_fails() -> None:
    events = [_state(1.0, "Stable", 3), _assign(1.1, [0, 1]), _state(5.0, "PreparingRebalance", 3),
              _state(9.0, "Stable", 3), _assign(9.5, [0, 1])]
    assert _status(events) == "fail"


def test_other_partitions_under_the_same_generation_fail() -> None:
    assert _status([_state(1.0, "Stable", 3), _assign(1.1, [0, 1]), _assign(4.0, [0])]) == "fail"
