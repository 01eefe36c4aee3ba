"""group.assignment_conforms on cooperative-sticky rebalances (KIP-429): the first round takes partitions from
members that stay and leaves them unassigned, the follow-up round assigns them. The first round passes even when
an observer's Stable group.state falls between the rounds (seen on the reference broker after a coordinator
kill); a partition left unassigned that nobody revoked still fails."""

from __future__ import annotations

from typing import Any

from harness.model.assignors import assignment_problems, cooperative_revoking
from spark_analysis.checks.group.checks import AssignmentConforms
from tests.fixtures.histories import python_context

P = "payments"


def _assign(t: float, member: str, gen: int, parts: list[int]) -> dict[str, Any]:
    return {"t": t, "type": "assign", "src": f"consumer:{member}", "group": "g", "member": member,
            "generation": gen, "partitions": [[P, p] for p in parts], "protocol": "cooperative-sticky"}


def _revoke(t: float, member: str, gen: int, parts: list[int]) -> dict[str, Any]:
    return {"t": t, "type": "revoke", "src": f"consumer:{member}", "group": "g", "member": member,
            "generation": gen, "partitions": [[P, p] for p in parts]}


def _stable(t: float, owned: dict[str, list[int]]) -> dict[str, Any]:
    return {"t": t, "type": "group.state", "src": "admin", "group": "g", "state": "Stable",
            "protocol": "cooperative-sticky", "coordinator": 1,
            "members": [{"member_id": m, "assignment": [[P, p] for p in ps]} for m, ps in owned.items()]}


def _history(follow_up: dict[str, list[int]]) -> list[dict[str, Any]]:
    states = [{"t": 0.0, "type": "partition.state", "src": "zk", "topic": P, "partition": p, "leader": 1,
               "leader_epoch": 0, "isr": [1], "replicas": [1], "controller_epoch": 1} for p in range(6)]
    return [*states,
            _assign(1.0, "a", 11, [0, 2, 4]), _assign(1.0, "b", 11, [1, 3, 5]),
            _stable(1.4, {"a": [0, 2, 4], "b": [1, 3, 5]}),
            # c joins: the first round takes 0 from a and 1 from b and gives c nothing yet
            _revoke(2.0, "a", 12, [0]), _assign(2.0, "a", 12, []), _revoke(2.0, "b", 12, [1]),
            _assign(2.0, "b", 12, []), _assign(2.0, "c", 12, []),
            *[_assign(2.5, m, 13, ps) for m, ps in follow_up.items()],
            _stable(3.0, {"a": [2, 4], "b": [3, 5], "c": [0, 1]})]


def test_a_cooperative_first_round_may_leave_the_partitions_it_revokes_unassigned() -> None:
    result = AssignmentConforms().run(python_context(_history({"a": [], "b": [], "c": [0, 1]})))
    assert result.status == "pass", result.summary
    assert result.metrics["judged"] == 3


def test_a_follow_up_round_that_does_not_assign_the_revoked_partitions_fails() -> None:
    result = AssignmentConforms().run(python_context(_history({"a": [], "b": [], "c": [0]})))
    assert result.status == "fail"
    assert "payments/1 is subscribed but unassigned" in result.summary


def test_only_partitions_taken_from_staying_members_count_as_revoking() -> None:
    """A departed member's partitions must be assigned in the first round: nobody has to revoke them."""
    previous = {"a": [(P, 0), (P, 2)], "b": [(P, 1), (P, 3)], "gone": [(P, 4), (P, 5)]}
    current = {"a": [(P, 2)], "b": [(P, 1), (P, 3)], "c": [(P, 4)]}
    assert cooperative_revoking(previous, current) == {(P, 0)}
    assert assignment_problems(current, {P: 6}, may_be_unassigned=cooperative_revoking(previous, current)) == [
        "payments/5 is subscribed but unassigned"]
