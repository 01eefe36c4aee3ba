"""Delivery checks (KAFKA-BEHAVIOUR.md §7.6, §7.7; Jepsen's Kafka anomalies), in Spark.

- `delivery.lost_write`: a value acknowledged to an acks=all producer (a `send` without `acks`
  counts as acks=all) that no consumer ever polled. It is *lost* when its offset is at or below
  the highest offset polled from its partition (consumers read past it: Jepsen's definition) or
  the run completed and every group's drain caught up (`group.drain` ok: the drain should have read
  it); otherwise (a run cut short, or a group still behind, e.g. a stuck client) it is *unseen* and
  the check is unknown. Writes to topics no consumer ever polled cannot be judged
  (counted as `unverifiable_no_consumer`). Sends with no ack and no error, and errors that are not
  definite, are unknown outcomes (Jepsen's `info`): counted, never lost. A read-process-write
  pipeline's `pipe.read` of an input record is a poll here (of that value, at that offset): its input
  topic is a topic some consumer reads. With neither a poll nor a pipe.read the check is unknown.
- `delivery.duplicate`: a value seen (acked or polled) at more than one (topic, partition, offset).
- `delivery.inconsistent_offsets`: one (topic, partition, offset) seen holding two different values.
- `delivery.key_order`: one producer's sends of a key that landed in the same partition appear at
  offsets in send order (Jepsen's nonmonotonic send, per key).

Transactional records (a `send`/`ack`/`send.error` with `txn`: `spark_analysis.facts.transactions`). A record is
written to the log when it is acked, but becomes an acknowledged write only when its transaction commits:
- lost write: an ack counts as an acknowledged write only outside transactions or in a transaction whose
  outcome is `committed`. A record of an `aborted` transaction is no acknowledged write (it never becomes
  readable to read_committed consumers), so it is never lost; a record of a transaction whose outcome is
  `unknown` (indefinite end, or no end: the run was cut short) is an unknown outcome, counted
  (`txn_aborted_records`, `txn_unknown_records`), never lost. `txn.lost_commit` judges committed
  transactions record by record.
- duplicate, inconsistent offsets: a record of an aborted transaction does occupy its offset, and a
  read_uncommitted consumer may poll it there: its ack and that poll name the same (topic, partition,
  offset), so it is one value at one location, like any other record. Commit and abort markers occupy
  offsets too, but no ack or poll names them. Neither check changes.
- key order: aborted and unknown records are stored at their offsets in the producer's send order like
  committed ones (one session of a transactional producer writes in order; a new session fences the old
  one first), so key order judges every ack whatever its transaction's outcome.
- poll skip (`checks.consumer.checks`): a read_committed consumer legitimately jumps over the offsets of aborted
  records (and of records whose transaction's outcome is unknown); only a read_uncommitted consumer must
  return them.

Each check gathers its facts with the DataFrame plans below (fast paths first: `bitsets`, `slots`; the per-value
frames of `frames` only for what they cannot answer) and leaves the verdict to its judge
(`checks.delivery.judge`, `checks.delivery.placement_judge`), which the in-process evaluator calls with the same facts.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.delivery.judge import (
    ATTRIBUTION_ROWS,
    DUPLICATE_SAMPLE,
    EV_FIELDS,
    LOST_COUNTERS,
    NO_READS,
    Duplicates,
    DuplicateSample,
    LostWrites,
    WriteCounts,
    judge_duplicate,
    judge_lost_write,
)
from spark_analysis.checks.delivery.placement_judge import (
    SAMPLE,
    KeyOrderFacts,
    OffsetSample,
    ReorderedWrite,
    Reordering,
    TwoValued,
    TwoValuedOffsets,
    judge_inconsistent_offsets,
    judge_key_order,
)
from spark_analysis.checks.delivery.slots import acks_in_value_order, location_summary
from spark_analysis.checks.shared.bitsets import per_location, write_counters
from spark_analysis.checks.shared.damage import TXN_LINES, Depends
from spark_analysis.checks.shared.frames import (
    PIPE_READ,
    events_by_seq,
    keyed_acks,
    per_value,
    per_value_stats,
    poll_frontier,
    strong_ack,
    topic_hash,
    weigh,
    weighed,
)
from spark_analysis.checks.shared.permits import (
    Weighed,
    ack_permit,
    mixed,
    once_permit,
    order_permit,
    unclean_partitions,
)
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult
from spark_analysis.session.local_frame import local_frame

__all__ = ["LOST_COUNTERS", "NO_READS", "Duplicate", "InconsistentOffsets", "KeyOrder", "LostWrite"]


class LostWrite:
    id = "delivery.lost_write"
    family = "delivery"
    frames = True
    needs = frozenset({"ack"})
    """And a reader: some poll, or a pipeline's pipe.read (`NO_READS`)."""

    # a pipeline's pipe.read reads its input topic as a poll does
    damage = Depends(frozenset({"ack", "poll", "pipe.read"}) | TXN_LINES, frozenset({"poll", "pipe.read"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_lost_write(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> LostWrites:
        if not ctx.count("poll") and not ctx.count(PIPE_READ):
            return LostWrites(readers=False)
        fast = write_counters(ctx)
        if fast.get("acked_never_polled") == 0:
            # Every acked (acks=all) write was polled: nothing lost, nothing unseen.
            return LostWrites(counts=WriteCounts.of(fast))
        pv = per_value(ctx)
        acked, polled = F.col("acked_write") == 1, F.col("polled") == 1
        candidate = acked & ~polled & strong_ack()
        stats = per_value_stats(ctx)
        polled_topics = list(stats["polled_topics"])
        counts = WriteCounts.of(stats)
        # Only topics some consumer reads can tell a lost write from an unread one.
        cand = pv.where(candidate & F.col("ack_topic_h").isin(polled_topics)).select(
            "value", "ack_t", "ack_seq", "ack_topic_h", "ack_partition", "ack_offset")
        frontier: list[tuple[str, int, int, int]] = []
        if not counts.acked_never_polled:
            classified, n_lost, unseen = cand, 0, 0
        elif ctx.drained:
            # A completed run whose groups caught up in the drain: every acked write never polled is lost.
            classified = cand.withColumn("lost", F.lit(True))
            n_lost, unseen = cand.count(), 0
        else:
            frontier = poll_frontier(ctx)
            spark = ctx.spark
            assert spark is not None
            fr = local_frame(spark, [(h, p, o) for (_t, h, p, o) in frontier] or [(0, -1, -1)],
                             "ack_topic_h long, ack_partition long, frontier long")
            classified = cand.join(F.broadcast(fr), ["ack_topic_h", "ack_partition"], "left").withColumn(
                "lost", F.col("ack_offset") <= F.coalesce(F.col("frontier"), F.lit(-1)))
            by = classified.groupBy("lost").count().collect()
            n_lost = sum(int(r["count"]) for r in by if r["lost"])
            unseen = sum(int(r["count"]) for r in by if not r["lost"])
        if not n_lost:
            return LostWrites(counts=counts, unseen=unseen)
        seqs = [int(r["ack_seq"]) for r in classified.where("lost").orderBy("ack_t", "ack_seq")
                .limit(ATTRIBUTION_ROWS).select("ack_seq").collect()]
        rows = events_by_seq(ctx, seqs)
        names = {h: t for (t, h, _p, _o) in frontier}
        by_tp = classified.where("lost").groupBy("ack_topic_h", "ack_partition").count().collect()
        if any(int(r["ack_topic_h"]) not in names for r in by_tp):
            names.update({int(r["h"]): str(r["topic"]) for r in ctx.df("ack").select(
                "topic", topic_hash().alias("h")).distinct().collect()})
        lost_by_tp = {(names.get(int(r["ack_topic_h"]), "?"), int(r["ack_partition"])): int(r["count"])
                      for r in by_tp}
        return LostWrites(counts=counts, lost=n_lost, unseen=unseen, lost_by_tp=lost_by_tp,
                          sample=[rows[s] for s in seqs if s in rows], unclean=unclean_partitions(ctx))


def _rows_for_values(ctx: CheckContext, values: list[int]) -> list[dict[str, Any]]:
    """Every ack and poll of `values` (the judges keep the first per location)."""
    rows = ctx.df("ack", "poll").where(F.col("value").isin(values)).select(*EV_FIELDS).collect()
    return [{k: v for k, v in r.asDict().items() if v is not None} for r in rows]


class Duplicate:
    id = "delivery.duplicate"
    family = "delivery"
    frames = True
    needs = frozenset({"poll"})

    damage = Depends(frozenset({"ack", "poll"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_duplicate(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> Duplicates:
        fast, places = write_counters(ctx), location_summary(ctx)
        if not places["two_valued"] and places["locations"] == fast["values_seen"]:
            # Every location holds one value and there are as many values as locations: none is at two.
            return Duplicates(fast["values_seen"])
        stats = per_value_stats(ctx)
        seen = int(stats.get("values_seen") or 0)
        if not int(stats.get("duplicated_values") or 0):
            return Duplicates(seen)
        pv = per_value(ctx)
        dups = pv.where(F.col("loc_min").isNotNull() & (F.col("loc_min") != F.col("loc_max")))

        def sample(df: DataFrame, n: int) -> DuplicateSample:
            values = [int(r["value"]) for r in df.select("value").orderBy("value").limit(DUPLICATE_SAMPLE).collect()]
            return DuplicateSample(n, _rows_for_values(ctx, values))

        return Duplicates(seen, weighed(ctx, dups, once_permit, sample, topic_h="ack_topic_h",
                                        partition="ack_partition"))


class InconsistentOffsets:
    id = "delivery.inconsistent_offsets"
    family = "delivery"
    frames = True
    needs = frozenset({"poll"})

    damage = Depends(frozenset({"ack", "poll"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_inconsistent_offsets(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> TwoValuedOffsets:
        if not location_summary(ctx).get("two_valued"):
            # No (topic, partition, offset) was seen holding two values: nothing to confirm.
            return TwoValuedOffsets()
        bad = per_location(ctx).where(F.col("vmin") != F.col("vmax"))
        if not bad.limit(1).collect():
            return TwoValuedOffsets()
        # Permitted when the partition had an unclean election the topic allows, or either value's writer took
        # acknowledgements weaker than acks=all (a clean election truncates what only the old leader held).
        by_min = weigh(ctx, bad, ack_permit, value="vmin")
        rest = by_min.violations(bad)
        by_max = weigh(ctx, rest, ack_permit, value="vmax")
        anomalies = tuple(a for a in by_min.anomalies if a[0] is not None) + by_max.anomalies
        violations = sum(n for r, n in anomalies if r is None)
        return TwoValuedOffsets(Weighed(
            self._sample(ctx, bad, sum(n for _r, n in anomalies)), anomalies,
            self._sample(ctx, by_max.violations(rest), violations) if mixed(anomalies) else None))

    def _sample(self, ctx: CheckContext, bad: DataFrame, n: int) -> OffsetSample:
        sample = [TwoValued(r["partition"], int(r["offset"]), int(r["vmin"]), int(r["vmax"])) for r in
                  bad.orderBy("partition", "offset", "vmin", "vmax").limit(SAMPLE).collect()]
        values = sorted({s.vmin for s in sample} | {s.vmax for s in sample})
        return OffsetSample(n, sample, _rows_for_values(ctx, values))


class KeyOrder:
    id = "delivery.key_order"
    family = "delivery"
    frames = True
    needs = frozenset({"send", "ack"})

    damage = Depends(frozenset({"send", "ack"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge_key_order(self.facts(ctx), ctx.faults)

    def facts(self, ctx: CheckContext) -> KeyOrderFacts:
        fast = write_counters(ctx)
        one_ack_each = ctx.count("ack") == fast.get("ack_seen") and fast.get("acked_unsent") == 0
        if one_ack_each and acks_in_value_order(ctx):
            # Value order is send order here, so ordering each key's acks by value is enough.
            return KeyOrderFacts()
        pv = keyed_acks(ctx)
        w = Window.partitionBy("pk_h", "ack_topic_h", "ack_partition").orderBy("send_seq")
        pairs = (pv.select("send_seq", "ack_seq", "ack_offset", "value", "ack_topic_h", "ack_partition",
                           F.lag("ack_offset").over(w).alias("prev_offset"),
                           F.lag("ack_seq").over(w).alias("prev_ack_seq"))
                 .where(F.col("prev_offset").isNotNull() & (F.col("ack_offset") <= F.col("prev_offset"))))
        if not pairs.limit(1).collect():
            return KeyOrderFacts()

        def sample(df: DataFrame, n: int) -> Reordering:
            found = [ReorderedWrite(int(r["send_seq"]), int(r["ack_offset"]), int(r["prev_offset"]), int(r["ack_seq"]),
                                    int(r["prev_ack_seq"]))
                     for r in df.orderBy("send_seq").limit(SAMPLE).collect()]
            acks = events_by_seq(ctx, [r.ack_seq for r in found] + [r.prev_ack_seq for r in found])
            return Reordering(n, found, acks)

        return KeyOrderFacts(weighed(ctx, pairs, order_permit, sample, topic_h="ack_topic_h",
                                     partition="ack_partition"))
