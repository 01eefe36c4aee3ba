"""`group.generation_monotonic` (KAFKA-BEHAVIOUR.md G2, G11): per observer and group, the generation in `group.state`
never decreases, and two Stable observations with different member sets never share a generation; per consumer, the
generation of its assigns strictly increases (each assignment ends a rebalance, and each rebalance is a new
generation: the same generation twice is a reused generation). In a KIP-848 group the generation is the member's
epoch, which never decreases but may carry several assignments: a partition its previous owner has not released yet
is added later in the same epoch (the coordinator's `CurrentAssignmentBuilder`, state UNRELEASED_PARTITIONS).

A generation taken back or numbered again across a permitted unclean election of the group's coordinator partition
(`permits.group_truncations`: the coordinator's stored record of it was truncated) is reported as permitted.
"""

from __future__ import annotations

from collections.abc import Iterator

from spark_analysis.checks.group.modern import modern_groups
from spark_analysis.checks.shared.common import as_members, evidence, plural, summary_with_fault
from spark_analysis.checks.shared.permits import group_truncations, settle, tally, truncated_between
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.result import CheckResult, failed, passed, unknown


class GenerationMonotonic:
    id = "group.generation_monotonic"
    family = "group"
    needs: frozenset[str] = frozenset()

    def run(self, ctx: CheckContext) -> CheckResult:
        states = [e for e in ctx.rows("group.state") if e.get("generation") is not None]
        assigns = [e for e in ctx.rows("assign") if e.get("generation") is not None]
        if not states and not assigns:
            return unknown(self.id, "no group.state or assign event carries a generation")
        all_states = ctx.rows("group.state")
        found: list[tuple[Row, Row, str]] = []  # (the row before, the row, what is wrong)
        stable: dict[tuple[str, str], Row] = {}
        for prev, ev in _each_after(states):
            if prev is not None and ev["generation"] < prev["generation"]:
                found.append((prev, ev, f"group {ev.get('group')} generation went back "
                                        f"{prev['generation']} -> {ev['generation']}"))
            if ev.get("state") == "Stable":
                key = (str(ev.get("src")), str(ev.get("group")))
                ps = stable.get(key)
                if (ps is not None and ps["generation"] == ev["generation"] and ev.get("members") is not None
                        and ps.get("members") is not None
                        and sorted(as_members(ps["members"])) != sorted(as_members(ev["members"]))):
                    found.append((ps, ev, f"group {ev.get('group')} members changed in generation "
                                          f"{ev['generation']} without a rebalance"))
                stable[key] = ev
        modern = modern_groups(ctx)
        for prev, ev in _each_after(assigns):
            if prev is not None and ev["generation"] < prev["generation"]:
                found.append((prev, ev, f"{ev.get('src')} assigned in generation {ev['generation']} after "
                                        f"{prev['generation']}"))
            elif (prev is not None and ev["generation"] == prev["generation"] and str(ev.get("group")) not in modern
                  and not _current_generation_again(prev, ev, all_states)):
                found.append((prev, ev, f"{ev.get('src')} assigned {_parts(ev)} in generation {ev['generation']}, "
                                        f"which gave it {_parts(prev)} (a rebalance without a new generation: "
                                        "generation reused)"))
        gens = {(str(e.get("group")), int(e["generation"])) for e in states + assigns}
        metrics = {"group_states": len(states), "assigns": len(assigns), "generations": len(gens)}
        if not found:
            return passed(self.id, f"generations only increased ({plural(len(gens), 'group generation')})",
                          {**metrics, "violations": 0})
        # a generation taken back or numbered again across a permitted truncation of the group's stored record
        permits = [_truncation_between(ctx, prev, ev) for prev, ev, _ in found]

        def failure(pairs: list[tuple[Row, Row, str]]) -> CheckResult:
            bad = [row for prev, ev, problem in pairs for row in (evidence(prev), evidence(ev, problem=problem))]
            summary, fault = summary_with_fault(ctx, f"{plural(len(pairs), 'violation')}: {pairs[0][2]}",
                                                float(pairs[0][1].get("t") or 0.0))
            return failed(self.id, summary, bad, {**metrics, "violations": len(pairs)}, fault)

        violations = [f for f, why in zip(found, permits, strict=True) if why is None]
        return settle(failure(found), tally(permits), ("generation taken back or numbered again",
                                                       "generations taken back or numbered again"),
                      lambda _n: failure(violations))


def _each_after(rows: list[Row]) -> Iterator[tuple[Row | None, Row]]:
    """Each row with the one before it from the same source (observer or consumer) and group (None: the first)."""
    last: dict[tuple[str, str], Row] = {}
    for ev in rows:
        key = (str(ev.get("src")), str(ev.get("group")))
        yield last.get(key), ev
        last[key] = ev


def _truncation_between(ctx: CheckContext, prev: Row, ev: Row) -> str | None:
    """The permitted truncation of the group's coordinator partition between two of its rows, if any."""
    cut = truncated_between(group_truncations(ctx, str(ev.get("group"))), float(prev.get("t") or 0.0),
                            float(ev.get("t") or 0.0))
    return None if cut is None else cut.reason


def _current_generation_again(prev: Row, ev: Row, states: list[Row]) -> bool:
    """Whether `ev`, a second assignment of a member under `prev`'s generation, is Kafka handing a rejoining
    follower the current generation again rather than a rebalance that kept its generation: the same member and
    partitions, and either no rebalance of the group observed in between (a follower that rejoins a Stable group
    with unchanged metadata gets the current generation and, from SyncGroup, its assignment:
    GroupCoordinator.doJoinGroup, GroupMetadataManager.classicGroupJoinExistingMember, "for followers with no
    actual change to their metadata, just return group information for the current generation") or a new
    coordinator in between (it loads the group's last stored generation; the rebalance in flight at the old one is
    lost: seen on 4.4.0, hunt kraft schedule 27, the coordinator killed mid-rebalance)."""
    if prev.get("member") != ev.get("member") or _parts(prev) != _parts(ev):
        return False
    t0, t1 = float(prev.get("t") or 0.0), float(ev.get("t") or 0.0)
    group = prev.get("group")
    mine = [st for st in states if st.get("group") == group]
    between = [st for st in mine if t0 < float(st.get("t") or 0.0) <= t1]
    if not any(st.get("state") in ("PreparingRebalance", "CompletingRebalance") for st in between):
        return True
    before = [st.get("coordinator") for st in mine if float(st.get("t") or 0.0) <= t0]
    return bool(before) and any(st.get("coordinator") != before[-1] for st in between)


def _parts(ev: Row) -> list[str]:
    return sorted(f"{t}/{p}" for t, p in (ev.get("partitions") or ()))
