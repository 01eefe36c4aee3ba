"""ISR shrink/expand, high watermark and acks=all decisions of the leader (§3); time is an argument."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.model.isr import (
    AckStatus,
    FollowerState,
    IsrError,
    ProduceError,
    acks_all_status,
    high_watermark,
    isr_to_expand,
    isr_to_shrink,
    next_isr,
    on_follower_fetch,
    produce_precheck,
)

LAG = 10_000


def test_fetch_at_leader_leo_marks_caught_up_now() -> None:
    st = on_follower_fetch(FollowerState(2), fetch_offset=100, leader_leo=100, now_ms=5_000)
    assert (st.leo, st.last_caught_up_ms) == (100, 5_000)


def test_fetch_reaching_previous_leader_leo_counts_as_caught_up_at_previous_fetch() -> None:
    st = on_follower_fetch(FollowerState(2), 100, 100, 1_000)
    st = on_follower_fetch(st, 100, 150, 2_000)  # leader moved on; we asked for its old LEO
    st = on_follower_fetch(st, 150, 200, 3_000)  # reached the LEO seen at the previous fetch
    assert st.last_caught_up_ms == 2_000


def test_lagging_follower_is_shrunk_only_after_lag_time() -> None:
    fol = {2: FollowerState(2, leo=90, last_caught_up_ms=1_000), 3: FollowerState(3, leo=100, last_caught_up_ms=0)}
    assert isr_to_shrink(1, (1, 2, 3), fol, leader_leo=100, now_ms=1_000 + LAG, lag_time_max_ms=LAG) == frozenset()
    assert isr_to_shrink(1, (1, 2, 3), fol, 100, 1_000 + LAG + 1, LAG) == {2}, "3 has LEO == leader LEO: in sync"


def test_follower_without_state_is_out_of_sync_and_leader_never_is() -> None:
    assert isr_to_shrink(1, (1, 2), {}, 0, 0, LAG) == {2}


def test_expand_needs_live_replica_at_or_past_hw_and_epoch_start() -> None:
    fol = {2: FollowerState(2, leo=50), 3: FollowerState(3, leo=80), 4: FollowerState(4, leo=99)}
    assert isr_to_expand((1, 2, 3, 4), (1,), fol, live={1, 2, 3}, high_watermark=80) == {3}
    assert isr_to_expand((1, 2, 3, 4), (1,), fol, {1, 2, 3}, 80, leader_epoch_start_offset=90) == frozenset()


def test_next_isr_keeps_ar_order_and_rejects_leader_outside_isr() -> None:
    fol = {2: FollowerState(2, leo=100, last_caught_up_ms=0), 3: FollowerState(3, leo=10, last_caught_up_ms=0)}
    assert next_isr(1, (3, 1, 2), (1, 3), fol, {1, 2, 3}, 100, 100, now_ms=LAG + 1, lag_time_max_ms=LAG) == (1, 2)
    with pytest.raises(IsrError, match="leader 1"):
        next_isr(1, (1, 2), (2,), fol, {1, 2}, 100, 100, 0)


def test_high_watermark_is_min_isr_leo_and_never_goes_back() -> None:
    assert high_watermark((1, 2, 3), {1: 100, 2: 70, 3: 90, 4: 5}) == 70
    assert high_watermark((1,), {1: 60}, current_hw=70) == 70
    with pytest.raises(IsrError, match="no LEO"):
        high_watermark((1, 2), {1: 5})


@pytest.mark.parametrize(
    ("acks", "isr_size", "min_isr", "expected"),
    [
        (-1, 1, 2, ProduceError.NOT_ENOUGH_REPLICAS),
        (-1, 2, 2, ProduceError.NONE),
        (1, 1, 2, ProduceError.NONE),
        (0, 1, 3, ProduceError.NONE),
    ],
)
def test_produce_precheck_min_insync_replicas(acks: int, isr_size: int, min_isr: int, expected: ProduceError) -> None:
    assert produce_precheck(acks, isr_size, min_isr) is expected


def test_produce_precheck_rejects_bad_acks() -> None:
    with pytest.raises(HarnessError, match="acks"):
        produce_precheck(2, 3, 1)


def test_acks_all_waits_for_hw_then_reports_after_append_shrink() -> None:
    assert acks_all_status(required_offset=11, hw=10, isr_size=3, min_insync_replicas=2) == AckStatus(False)
    assert acks_all_status(11, 11, 3, 2) == AckStatus(True)
    assert acks_all_status(11, 12, 1, 2) == AckStatus(True, ProduceError.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
