"""When group.state carries no generation (the Admin API reports none), the assignment check takes the
protocol from the first Stable state around that generation's assignments (from shortly before the first
member's to the next generation's)."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.group.checks import AssignmentConforms
from tests.fixtures.histories import python_context


def _ev(t: float, type_: str, src: str, **fields: Any) -> dict[str, Any]:
    return {"t": t, "wall": int(t * 1000), "type": type_, "src": src, **fields}


def _history(second_member_gets: list[list[Any]]) -> list[dict[str, Any]]:
    states = [_ev(0.1, "partition.state", "zk", topic="t", partition=p, leader=1, leader_epoch=0, isr=[1],
                  replicas=[1], controller_epoch=1) for p in range(3)]
    return [*states,
            _ev(1.0, "group.state", "admin", group="g", state="PreparingRebalance", generation=None, protocol=None),
            _ev(2.0, "assign", "consumer:g/0", group="g", member="a", generation=2, partitions=[["t", 0], ["t", 1]]),
            _ev(2.0, "assign", "consumer:g/1", group="g", member="b", generation=2, partitions=second_member_gets),
            _ev(2.5, "group.state", "admin", group="g", state="Stable", generation=None, protocol="range",
                members=[{"member_id": "a"}, {"member_id": "b"}])]


def test_range_assignment_is_judged_with_the_protocol_of_the_next_stable_state() -> None:
    result = AssignmentConforms().run(python_context(_history([["t", 2]])))
    assert result.status == "pass", result.summary


def test_a_stable_state_seen_between_two_members_assignments_gives_the_protocol() -> None:
    """The coordinator is Stable once SyncGroup completes, before every member's callback has run (seen on
    Apache Kafka: Stable at 12.77 s between assigns at 12.65 and 12.87 s)."""
    events = _history([["t", 2]])
    stable = events.pop()
    stable["t"], stable["wall"] = 2.1, 2100
    events[5]["t"], events[5]["wall"] = 2.3, 2300
    events.insert(5, stable)
    result = AssignmentConforms().run(python_context(events))
    assert result.status == "pass", result.summary


def test_a_deviating_assignment_fails_with_the_fallback_protocol() -> None:
    events = _history([["t", 2]])
    events[4]["partitions"] = [["t", 0]]
    events[5]["partitions"] = [["t", 1], ["t", 2]]
    result = AssignmentConforms().run(python_context(events))
    assert result.status == "fail" and "(range)" in result.summary, result.summary


def test_a_restarted_member_does_not_inherit_the_partitions_of_its_killed_incarnation() -> None:
    """consumer g/1 is killed (no revoke, as with SIGKILL); its partitions move in generation 3; its
    restart joins generation 4 with a new member id and must not count as still holding them."""
    from spark_analysis.checks.group.checks import ExclusiveOwnership

    events = [
        _ev(1.0, "assign", "consumer:g/0", group="g", member="a", generation=2, partitions=[["t", 0]]),
        _ev(1.0, "assign", "consumer:g/1", group="g", member="b", generation=2, partitions=[["t", 1]]),
        _ev(9.0, "assign", "consumer:g/0", group="g", member="a", generation=3, partitions=[["t", 1]]),
        _ev(20.0, "assign", "consumer:g/0", group="g", member="a", generation=4, partitions=[]),
        _ev(20.0, "assign", "consumer:g/1", group="g", member="c", generation=4, partitions=[["t", 2]]),
    ]
    result = ExclusiveOwnership().run(python_context(events))
    assert result.status == "pass", result.summary


def test_a_generation_whose_recorded_members_are_not_the_stable_members_is_not_judged() -> None:
    """Seen on a loaded make test: a member's assign callback carried no generation (or ran after the next
    join), so the generation's recorded assignments came from one member of two; its partitions are not
    "unassigned", the generation is not judged, and the metrics count it."""
    events = _history([["t", 2]])
    events[5]["generation"] = None
    result = AssignmentConforms().run(python_context(events))
    assert result.status != "fail", result.summary
    assert result.metrics["members_unrecorded"] == 1, result.metrics


def test_a_generation_with_every_stable_member_recorded_and_a_partition_unassigned_fails() -> None:
    events = _history([])
    events[6]["protocol"] = "cooperative-sticky"
    result = AssignmentConforms().run(python_context(events))
    assert result.status == "fail" and "t/2 is subscribed but unassigned" in result.summary, result.summary
