"""Consumer checks (Jepsen's Kafka anomalies), in Spark, per consumer and partition within one
assignment epoch (an `assign` or `revoke` of the partition by that consumer starts a new epoch).

- `consumer.nonmonotonic_poll`: a consumer polls offset o2 after o1 with o2 <= o1.
- `consumer.poll_skip`: a consumer polls o2 right after o1 while some offset strictly between them
  is known to hold a record (acked or polled by anyone): the consumer skipped it. Gaps no one
  ever saw a record in (compaction, transaction markers, unacked writes) are not skips. For a
  read_committed consumer (`isolation` read_committed, or none recorded) a record of an aborted
  transaction, or of one whose outcome is unknown, is no record it must return: an offset known to
  hold only such records is no skip for it (`spark_analysis.facts.transactions`).

Both checks gather their facts over `frames.poll_pairs` here and leave the verdict to `checks.consumer.judge`,
which the in-process evaluator calls with the same facts.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.consumer.judge import (
    EVIDENCE_PAIRS,
    NonmonotonicPolls,
    PollPair,
    PollPairs,
    PollSkips,
    judge_nonmonotonic_poll,
    judge_poll_skip,
)
from spark_analysis.checks.shared.damage import TXN_LINES, Depends
from spark_analysis.checks.shared.frames import events_by_seq, poll_pairs, topic_hash, weighed
from spark_analysis.checks.shared.permits import truncation_permit
from spark_analysis.checks.shared.txn_frames import hidden_values
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult


def _pairs(ctx: CheckContext, df: DataFrame, n: int) -> PollPairs:
    """The first EVIDENCE_PAIRS pairs of `df` by seq, and their polls."""
    sample = [PollPair(int(r["seq"]), int(r["prev_seq"]), int(r["offset"]), int(r["prev_offset"]),
                       int(r["next_known"]) if "next_known" in df.columns and r["next_known"] is not None else None)
              for r in df.orderBy("seq").limit(EVIDENCE_PAIRS).collect()]
    polls = events_by_seq(ctx, [r.seq for r in sample] + [r.prev_seq for r in sample])
    return PollPairs(n, sample, polls)


class NonmonotonicPoll:
    id = "consumer.nonmonotonic_poll"
    family = "consumer"
    frames = True
    needs = frozenset({"poll"})

    damage = Depends(frozenset({"poll", "assign", "revoke"}), frozenset({"assign", "revoke"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_nonmonotonic_poll(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> NonmonotonicPolls:
        bad = poll_pairs(ctx).where(F.col("offset") <= F.col("prev_offset"))
        polls = ctx.count("poll")
        if not bad.limit(1).collect():
            return NonmonotonicPolls(polls)
        return NonmonotonicPolls(polls, weighed(ctx, bad, truncation_permit, lambda df, n: _pairs(ctx, df, n),
                                                value=None))


class PollSkip:
    id = "consumer.poll_skip"
    family = "consumer"
    frames = True
    needs = frozenset({"poll"})

    damage = Depends(frozenset({"poll", "ack", "assign", "revoke"}) | TXN_LINES,
                     frozenset({"poll", "assign", "revoke"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_poll_skip(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> PollSkips:
        gaps = poll_pairs(ctx).where(F.col("offset") > F.col("prev_offset") + 1)
        polls = ctx.count("poll")
        per_tp = gaps.groupBy("topic_h", "partition").agg(F.count(F.lit(1)).alias("n")).collect()
        tps = [(r["topic_h"], r["partition"]) for r in per_tp]
        n_gaps = sum(int(r["n"]) for r in per_tp)  # the gaps counted with their partitions: one job, not two
        if not tps:
            return PollSkips(polls)
        topic_h = topic_hash()
        cond = F.lit(False)
        for th, part in tps:
            cond = cond | ((topic_h == th) & (F.col("partition") == part))
        known = (ctx.df("ack", "poll").where(F.col("offset").isNotNull() & cond)
                 .select(topic_h.alias("topic_h"), "partition", "offset", "value"))
        w = Window.partitionBy("topic_h", "partition").orderBy("offset")
        if ctx.transactions.any:
            # An offset read_committed consumers must return: one holding some record outside aborted and
            # unknown transactions.
            hidden = hidden_values(ctx).distinct().withColumn("hidden", F.lit(1))
            locs = known.join(hidden, "value", "left").groupBy("topic_h", "partition", "offset").agg(
                F.min(F.coalesce(F.col("hidden"), F.lit(0))).alias("hidden"))
            after = w.rowsBetween(1, Window.unboundedFollowing)
            nxt = locs.select("topic_h", "partition", F.col("offset").alias("prev_offset"),
                              F.lead("offset").over(w).alias("next_any"),
                              F.min(F.when(F.col("hidden") == 0, F.col("offset"))).over(after).alias("next_visible"))
            pairs = gaps.join(nxt, ["topic_h", "partition", "prev_offset"]).withColumn(
                "next_known", F.when(F.coalesce(F.col("committed_only"), F.lit(True)), F.col("next_visible"))
                .otherwise(F.col("next_any")))
        else:
            nxt = known.select("topic_h", "partition", "offset").distinct().select(
                "topic_h", "partition", F.col("offset").alias("prev_offset"),
                F.lead("offset").over(w).alias("next_known"))
            pairs = gaps.join(nxt, ["topic_h", "partition", "prev_offset"])
        skips = pairs.where(F.col("next_known") < F.col("offset"))
        if not skips.limit(1).collect():
            return PollSkips(polls, n_gaps)
        return PollSkips(polls, n_gaps, weighed(ctx, skips, truncation_permit, lambda df, n: _pairs(ctx, df, n),
                                                value=None))
