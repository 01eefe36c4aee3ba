"""KIP-848 consumer groups (`group.protocol=consumer`; `group.state`'s `group_type` is `consumer`), judged for
`group.assignment_conforms` (KAFKA-BEHAVIOUR.md §5, "Server-side assignors").

The coordinator computes a target assignment with a server-side assignor and each member converges to it on its
own heartbeats, revoking before another member is given what it held. Members have epochs of their own, not one
generation they share, so a modern group is judged on what the Admin observer saw when the group was Stable
(ConsumerGroupDescribe: Stable once every member has converged, so each member's current assignment is the
target):

- every Stable snapshot: every partition of the assigned topics owned by exactly one member;
- `uniform` (the default assignor; `UniformHomogeneousAssignmentBuilder` for equal subscriptions: balance first,
  then stickiness): balanced (counts differ by at most one) and, against the group's previous Stable snapshot, no
  stickiness breach (`harness.model.assignors.sticky_violations`: a partition moved to a member that ends with
  more, or swapped for another). Stickiness binds one target to the next, so it is judged only when the previous
  snapshot had the same members and no member was fenced (`revoke` with lost) or seen joining or leaving in
  between;
- `range` (the server-side `RangeAssignor`): per topic, contiguous ranges over the members sorted by member id,
  the first P % C members getting one more: `harness.model.assignors.range_assign`.
A snapshot whose members the observer could not describe, or with no members, is not judged.
"""

from __future__ import annotations

import json
from typing import Any

from spark_analysis.checks.group.holdings import base_partition_counts
from spark_analysis.checks.group.sticky import balance_and_stickiness, first_issue
from spark_analysis.checks.shared.common import evidence, member_id, tp_label
from spark_analysis.facts.context import CheckContext, Row

MODERN = "consumer"
"""`group.state.group_type` of a KIP-848 group."""


def modern_groups(ctx: CheckContext) -> frozenset[str]:
    """The groups the observer saw as KIP-848 consumer groups."""
    return frozenset(str(e.get("group")) for e in ctx.rows("group.state") if e.get("group_type") == MODERN)


def _snapshot(ev: Row) -> dict[str, list[tuple[str, int]]] | None:
    members = ev.get("members")
    if not isinstance(members, list) or not members:
        return None
    out: dict[str, list[tuple[str, int]]] = {}
    for item in members:
        m = json.loads(item) if isinstance(item, str) else item  # Spark's rows hold each member as JSON text
        if not isinstance(m, dict) or not m.get("member_id") or m.get("assignment") is None:
            return None
        out[str(m["member_id"])] = sorted((str(t), int(p)) for t, p in m["assignment"])
    return out


def judge_modern(ctx: CheckContext, grown_at: dict[str, float]) -> tuple[int, list[dict[str, Any]]]:
    """(snapshots judged, evidence of each that breaks its assignor's rules)."""
    from harness.model import assignors

    base = base_partition_counts(ctx.rows("partition.state"), grown_at)
    churn = _churn(ctx)
    judged = 0
    bad: list[dict[str, Any]] = []
    previous: dict[str, tuple[float, dict[str, list[tuple[str, int]]]]] = {}
    for ev in sorted(ctx.rows("group.state"), key=lambda e: float(e.get("t") or 0.0)):
        if ev.get("group_type") != MODERN or ev.get("state") != "Stable":
            continue
        group, protocol = str(ev.get("group")), str(ev.get("protocol") or "").lower()
        current, t = _snapshot(ev), float(ev.get("t") or 0.0)
        if current is None or protocol not in ("uniform", "range"):
            continue
        last = previous.get(group)
        if last is not None and last[1] == current:
            continue  # the same Stable assignment seen again: judged once
        previous[group] = (t, current)
        # stickiness holds from one target to the next: only against a Stable snapshot with the same members and
        # no member fenced or gone in between (then the targets between them were not seen)
        prev = last[1] if last is not None and set(last[1]) == set(current) and not any(
            last[0] < c < t for c in churn.get(group, ())) else None
        topics = sorted({t for tps in current.values() for t, _ in tps})
        parts = {t: max([base.get(t, 0)] + [p + 1 for tps in current.values() for tt, p in tps if tt == t])
                 for t in topics}
        judged += 1
        issues = list(assignors.assignment_problems(current, parts))
        if protocol == "range":
            want = {m: sorted(v) for m, v in assignors.range_assign(sorted(current), parts).items()}
            issues += [f"{m} holds {[tp_label(*x) for x in current[m]]}, the range assignor gives "
                       f"{[tp_label(*x) for x in want.get(m, [])]}"
                       for m in sorted(current) if want.get(m) != current[m]]
        else:
            issues += balance_and_stickiness(prev, current)
        if issues:
            problem = first_issue(f"{group} Stable at {t:.1f}s ({protocol}, KIP-848)", issues)
            bad.append(evidence(ev, protocol=protocol, problem=problem,
                                assignment={m: [tp_label(*x) for x in v] for m, v in current.items()}))
    return judged, bad


def _churn(ctx: CheckContext) -> dict[str, list[float]]:
    """Per group, when a member lost its partitions (fenced: `revoke` with lost) or the observer saw another set
    of members than the one before: the coordinator computed targets in between that no snapshot shows."""
    out: dict[str, list[float]] = {}
    for ev in ctx.rows("revoke"):
        if ev.get("lost"):
            out.setdefault(str(ev.get("group")), []).append(float(ev.get("t") or 0.0))
    seen: dict[str, frozenset[str]] = {}
    for ev in sorted(ctx.rows("group.state"), key=lambda e: float(e.get("t") or 0.0)):
        group = str(ev.get("group"))
        members = frozenset(member_id(m) for m in (ev.get("members") or ()))
        if group in seen and seen[group] != members:
            out.setdefault(group, []).append(float(ev.get("t") or 0.0))
        seen[group] = members
    return out
