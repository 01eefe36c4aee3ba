"""Consumer checks (Jepsen's Kafka anomalies), in Spark, per consumer and partition within one
assignment epoch (an `assign` or `revoke` of the partition by that consumer starts a new epoch).

- `consumer.nonmonotonic_poll`: a consumer polls offset o2 after o1 with o2 <= o1.
- `consumer.poll_skip`: a consumer polls o2 right after o1 while some offset strictly between them
  is known to hold a record (acked or polled by anyone): the consumer skipped it. Gaps no one
  ever saw a record in (compaction, transaction markers, unacked writes) are not skips. For a
  read_committed consumer (`isolation` read_committed, or none recorded) a record of an aborted
  transaction, or of one whose outcome is unknown, is no record it must return: an offset known to
  hold only such records is no skip for it (`spark_analysis.transactions`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.common import plural, tp_label
from spark_analysis.checks.frames import events_by_seq, poll_pairs, topic_hash
from spark_analysis.checks.permits import settle, weigh
from spark_analysis.checks.txn_frames import hidden_values
from spark_analysis.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed

EVIDENCE_PAIRS = 10
_FIELDS = ("seq", "t", "src", "type", "consumer", "group", "member", "topic", "partition", "offset", "value", "key",
           "isolation")


def _pair_evidence(ctx: CheckContext, sample: list[Any], problem: Any) -> list[dict[str, Any]]:
    rows = events_by_seq(ctx, [int(r["seq"]) for r in sample] + [int(r["prev_seq"]) for r in sample])
    out: list[dict[str, Any]] = []
    for r in sample:
        for seq, extra in ((int(r["prev_seq"]), {}), (int(r["seq"]), {"problem": problem(r)})):
            ev = rows.get(seq, {"seq": seq})
            out.append({**{k: ev[k] for k in _FIELDS if ev.get(k) is not None}, **extra})
    return out


def _first_line(ev: list[dict[str, Any]]) -> tuple[str, float]:
    a, b = ev[0], ev[1]
    who = b.get("consumer") or b.get("src")
    return (f"{who} read {tp_label(b.get('topic'), b.get('partition'))}@{b.get('offset')} right after "
            f"@{a.get('offset')}"), float(b.get("t") or 0.0)


def _truncated(_writer: object, unclean: str | None) -> str | None:
    """Consumers read only below the high watermark, which no clean election takes back: their reads go back or
    jump only when a permitted unclean election truncated the log under them."""
    return unclean


class NonmonotonicPoll:
    id = "consumer.nonmonotonic_poll"
    family = "consumer"
    needs = frozenset({"poll"})

    def run(self, ctx: CheckContext) -> CheckResult:
        bad = poll_pairs(ctx).where(F.col("offset") <= F.col("prev_offset"))
        polls = ctx.count("poll")
        if not bad.limit(1).collect():
            return passed(self.id, f"offsets increased across all {polls} polls within each assignment",
                          {"polls": polls, "nonmonotonic": 0})
        weighed = weigh(ctx, bad, _truncated, value=None)
        return settle(self._failed(ctx, bad), weighed.anomalies, ("nonmonotonic poll", "nonmonotonic polls"),
                      lambda _n: self._failed(ctx, weighed.violations(bad)))

    def _failed(self, ctx: CheckContext, bad: Any) -> CheckResult:
        polls = ctx.count("poll")
        sample = bad.orderBy("seq").limit(EVIDENCE_PAIRS).collect()
        n = bad.count()
        ev = _pair_evidence(ctx, sample, lambda r: f"offset {r['offset']} after {r['prev_offset']} in one assignment")
        text, t = _first_line(ev)
        fault = ctx.faults.active_at(t)
        summary = f"{plural(n, 'nonmonotonic poll')}, e.g. {text}" + (f" during {fault.label}" if fault else "")
        return failed(self.id, summary, ev, {"polls": polls, "nonmonotonic": n}, fault.label if fault else None)


class PollSkip:
    id = "consumer.poll_skip"
    family = "consumer"
    needs = frozenset({"poll"})

    def run(self, ctx: CheckContext) -> CheckResult:
        gaps = poll_pairs(ctx).where(F.col("offset") > F.col("prev_offset") + 1)
        polls = ctx.count("poll")
        per_tp = gaps.groupBy("topic_h", "partition").agg(F.count(F.lit(1)).alias("n")).collect()
        tps = [(r["topic_h"], r["partition"]) for r in per_tp]
        n_gaps = sum(int(r["n"]) for r in per_tp)  # the gaps counted with their partitions: one job, not two
        if not tps:
            return passed(self.id, f"no consumer jumped over an offset in {polls} polls",
                          {"polls": polls, "gaps": 0, "skips": 0})
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
        metrics = {"polls": polls, "gaps": n_gaps}
        if not skips.limit(1).collect():
            metrics["skips"] = 0
            return passed(self.id, f"{plural(n_gaps, 'offset gap')} in polls, none over a known record", metrics)
        weighed = weigh(ctx, skips, _truncated, value=None)
        return settle(self._failed(ctx, skips, metrics), weighed.anomalies, ("poll skip", "poll skips"),
                      lambda _n: self._failed(ctx, weighed.violations(skips), metrics))

    def _failed(self, ctx: CheckContext, skips: Any, counts: dict[str, Any]) -> CheckResult:
        sample = skips.orderBy("seq").limit(EVIDENCE_PAIRS).collect()
        metrics = {**counts, "skips": skips.count()}
        ev = _pair_evidence(ctx, sample, lambda r: f"jumped from {r['prev_offset']} to {r['offset']} over known "
                                                   f"offset {r['next_known']}")
        text, t = _first_line(ev)
        fault = ctx.faults.active_at(t)
        summary = (f"{plural(metrics['skips'], 'poll skip')}, e.g. {text} over known offset "
                   f"{sample[0]['next_known']}" + (f" during {fault.label}" if fault else ""))
        return failed(self.id, summary, ev, metrics, fault.label if fault else None)
