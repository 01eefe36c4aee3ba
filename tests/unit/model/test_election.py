"""Table tests for the four leader election strategies of KAFKA-BEHAVIOUR.md §2."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.model.election import (
    STRATEGIES,
    UnknownStrategyError,
    check_election,
    elect_leader,
    infer_strategy,
)

# (strategy, AR, ISR, live, shutting_down, unclean, expected leader, why)
CASES = [
    ("offline", [1, 2, 3], [1, 2, 3], {1, 2, 3}, set(), False, 1, "AR[0] live and in ISR"),
    ("offline", [1, 2, 3], [3, 2], {2, 3}, set(), False, 2, "AR order wins over ISR order"),
    ("offline", [1, 2, 3], [1, 3], {2, 3}, set(), False, 3, "2 is live but not in ISR"),
    ("offline", [1, 2, 3], [1], {2, 3}, set(), False, None, "no live ISR member, clean: offline"),
    ("offline", [1, 2, 3], [1], {2, 3}, set(), True, 2, "unclean: first live replica in AR"),
    ("offline", [3, 1, 2], [], {1, 2}, set(), True, 1, "unclean with empty ISR follows AR order"),
    ("offline", [1, 2, 3], [1], set(), set(), True, None, "unclean but nothing live"),
    ("offline", [1, 2], [1, 2], {1, 2, 9}, {1}, False, 1, "offline ignores shutting-down brokers"),
    ("offline", [], [], {1}, set(), True, None, "empty AR"),
    ("reassign", [4, 5, 1], [1, 4], {1, 4, 5}, set(), False, 4, "first of NEW AR live and in ISR"),
    ("reassign", [5, 1], [1, 4], {1, 4, 5}, set(), False, 1, "5 not in ISR yet"),
    ("reassign", [5, 6], [1, 4], {1, 4, 5, 6}, set(), True, None, "reassign never elects uncleanly"),
    ("preferred", [2, 1, 3], [1, 2, 3], {1, 2, 3}, set(), False, 2, "AR[0] live and in ISR"),
    ("preferred", [2, 1, 3], [1, 3], {1, 2, 3}, set(), False, None, "AR[0] not in ISR"),
    ("preferred", [2, 1, 3], [1, 2, 3], {1, 3}, set(), True, None, "AR[0] dead; no fallback, even unclean"),
    ("preferred", [], [1], {1}, set(), False, None, "empty AR"),
    ("controlled_shutdown", [1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}, False, 2, "skip the broker shutting down"),
    ("controlled_shutdown", [1, 2, 3], [1, 3], {1, 2, 3}, {1}, False, 3, "2 not in ISR"),
    ("controlled_shutdown", [1, 2, 3], [1, 2, 3], {1, 2, 3}, {1, 2}, False, 3, "two shutting down"),
    ("controlled_shutdown", [1], [1], {1}, {1}, True, None, "RF=1: nowhere to move, never unclean"),
    ("controlled_shutdown", [1, 2], [1, 2], {1}, {1}, False, None, "2 in ISR but dead"),
]


@pytest.mark.parametrize(("strategy", "ar", "isr", "live", "down", "unclean", "expected", "why"), CASES)
def test_elect_leader_follows_strategy_table(
    strategy: str, ar: list[int], isr: list[int], live: set[int], down: set[int], unclean: bool,
    expected: int | None, why: str,
) -> None:
    assert elect_leader(strategy, ar, isr, live, down, unclean) == expected, why


def test_unknown_strategy_raises_harness_error_naming_value_and_choices() -> None:
    with pytest.raises(UnknownStrategyError) as info:
        elect_leader("random", [1], [1], {1})
    assert isinstance(info.value, HarnessError)
    assert "'random'" in str(info.value) and all(s in str(info.value) for s in STRATEGIES)


def test_elect_leader_accepts_observed_data_shapes() -> None:
    """Verifiers pass lists/tuples/sets straight from history rows."""
    assert elect_leader("offline", (1, 2), frozenset({2}), [2, 3], (), False) == 2


def test_infer_strategy_from_facts_before_the_change() -> None:
    assert infer_strategy(1, live={2, 3}) == "offline"
    assert infer_strategy(-1, live={1}) == "offline"
    assert infer_strategy(1, live={1, 2}, shutting_down={1}) == "controlled_shutdown"
    assert infer_strategy(2, live={1, 2}) == "preferred"
    assert infer_strategy(2, live={1, 2}, reassigned=True) == "reassign"


def test_check_election_flags_a_leader_outside_the_prescription() -> None:
    """Invariant 4 on history-shaped data: leader 1 died, ISR [1, 3], AR [1, 2, 3]: 3 must win."""
    good = check_election(3, old_leader=1, assigned=[1, 2, 3], isr_before=[1, 3], live=[2, 3])
    assert good.ok and good.strategy == "offline" and good.expected == 3
    bad = check_election(2, old_leader=1, assigned=[1, 2, 3], isr_before=[1, 3], live=[2, 3])
    assert not bad.ok and bad.expected == 3 and bad.observed == 2
    none = check_election(-1, old_leader=1, assigned=[1, 2], isr_before=[1], live=[2])
    assert none.ok and none.expected is None
    moved = check_election(4, 1, [1, 2], [1, 4], [1, 2, 4], new_assigned=[4, 2])
    assert moved.ok and moved.strategy == "reassign"
