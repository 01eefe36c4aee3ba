"""`group.offsets_kept` (Spark): a consumer group resumes where it committed (KAFKA-BEHAVIOUR.md G10).

A member assigned a partition starts reading at the group's committed offset for it (OffsetFetch, then Fetch from
there; `auto.offset.reset` only where the group has none). The coordinator keeps a group's committed offsets while
the group has members, and expires them only once the group has stayed Empty for `offsets.retention.minutes`
(KIP-211; `GroupMetadata.removeExpiredOffsets`: measured from the moment it became Empty). So a member's first
poll of a newly assigned partition is at or past the last offset the group committed for it before the
assignment. Reading before it means the commit was lost: Kafka 3.1.0 and earlier expired the offsets of a group
rebalancing out of Empty by their commit time (KAFKA-13636, fixed in 2.8.2, 3.0.1, 3.1.1 and 3.2.0).

Judged per `assign` of a partition: the last `commit` of its group for it before the assignment, against the
member's first `poll` of it after the assignment (none: not judged). Spark reduces the polls and commits (the bulk
events) to those pairs; without Spark the same reduction runs over the rows (`_pairs_rows`); the judging is one.
Not a violation: the group observed Empty
(`group.state`) without a break for at least the retention before the assignment (a legitimate expiry), a
partition a permitted unclean election, or a power loss of every replica, truncated (its committed offset may lie
past the new log end, and the client resets: `checks.shared.permits`), and a commit whose own record a permitted
unclean election of the group's `__consumer_offsets` partition may have truncated between the commit and the read
(`permits.group_truncations`: the new coordinator loads the offsets that partition still holds,
`GroupMetadataManager.loadGroupsAndOffsets`; seen on 3.9.2 under explore, weak-isr seed 3: `__consumer_offsets/1`
elected broker 2 from outside the ISR [3], and billing's member then read orders/1 from offset 0, its commit of 396
gone).
"""

from __future__ import annotations

from typing import Any

from harness.model.coordinator import OFFSETS_TOPIC
from spark_analysis.checks.shared.common import as_partitions, plural, tp_label
from spark_analysis.checks.shared.damage import Depends
from spark_analysis.checks.shared.permits import (
    group_truncations,
    power_loss_truncations,
    settle,
    truncated_between,
    unclean_partitions,
)
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.result import CheckResult, failed, passed
from spark_analysis.session.local_frame import local_frame

RETENTION_MINUTES = 10080
"""Kafka's default `offsets.retention.minutes` (7 days since 2.0, KIP-186)."""
EVIDENCE_ROWS = 10


def _consumer(ev: Row) -> str:
    """The consumer an event is about: its `consumer` field, else its source (`consumer:<id>`)."""
    return str(ev.get("consumer") or str(ev.get("src") or "").removeprefix("consumer:"))


def _empty_since(states: list[Row], group: str, t: float) -> float | None:
    """When the group's latest run of Empty observations before `t` began (None: not Empty just before t)."""
    since: float | None = None
    for ev in states:
        if ev.get("group") != group or float(ev.get("t") or 0.0) > t:
            continue
        since = (since if since is not None else float(ev.get("t") or 0.0)) if ev.get("state") == "Empty" else None
    return since


Assignment = tuple[str, str, str, int, float, float]
"""(consumer, group, topic, partition, t of its assign, t of its next assign or revoke of the partition)."""
Pair = dict[str, Any]
"""An assignment with its member's first poll after it (pt, poll_offset, poll_seq) and its group's last commit
before it (ct, committed, commit_seq)."""


def _pairs_spark(ctx: CheckContext, rows: list[Assignment]) -> list[Pair]:
    """`Pair`s of the assignments that have both a poll and a commit, reduced in Spark (polls and commits are the
    bulk events)."""
    spark = ctx.spark
    assert spark is not None
    judged = local_frame(spark, rows, "consumer string, group string, topic string, partition long, "
                                      "t_assign double, t_end double")
    # SQL text: one JVM call for the plan (the Column API took about 290).
    out = spark.sql("""
        WITH firsts AS (
          SELECT j.consumer, j.`group`, j.topic, j.`partition`, j.t_assign,
            min(named_struct('pt', p.t, 'poll_offset', p.`offset`, 'poll_seq', p.seq)) AS p
          FROM {judged} j JOIN {polls} p
            ON p.consumer = j.consumer AND p.topic = j.topic AND p.`partition` = j.`partition`
          WHERE p.`offset` IS NOT NULL AND p.t > j.t_assign AND p.t < j.t_end
          GROUP BY j.consumer, j.`group`, j.topic, j.`partition`, j.t_assign
        ), lasts AS (
          SELECT j.consumer, j.`group`, j.topic, j.`partition`, j.t_assign,
            max(named_struct('ct', c.t, 'committed', c.`offset`, 'commit_seq', c.seq)) AS c
          FROM {judged} j JOIN {commits} c
            ON c.`group` = j.`group` AND c.topic = j.topic AND c.`partition` = j.`partition`
          WHERE c.`offset` IS NOT NULL AND c.t < j.t_assign
          GROUP BY j.consumer, j.`group`, j.topic, j.`partition`, j.t_assign
        )
        SELECT consumer, `group`, topic, `partition`, t_assign, p.pt AS pt, p.poll_offset AS poll_offset,
          p.poll_seq AS poll_seq, c.ct AS ct, c.committed AS committed, c.commit_seq AS commit_seq
        FROM firsts JOIN lasts USING (consumer, `group`, topic, `partition`, t_assign)""",
                    judged=judged, polls=ctx.df("poll"), commits=ctx.df("commit")).collect()
    return [r.asDict() for r in out]


def _pairs_rows(ctx: CheckContext, rows: list[Assignment]) -> list[Pair]:
    """The same `Pair`s over collected rows (the single-process evaluator: no Spark)."""
    polls, commits = ctx.rows("poll"), ctx.rows("commit")
    out: list[Pair] = []
    for consumer, group, topic, part, t_assign, t_end in rows:
        mine = [p for p in polls if p.get("offset") is not None and _consumer(p) == consumer
                and p.get("topic") == topic and p.get("partition") == part
                and t_assign < float(p.get("t") or 0.0) < t_end]
        theirs = [c for c in commits if c.get("offset") is not None and str(c.get("group")) == group
                  and c.get("topic") == topic and c.get("partition") == part and float(c.get("t") or 0.0) < t_assign]
        if not mine or not theirs:
            continue
        p = min(mine, key=lambda e: (float(e["t"]), int(e["offset"]), int(e.get("seq") or 0)))
        c = max(theirs, key=lambda e: (float(e["t"]), int(e["offset"]), int(e.get("seq") or 0)))
        out.append({"consumer": consumer, "group": group, "topic": topic, "partition": part, "t_assign": t_assign,
                    "pt": float(p["t"]), "poll_offset": int(p["offset"]), "poll_seq": p.get("seq"),
                    "ct": float(c["t"]), "committed": int(c["offset"]), "commit_seq": c.get("seq")})
    return out


class OffsetsKept:
    id = "group.offsets_kept"
    family = "group"
    needs = frozenset({"commit", "poll", "assign"})

    # a lost poll line makes a member's first read later (higher), a lost commit line its committed offset lower:
    # neither can make a read look before the committed offset
    damage = Depends(frozenset({"commit", "poll", "assign", "revoke"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        retention_s = 60.0 * ctx.run.broker_setting("offsets.retention.minutes", RETENTION_MINUTES)
        states = sorted(ctx.rows("group.state"), key=lambda e: float(e.get("t") or 0.0))
        assigns = sorted(ctx.rows("assign", "revoke"), key=lambda e: float(e.get("t") or 0.0))
        rows: list[Assignment] = []
        expired = 0
        for i, ev in enumerate(assigns):
            if ev.get("type") != "assign":
                continue
            consumer, group, t = _consumer(ev), str(ev.get("group")), float(ev.get("t") or 0.0)
            since = _empty_since(states, group, t)
            if since is not None and t - since >= retention_s:
                expired += 1
                continue
            for topic, part in as_partitions(ev.get("partitions")):
                end = next((float(o.get("t") or 0.0) for o in assigns[i + 1:] if _consumer(o) == consumer
                            and (topic, part) in as_partitions(o.get("partitions"))), ctx.end_t + 1.0)
                rows.append((consumer, group, topic, part, t, end))
        if not rows:
            return passed(self.id, "no partition was assigned to a group member (nothing to judge)",
                          {"assignments": 0, "expired_legitimately": expired})
        pairs = _pairs_spark(ctx, rows) if ctx.spark is not None else _pairs_rows(ctx, rows)
        bad = [r for r in pairs if int(r["poll_offset"]) < int(r["committed"])]
        metrics: dict[str, Any] = {"assignments_judged": len(pairs), "rewound": len(bad),
                                   "expired_legitimately": expired, "retention_s": retention_s}
        if not bad:
            return passed(self.id, f"every member resumed at or past its group's committed offset "
                                   f"({plural(len(pairs), 'assignment')} judged)", metrics)
        unclean = {**power_loss_truncations(ctx), **unclean_partitions(ctx)}
        cuts = {g: group_truncations(ctx, g) for g in {str(r["group"]) for r in bad}}

        def permit(r: Pair) -> str | None:
            data = unclean.get((r["topic"], int(r["partition"])))
            cut = truncated_between(cuts[str(r["group"])], float(r["ct"]), float(r["pt"]))
            return data or (None if cut is None else f"{cut.reason}, the {OFFSETS_TOPIC} partition that stored "
                                                     f"{r['group']}'s commit")

        permits = [permit(r) for r in bad]
        return settle(self._failed(ctx, bad, metrics), [(p, 1) for p in permits],
                      ("rewound assignment", "rewound assignments"),
                      lambda _n: self._failed(ctx, [r for r, p in zip(bad, permits, strict=True) if p is None],
                                              metrics))

    def _failed(self, ctx: CheckContext, bad: list[Pair], metrics: dict[str, Any]) -> CheckResult:
        bad = sorted(bad, key=lambda r: float(r["pt"]))
        ev: list[dict[str, Any]] = []
        for r in bad[:EVIDENCE_ROWS]:
            label = tp_label(r["topic"], r["partition"])
            ev.append({"type": "commit", "seq": r["commit_seq"], "t": r["ct"], "group": r["group"],
                       "topic": r["topic"], "partition": r["partition"], "offset": r["committed"]})
            ev.append({"type": "poll", "seq": r["poll_seq"], "t": r["pt"], "consumer": r["consumer"],
                       "group": r["group"], "topic": r["topic"], "partition": r["partition"],
                       "offset": r["poll_offset"],
                       "problem": f"{r['consumer']} assigned {label} at {float(r['t_assign']):.3f}s read from offset "
                                  f"{r['poll_offset']}, before {r['group']}'s committed offset {r['committed']}"})
        first = bad[0]
        fault = ctx.faults.active_at(float(first["pt"]))
        summary = (f"{plural(len(bad), 'assignment')} read before the group's committed offset, e.g. "
                   f"{ev[1]['problem']}" + (f" during {fault.label}" if fault else ""))
        return failed(self.id, summary, ev, metrics, fault.label if fault else None)
