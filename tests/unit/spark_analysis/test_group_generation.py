"""group.generation_monotonic on a member assigned twice under one generation: Kafka hands a rejoining follower
the current generation again (no rebalance in between, or a new coordinator that lost the rebalance in flight);
a rebalance completed at the same coordinator without a new generation, or other partitions, is a reuse; a
generation numbered again after a permitted unclean election of the group's coordinator partition is permitted, and
its two incarnations are judged apart."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.group.checks import AssignmentConforms, ExclusiveOwnership
from spark_analysis.checks.group.generations import GenerationMonotonic
from spark_analysis.result import run_check
from tests.fixtures.histories import RUN_JSON, python_context


def _state(t: float, state: str, coordinator: int) -> dict[str, Any]:
    return {"t": t, "wall": 0, "src": "admin", "type": "group.state", "group": "g", "state": state,
            "generation": None, "coordinator": coordinator, "members": [], "protocol": "range"}


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


def _offsets(t: float, leader: int, isr: list[int]) -> dict[str, Any]:
    """A state of `__consumer_offsets/1`, group g's coordinator partition (3 partitions in the fixture run)."""
    return {"t": t, "wall": 0, "src": "zk", "type": "partition.state", "topic": "__consumer_offsets", "partition": 1,
            "leader": leader, "isr": isr, "replicas": [1, 2, 3], "leader_epoch": int(t)}


def _numbered_again(unclean: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Recorded: tests/data/recorded/zk-3.9.2-generation-numbered-again-after-unclean-truncation. Coordinator 1 ran
    generation 2; broker 3 was elected from outside the ISR [1, 2] of g's coordinator partition; coordinator 3 ran
    generation 2 again, for a new member id."""
    ups = [{"t": 0.1, "wall": 0, "src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)]
    events = [*ups, _offsets(0.5, 1, [1, 2]), _state(1.0, "Stable", 1), _assign(1.1, [0, 1, 2], "m-old"),
              {"t": 4.0, "wall": 0, "src": "consumer:g/0", "type": "revoke", "group": "g", "member": "m-old",
               "generation": 2, "partitions": [["orders", p] for p in (0, 1, 2)], "lost": True},
              {"t": 4.5, "wall": 0, "src": "zk", "type": "broker.down", "broker": 1},
              {"t": 4.6, "wall": 0, "src": "zk", "type": "broker.down", "broker": 2},
              _offsets(5.0, 3, [3]), _state(8.0, "PreparingRebalance", 3), _assign(9.5, [0, 1, 2], "m-new"),
              _state(10.0, "Stable", 3)]
    run = {**RUN_JSON, "cluster": {"offsets_topic_partitions": 3,
                                   "broker_config": {"unclean.leader.election.enable": str(unclean).lower()}}}
    return events, run


def test_a_generation_numbered_again_after_a_permitted_unclean_election_of_the_coordinator_partition_is_permitted(
) -> None:
    events, run = _numbered_again(unclean=True)
    result = run_check(GenerationMonotonic(), python_context(events, run))
    assert result.status == "pass" and result.metrics["permitted"] == 1, result.summary
    assert "unclean.leader.election.enable=true" in result.summary and "__consumer_offsets/1" in result.summary
    for check in (ExclusiveOwnership(), AssignmentConforms()):
        judged = run_check(check, python_context(events, run))
        assert judged.status == "pass" and judged.metrics["numbered_again"] == 1, judged.summary


def test_a_generation_numbered_again_without_a_permitted_truncation_fails_all_three_checks() -> None:
    events, run = _numbered_again(unclean=False)
    assert run_check(GenerationMonotonic(), python_context(events, run)).status == "fail"
    assert run_check(ExclusiveOwnership(), python_context(events, run)).status == "fail"


def _deposed_coordinator(first_run_at: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Recorded: tests/data/recorded/zk-3.9.2-generation-run-by-a-deposed-coordinator. Broker 3 was elected from
    outside the ISR [2] of g's coordinator partition at 21.0 s; broker 2, cut off from the controller, did not know
    and ran generation 2 at `first_run_at`; it was back in the ISR (its log cut back to broker 3's) at 30.0 s, and
    coordinator 3 ran generation 2 again at 31.4 s."""
    ups = [{"t": 0.1, "wall": 0, "src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)]
    events = [*ups, _offsets(0.5, 2, [2, 3, 1]), _state(1.0, "Stable", 2), _offsets(19.7, 2, [2]),
              {"t": 20.8, "wall": 0, "src": "zk", "type": "broker.down", "broker": 2},
              _offsets(21.0, 3, [3]), _assign(first_run_at, [0, 1, 2], "m-deposed"),
              {"t": 29.9, "wall": 0, "src": "zk", "type": "broker.up", "broker": 2}, _offsets(30.0, 3, [3, 2]),
              {"t": 30.5, "wall": 0, "src": "consumer:g/0", "type": "revoke", "group": "g", "member": "m-deposed",
               "generation": 2, "partitions": [["orders", p] for p in (0, 1, 2)], "lost": True},
              _state(31.0, "PreparingRebalance", 3), _assign(31.4, [0, 1, 2], "m-new"), _state(31.5, "Stable", 3)]
    run = {**RUN_JSON, "cluster": {"offsets_topic_partitions": 3,
                                   "broker_config": {"unclean.leader.election.enable": "true"}}}
    return events, run


def test_a_generation_a_deposed_coordinator_ran_before_it_learned_of_the_unclean_election_is_permitted_again(
) -> None:
    events, run = _deposed_coordinator(first_run_at=21.5)
    result = run_check(GenerationMonotonic(), python_context(events, run))
    assert result.status == "pass" and result.metrics["permitted"] == 1, result.summary
    for check in (ExclusiveOwnership(), AssignmentConforms()):
        judged = run_check(check, python_context(events, run))
        assert judged.status == "pass" and judged.metrics["numbered_again"] == 1, judged.summary


def test_a_generation_run_after_the_passed_over_isr_rejoined_is_not_excused_by_the_old_election() -> None:
    events, run = _deposed_coordinator(first_run_at=30.2)
    assert run_check(GenerationMonotonic(), python_context(events, run)).status == "fail"
    assert run_check(ExclusiveOwnership(), python_context(events, run)).status == "fail"
