"""The balance-then-stickiness rule that client-side sticky assignors (sticky, cooperative-sticky: KAFKA-BEHAVIOUR.md
A3) and the coordinator's `uniform` assignor (KIP-848: A5) share, as the problems `group.assignment_conforms`
reports; and how it words a list of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from spark_analysis.checks.shared.common import tp_label

Ownership = Mapping[str, Sequence[tuple[str, int]]]


def balance_and_stickiness(prev: Ownership | None, current: Ownership, *, judge_balance: bool = True) -> list[str]:
    """Unbalanced counts (unless `judge_balance` is off: a cooperative first round), then every stickiness breach
    against `prev` (`harness.model.assignors.sticky_violations`), as words."""
    from harness.model import assignors

    issues: list[str] = []
    if judge_balance and not assignors.is_balanced(current):
        issues.append("unbalanced: " + ", ".join(f"{m}={len(v)}" for m, v in sorted(current.items())))
    if prev is not None:
        issues += [f"{v.kind}: {tp_label(*v.partition)} moved {v.from_member} -> {v.to_member}"
                   for v in assignors.sticky_violations(prev, current)]
    return issues


def first_issue(where: str, issues: Sequence[str]) -> str:
    """`<where>: <first issue> (+N more)`."""
    return f"{where}: {issues[0]}" + (f" (+{len(issues) - 1} more)" if len(issues) > 1 else "")
