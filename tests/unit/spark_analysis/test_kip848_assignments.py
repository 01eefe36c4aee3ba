"""KIP-848 consumer groups (`group_type: consumer`) in `group.assignment_conforms`: judged on the Admin observer's
Stable snapshots against the server-side assignor (uniform: balanced, then sticky from one target to the next;
range: per-topic ranges over the members sorted by id), never by the members' epochs, which no two members share."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.group.checks import AssignmentConforms
from tests.fixtures.histories import python_context


def _ev(t: float, type_: str, src: str, **fields: Any) -> dict[str, Any]:
    return {"t": t, "wall": int(t * 1000), "type": type_, "src": src, **fields}


def _stable(t: float, protocol: str, **owned: list[int]) -> dict[str, Any]:
    members = [{"member_id": m, "assignment": [["t", p] for p in ps]} for m, ps in owned.items()]
    return _ev(t, "group.state", "admin", group="g", state="Stable", generation=None, protocol=protocol,
               group_type="consumer", members=members)


def _history(*snapshots: dict[str, Any], partitions: int = 6) -> list[dict[str, Any]]:
    states = [_ev(0.1, "partition.state", "kraft", topic="t", partition=p, leader=1, leader_epoch=0, isr=[1],
                  replicas=[1]) for p in range(partitions)]
    assign = _ev(1.0, "assign", "consumer:g/0", group="g", member="a", generation=1, partitions=[["t", 0]])
    return [*states, assign, *snapshots]


def test_balanced_sticky_uniform_targets_pass() -> None:
    result = AssignmentConforms().run(python_context(_history(
        _stable(2.0, "uniform", a=[0, 1, 2, 3, 4, 5]),
        _stable(5.0, "uniform", a=[0, 1, 2], b=[3, 4, 5]),
        _stable(9.0, "uniform", a=[0, 1], b=[3, 4], c=[2, 5]))))
    assert result.status == "pass" and "3 KIP-848 Stable assignments" in result.summary, result.summary


def test_an_unbalanced_uniform_target_fails() -> None:
    result = AssignmentConforms().run(python_context(_history(_stable(2.0, "uniform", a=[0, 1, 2, 3], b=[4, 5]))))
    assert result.status == "fail" and "unbalanced" in result.summary, result.summary


def test_a_swap_between_two_stable_targets_with_the_same_members_fails() -> None:
    result = AssignmentConforms().run(python_context(_history(
        _stable(2.0, "uniform", a=[0, 1, 2], b=[3, 4, 5]),
        _stable(9.0, "uniform", a=[0, 1, 3], b=[2, 4, 5]))))
    assert result.status == "fail" and "swap" in result.summary, result.summary


def test_a_member_fenced_in_between_leaves_the_unseen_targets_unjudged_for_stickiness() -> None:
    """Every member was fenced (revoke with lost) and rejoined: the coordinator's targets in between were never
    Stable, so the next Stable target owes nothing to the one before (seen on Apache Kafka 4.4.0)."""
    fenced = _ev(5.0, "revoke", "consumer:g/1", group="g", member="b", generation=7, partitions=[["t", 3]],
                 lost=True)
    result = AssignmentConforms().run(python_context(_history(
        _stable(2.0, "uniform", a=[0, 1, 2], b=[3, 4, 5]), fenced,
        _stable(9.0, "uniform", a=[0, 1, 3], b=[2, 4, 5]))))
    assert result.status == "pass", result.summary


def test_the_server_side_range_assignor_gives_ranges_over_the_member_ids_in_order() -> None:
    ok = AssignmentConforms().run(python_context(_history(_stable(2.0, "range", b=[3, 4, 5], a=[0, 1, 2]))))
    assert ok.status == "pass", ok.summary
    off = AssignmentConforms().run(python_context(_history(_stable(2.0, "range", a=[3, 4, 5], b=[0, 1, 2]))))
    assert off.status == "fail" and "the range assignor gives" in off.summary, off.summary


def _assign(t: float, epoch: int, parts: list[int]) -> dict[str, Any]:
    return _ev(t, "assign", "consumer:g/1", group="g", member="b", generation=epoch,
               partitions=[["t", p] for p in parts], incremental=True)


def test_a_kip848_member_may_get_unreleased_partitions_later_in_the_same_epoch_but_never_an_older_epoch() -> None:
    """The coordinator adds a partition its previous owner has not released yet without a new epoch
    (CurrentAssignmentBuilder, UNRELEASED_PARTITIONS); an epoch going back is still a violation."""
    from spark_analysis.checks.group.generations import GenerationMonotonic

    modern = _stable(0.5, "uniform", a=[0, 1, 2, 3, 4, 5])
    same_epoch = [modern, _assign(1.0, 3, []), _assign(2.0, 3, [3, 4, 5])]
    assert GenerationMonotonic().run(python_context(same_epoch)).status == "pass"
    back = [modern, _assign(1.0, 3, [3]), _assign(2.0, 2, [4])]
    result = GenerationMonotonic().run(python_context(back))
    assert result.status == "fail" and "generation 2 after 3" in result.summary, result.summary
    classic = [_assign(1.0, 3, []), _assign(2.0, 3, [3, 4, 5])]
    assert GenerationMonotonic().run(python_context(classic)).status == "fail"
