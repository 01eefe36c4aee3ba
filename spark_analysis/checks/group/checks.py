"""Consumer-group checks (KAFKA-BEHAVIOUR.md §7.8-§7.11).

- `group.exclusive_ownership`: within one generation no partition is held by two members (holdings
  reconstructed from assign/revoke; a generation numbered again after a permitted truncation of the group's
  coordinator partition is judged per incarnation, `holdings.Generation`); once the group is Stable with exactly
  the members that reported assigns for that generation, every partition of their topics is held by one of them.
- `group.assignment_conforms`: the holdings of a generation equal `harness.model.assignors`'s
  range/roundrobin result for the protocol the group elected (`group.state.protocol`), or, for
  sticky/cooperative-sticky, are valid, balanced and break no stickiness rule of the model; a KIP-848 group
  (`group.protocol=consumer`) is judged on its Stable snapshots against the server-side assignor (`modern.py`).
  Both judge a generation against the topic's partitions before an `add_partitions` grew it, until the
  generation holds one of the new partitions (`holdings.generation_counts`).
- `group.coordinator_conforms`: the coordinator in `group.state` is the leader of the group's
  `__consumer_offsets` partition (`harness.model.coordinator.coordinator_partition`) at that time,
  within a grace for observer skew.
- `group.commit_monotonic` (Spark): a group's committed offset for a partition never goes back
  within one generation; the verdict is `checks.group.judge`'s, which the in-process evaluator calls with the
  same facts.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.model.coordinator import OFFSETS_TOPIC
from spark_analysis.checks.group.holdings import (
    Generation,
    Holding,
    base_partition_counts,
    generation_counts,
    holdings,
)
from spark_analysis.checks.group.judge import (
    COMMIT_FIELDS,
    SAMPLE,
    CommitOrder,
    CommitRegressions,
    RegressedCommit,
    judge_commit_monotonic,
)
from spark_analysis.checks.group.modern import judge_modern, modern_groups
from spark_analysis.checks.group.sticky import balance_and_stickiness, first_issue
from spark_analysis.checks.shared.common import as_members, evidence, plural, summary_with_fault, tp_label
from spark_analysis.checks.shared.damage import Depends
from spark_analysis.checks.shared.frames import topic_hash_sql, weighed
from spark_analysis.checks.shared.permits import group_truncations, truncated_between, truncation_permit
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed, unknown

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

COORDINATOR_GRACE_S = 10.0


def _stable_members(ctx: CheckContext) -> dict[tuple[str, int], list[str]]:
    out: dict[tuple[str, int], list[str]] = {}
    for ev in ctx.rows("group.state"):
        if ev.get("state") == "Stable" and ev.get("generation") is not None and ev.get("members") is not None:
            out[(str(ev.get("group")), int(ev["generation"]))] = as_members(ev["members"])
    return out


def _grown_at(ctx: CheckContext) -> dict[str, float]:
    """When each topic was first grown by an `add_partitions` operation."""
    out: dict[str, float] = {}
    for w in ctx.operations.windows:
        if w.action == "add_partitions" and w.topic is not None:
            out[w.topic] = min(out.get(w.topic, w.start), w.start)
    return out


def _holdings(ctx: CheckContext) -> dict[Generation, dict[str, Holding]]:
    """The holdings per generation, a generation numbered again after a permitted truncation of the group's
    coordinator partition split into its incarnations (`permits.group_truncations`)."""
    return holdings(ctx.rows("assign", "revoke"),
                    lambda group, stored, read: truncated_between(group_truncations(ctx, group), stored, read)
                    is not None)


def _numbered_again(held: dict[Generation, dict[str, Holding]]) -> int:
    return sum(1 for key in held if key.incarnation)


def _apart(held: dict[Generation, dict[str, Holding]]) -> str:
    n = _numbered_again(held)
    return f" ({n} numbered again after a permitted truncation of its coordinator's partition, judged apart)" if n \
        else ""


class ExclusiveOwnership:
    id = "group.exclusive_ownership"
    family = "group"
    needs = frozenset({"assign"})

    def run(self, ctx: CheckContext) -> CheckResult:
        held = _holdings(ctx)
        base = base_partition_counts(ctx.rows("partition.state"), _grown_at(ctx))
        stable = _stable_members(ctx)
        bad: list[dict[str, Any]] = []
        covered = 0
        for key, members in sorted(held.items()):
            group, gen = key.group, key.generation
            counts = generation_counts(base, members.values())
            owners: dict[tuple[str, int], list[Holding]] = defaultdict(list)
            for h in members.values():
                for tp in h.partitions:
                    owners[tp].append(h)
            for tp, hs in sorted(owners.items()):
                if len(hs) > 1:
                    names = ", ".join(h.member for h in hs)
                    bad += [evidence(h.event, problem=f"{tp_label(*tp)} held by {len(hs)} members ({names}) "
                                                      f"in {key.label()} of {group}") for h in hs]
            if not key.incarnation and (group, gen) in stable and sorted(stable[(group, gen)]) == sorted(members):
                covered += 1
                topics = {t for h in members.values() for t, _ in h.partitions}
                unowned = [(t, p) for t in sorted(topics) for p in range(counts.get(t, 0)) if (t, p) not in owners]
                if unowned:
                    last = max(members.values(), key=lambda h: int(h.event.get("seq") or 0))
                    bad.append(evidence(last.event, problem=f"Stable generation {gen} of {group} leaves "
                                                            f"{', '.join(tp_label(*x) for x in unowned[:5])} unowned"))
        metrics = {"generations": len(held), "generations_checked_complete": covered, "violations": len(bad),
                   "numbered_again": _numbered_again(held)}
        if bad:
            summary, fault = summary_with_fault(ctx, f"{bad[0]['problem']}" + (f" (+{len(bad) - 1} more rows)"
                                                                          if len(bad) > 1 else ""),
                                                float(bad[0].get("t") or 0.0))
            return failed(self.id, summary, bad, metrics, fault)
        return passed(self.id, f"no partition held twice in any of {plural(len(held), 'generation')}"
                               f"{_apart(held)}", metrics)


def _protocols(ctx: CheckContext) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for ev in ctx.rows("group.state"):
        if ev.get("protocol") and ev.get("generation") is not None:
            out[(str(ev.get("group")), int(ev["generation"]))] = str(ev["protocol"]).lower()
    return out


@dataclass(frozen=True, slots=True)
class StableSeen:
    """A Stable group.state naming a protocol: when, which protocol, and its members (None: not recorded)."""

    t: float
    protocol: str
    members: tuple[str, ...] | None


def _stable_protocols(ctx: CheckContext) -> dict[str, list[StableSeen]]:
    """Per group, every Stable group.state naming a protocol, in time order."""
    out: dict[str, list[StableSeen]] = {}
    for ev in ctx.rows("group.state"):
        if ev.get("state") == "Stable" and ev.get("protocol"):
            members = None if ev.get("members") is None else tuple(sorted(as_members(ev["members"])))
            out.setdefault(str(ev.get("group")), []).append(
                StableSeen(float(ev.get("t") or 0.0), str(ev["protocol"]).lower(), members))
    for items in out.values():
        items.sort(key=lambda s: s.t)
    return out


STABLE_BEFORE_ASSIGN_S = 2.0
"""The coordinator turns a group Stable when SyncGroup completes, a moment before the members' assignment
callbacks run, so the Admin observer (polling every 0.5 s) may see Stable between two members' `assign`
events, or just before the first (seen: 0.2 s before the last)."""


def _stable_between(timeline: list[StableSeen], after: float, before: float) -> StableSeen | None:
    """The first Stable state seen in [after, before): where the Admin API reports no generation, the
    generation whose assignments were just delivered is the one that became Stable."""
    return next((s for s in timeline if after <= s.t < before), None)


class AssignmentConforms:
    id = "group.assignment_conforms"
    family = "group"
    needs = frozenset({"assign", "group.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        from harness.model import assignors

        held = _holdings(ctx)
        base = base_partition_counts(ctx.rows("partition.state"), _grown_at(ctx))
        protocols = _protocols(ctx)
        by_time = _stable_protocols(ctx)
        first_assign: dict[Generation, float] = {}
        for key, members in held.items():
            first_assign[key] = min(float(h.event.get("t") or 0.0) for h in members.values())
        stable = _stable_members(ctx)
        modern = modern_groups(ctx)
        snapshots, bad = judge_modern(ctx, _grown_at(ctx)) if modern else (0, [])
        judged = partial = 0
        previous: dict[str, dict[str, list[tuple[str, int]]]] = {}
        for key, members in sorted(held.items()):
            group, gen = key.group, key.generation
            if group in modern:
                continue  # members' epochs are no shared generation: judged on its Stable snapshots (modern.py)
            current = {m: sorted(h.partitions) for m, h in members.items()}
            prev = previous.get(group)
            previous[group] = current
            protocol = protocols.get((group, gen))
            exact = None if key.incarnation else stable.get((group, gen))
            listed: tuple[str, ...] | None = None
            if protocol is None:
                t_prev = max((float(h.event.get("t") or 0.0) for k, ms in held.items() if k.group == group and k < key
                              for h in ms.values()), default=float("-inf"))
                t_from = max(t_prev, first_assign[key] - STABLE_BEFORE_ASSIGN_S)
                t_next = min((t for k, t in first_assign.items() if k.group == group and k > key), default=float("inf"))
                seen = _stable_between(by_time.get(group, []), t_from, t_next)
                if seen is not None:
                    protocol, listed = seen.protocol, seen.members
            if protocol is None:
                continue
            # Judged only where every member the coordinator reported recorded its assignment in this generation:
            # a member whose callback ran late, or carried no generation (librdkafka had dropped it), would
            # otherwise leave its partitions looking unassigned. (A Stable seen by time may be the previous
            # generation's: a member that joined since is no sign of a gap, a member missing from the record is.)
            if ((exact is not None and sorted(exact) != sorted(members))
                    or (listed is not None and not set(listed) <= set(members))):
                partial += 1  # the next generation's cooperative round still knows what the unrecorded held
                previous[group] = {**(prev or {}), **current}
                continue
            topics = sorted({t for ps in current.values() for t, _ in ps})
            counts = generation_counts(base, members.values())
            parts = {t: counts[t] for t in topics if t in counts}
            last = max(members.values(), key=lambda h: int(h.event.get("seq") or 0)).event
            problem = None
            if protocol in ("range", "roundrobin"):
                fn = assignors.range_assign if protocol == "range" else assignors.roundrobin_assign
                want = {m: sorted(v) for m, v in fn(sorted(current), parts).items()}
                judged += 1
                if want != current:
                    diff = [m for m in sorted(current) if want.get(m) != current[m]]
                    m0 = diff[0]
                    held_now = [tp_label(*x) for x in current[m0]]
                    model = [tp_label(*x) for x in want.get(m0, [])]
                    problem = f"{group} {key.label()} ({protocol}): {m0} holds {held_now}, model assigns {model}"
            elif "sticky" in protocol:
                judged += 1
                # A cooperative first round (KIP-429) leaves the partitions it takes from staying members
                # unassigned, and so unbalanced; the follow-up generation is judged whole.
                revoking = (assignors.cooperative_revoking(prev, current)
                            if prev is not None and protocol == "cooperative-sticky" else frozenset())
                issues = list(assignors.assignment_problems(current, parts, may_be_unassigned=revoking))
                issues += balance_and_stickiness(prev, current, judge_balance=not revoking)
                if issues:
                    problem = first_issue(f"{group} {key.label()} ({protocol})", issues)
            if problem:
                bad.append(evidence(last, protocol=protocol, problem=problem,
                                    assignment={m: [tp_label(*x) for x in v] for m, v in current.items()}))
        metrics = {"generations": len(held), "judged": judged, "members_unrecorded": partial, "violations": len(bad),
                   "numbered_again": _numbered_again(held)}
        if modern:
            metrics["modern_snapshots"] = snapshots
        if bad:
            summary, fault = summary_with_fault(
                ctx, f"{plural(len(bad), 'assignment')} off the strategy: {bad[0]['problem']}",
                float(bad[0].get("t") or 0.0))
            return failed(self.id, summary, bad, metrics, fault)
        if judged + snapshots == 0:
            return unknown(self.id, "no generation with a known protocol and a complete assignment", metrics)
        what = [plural(judged, "generation")] if judged else []
        what += [plural(snapshots, "KIP-848 Stable assignment")] if snapshots else []
        return passed(self.id, f"{' and '.join(what)} assigned as the elected strategy prescribes{_apart(held)}",
                      metrics)


class CoordinatorConforms:
    id = "group.coordinator_conforms"
    family = "group"
    needs = frozenset({"group.state", "partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        from harness.model.coordinator import coordinator_partition

        offsets = [e for e in ctx.rows("partition.state") if e.get("topic") == OFFSETS_TOPIC]
        zk = [e for e in offsets if e.get("src") == "zk"]
        offsets = zk or offsets
        if not offsets:
            return unknown(self.id, f"no partition.state events for {OFFSETS_TOPIC}")
        n = ctx.run.offsets_topic_partitions or (max(int(e["partition"]) for e in offsets) + 1)
        timeline: dict[int, tuple[list[float], list[int]]] = {}
        for e in offsets:
            ts, ls = timeline.setdefault(int(e["partition"]), ([], []))
            ts.append(float(e.get("t") or 0.0))
            ls.append(int(e["leader"]) if e.get("leader") is not None else -1)
        judged = 0
        bad: list[dict[str, Any]] = []
        for ev in ctx.rows("group.state"):
            coord = ev.get("coordinator")
            if coord is None or coord < 0 or ev.get("group") is None:
                continue
            p = coordinator_partition(str(ev["group"]), n)
            if p not in timeline:
                continue
            ts, ls = timeline[p]
            t = float(ev.get("t") or 0.0)
            i0 = max(0, bisect.bisect_right(ts, t - COORDINATOR_GRACE_S) - 1)
            i1 = bisect.bisect_right(ts, t + COORDINATOR_GRACE_S)
            candidates = set(ls[i0:i1])
            judged += 1
            if coord not in candidates:
                at = ls[max(0, bisect.bisect_right(ts, t) - 1)]
                bad.append(evidence(ev, expected=at, problem=f"group {ev['group']} coordinated by {coord}, but "
                                                             f"{OFFSETS_TOPIC}/{p} is led by {at}"))
        metrics = {"group_states": judged, "offsets_topic_partitions": n, "violations": len(bad)}
        if bad:
            summary, fault = summary_with_fault(ctx, f"{plural(len(bad), 'observation')} with the wrong coordinator: "
                                                f"{bad[0]['problem']}", float(bad[0].get("t") or 0.0))
            return failed(self.id, summary, bad, metrics, fault)
        if judged == 0:
            return unknown(self.id, "no group.state with a coordinator whose offsets partition was observed", metrics)
        return passed(self.id, f"coordinator matched the {OFFSETS_TOPIC} leader in {plural(judged, 'observation')}",
                      metrics)


class CommitMonotonic:
    id = "group.commit_monotonic"
    family = "group"
    frames = True
    needs = frozenset({"commit"})
    # a lost commit line hides a regression: a pass could be wrong, a failure (two intact commits) could not
    damage = Depends(frozenset({"commit"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_commit_monotonic(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> CommitOrder:
        assert ctx.spark is not None
        fields = ", ".join(f"`{f}`" for f in COMMIT_FIELDS)
        bad = ctx.spark.sql(f"""
            SELECT *, {topic_hash_sql()} AS topic_h FROM (
              SELECT {fields}, lag(`offset`) OVER w AS prev_offset, lag(seq) OVER w AS prev_seq,
                lag(member) OVER w AS prev_member
              FROM {{commits}} WHERE `offset` IS NOT NULL
              WINDOW w AS (PARTITION BY `group`, topic, `partition`, generation ORDER BY seq))
            WHERE `offset` < prev_offset""", commits=ctx.df("commit"))  # SQL text: one JVM call for the plan
        total = ctx.count("commit")
        if not bad.limit(1).collect():
            return CommitOrder(total)

        def sampled(rows: DataFrame, n: int) -> CommitRegressions:
            sample = rows.orderBy("seq").limit(SAMPLE).collect()
            return CommitRegressions(total, n, [
                RegressedCommit({k: r[k] for k in COMMIT_FIELDS}, int(r["prev_seq"]), r["prev_member"],
                                int(r["prev_offset"])) for r in sample])

        return CommitOrder(total, weighed(ctx, bad, truncation_permit, sampled, value=None))
