"""Transaction checks (issue 24: transactional producers through librdkafka), in Spark.

A transaction is named by its producer and number (`txn`); its records are the values its producer sent with
that `txn` (a read-process-write pipeline's output records too: its producer is the pipeline); how it ended is
`spark_analysis.facts.transactions` (committed, aborted, or unknown: indefinite, or no end at all). The reads are the
polls and a pipeline's `pipe.read`s (its input records) that name a value, partition and offset. A reader is
read_committed when its `isolation` says so or says nothing (librdkafka's default; a pipeline always reads
committed records); its group is `group` (else `src`), its consumer `consumer` (else `src`).

- `txn.aborted_read`: a read_committed consumer never polls a record of an aborted transaction. Fails on any
  such poll, naming the value, its transaction and the consumer. Passes when none happened and some aborted
  record was one a read_committed consumer had to skip: acked in a topic such a consumer polled, at or below
  the highest offset such a consumer polled on its partition (any offset once the run completed: the drain
  would have returned it). Unknown when no aborted record was such.
- `txn.atomic_visibility`: a committed transaction is seen whole or not at all by every read_committed group
  that reads past it. For a group G that polled some record of a committed transaction T, every acked record
  r of T must have been polled by G, unless G never polled an offset greater than r's on r's partition (it did
  not read past r). Fails naming the group, the transaction, what it saw and what it missed. Unknown when no
  read_committed group polled any record of a committed transaction.
- `txn.lost_commit`: every acked record of a committed transaction is read by some consumer (any isolation).
  Lost (fail) as `delivery.lost_write` has it: some reader read past its offset on its partition, or the run
  completed; otherwise unseen (unknown). Records in topics nobody reads are not judged (unknown when nothing
  else is); records never acked at an offset are counted, not judged.

Nothing to judge (no transaction event; no transaction of the kind a check is about): pass, see
`checks.txn.judge`, where the verdicts are decided for this module and the in-process evaluator alike.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.checks.shared.damage import TXN_READS, Depends
from spark_analysis.checks.shared.txn_frames import read_polls, txn_records
from spark_analysis.checks.txn.judge import (
    ABORTED_READ,
    ATOMIC_VISIBILITY,
    EVIDENCE_ROWS,
    LOST_COMMIT,
    LOST_SAMPLE,
    SAMPLE_PAIRS,
    AbortedReads,
    LostCommits,
    PartialView,
    PartialViews,
    judge_aborted_read,
    judge_atomic_visibility,
    judge_lost_commit,
)
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.transactions import ABORTED, COMMITTED
from spark_analysis.result import CheckResult
from spark_analysis.session.local_frame import local_frame

_POLL_FIELDS = ("seq", "t", "consumer", "group", "topic", "partition", "offset", "value")
_ACK_FIELDS = ("ack_seq", "ack_t", "topic", "partition", "offset", "value")


def _plain(row: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    out = {k.removeprefix("ack_"): row[k] for k in fields}
    return {k: v for k, v in out.items() if v is not None}


def _records(ctx: CheckContext, outcome: str) -> DataFrame:
    return txn_records(ctx).where(F.col("txn_outcome") == outcome)


class AbortedRead:
    id = ABORTED_READ
    family = "txn"
    frames = True
    needs = frozenset({"send"})
    """Producers ran: without them, whether any was transactional cannot be told."""

    # a read_committed poll of an aborted record is proven by intact lines: no lost line can produce it
    damage = Depends(TXN_READS)

    def run(self, ctx: CheckContext) -> CheckResult:
        index = ctx.transactions
        if not index.counts()[ABORTED]:
            return judge_aborted_read(index, AbortedReads(), ctx.faults)
        aborted = _records(ctx, ABORTED)
        polls = read_polls(ctx).where("committed_only")
        bad = polls.join(aborted.select("value", "producer", "txn"), "value")
        totals = bad.agg(F.count(F.lit(1)).alias("reads"), F.count_distinct("value").alias("values")).first()
        reads = int(totals["reads"] if totals else 0)
        sample = [{**_plain(r, _POLL_FIELDS), "producer": r["producer"], "txn": r["txn"]}
                  for r in bad.orderBy("seq").limit(EVIDENCE_ROWS).collect()] if reads else []
        # The aborted records and those a consumer's frontier passed, in one job: each record meets at most one
        # frontier row (its topic's, or its partition's), so the left join keeps every record once.
        frontier = polls.groupBy("topic", "partition").agg(F.max("offset").alias("frontier"))
        if ctx.drained:
            passed_by = aborted.join(F.broadcast(frontier.select("topic").distinct().withColumn(
                "frontier", F.lit(True))), "topic", "left").select(
                "offset", F.coalesce(F.col("frontier"), F.lit(False)).alias("passed"))
        else:
            passed_by = aborted.join(F.broadcast(frontier), ["topic", "partition"], "left").select(
                "offset", F.coalesce(F.col("offset") <= F.col("frontier"), F.lit(False)).alias("passed"))
        counts = passed_by.agg(F.count(F.lit(1)).alias("records"), F.count(
            F.when(F.col("offset").isNotNull() & F.col("passed"), 1)).alias("judged")).first()
        assert counts is not None
        facts = AbortedReads(records=int(counts["records"]), judged=int(counts["judged"]), reads=reads,
                             values_read=int(totals["values"] if totals else 0), sample=sample)
        return judge_aborted_read(index, facts, ctx.faults)


class AtomicVisibility:
    id = ATOMIC_VISIBILITY
    family = "txn"
    frames = True
    needs = frozenset({"send"})
    """Producers ran: without them, whether any was transactional cannot be told."""

    # a lost poll (or pipe.read) line makes a record look missed (a partial view) or never read (a lost commit)
    damage = Depends(TXN_READS, frozenset({"poll", "pipe.read"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        index = ctx.transactions
        if not index.counts()[COMMITTED]:
            return judge_atomic_visibility(index, PartialViews(), ctx.faults)
        committed = _records(ctx, COMMITTED)
        polls = read_polls(ctx).where("committed_only")
        seen = polls.join(committed.select("value", "producer", "txn"), "value")
        pair_keys = ["group", "producer", "txn"]
        pairs = seen.select(*pair_keys).distinct()
        judged = pairs.count()
        if not judged:
            return judge_atomic_visibility(index, PartialViews(), ctx.faults)
        located = committed.where(F.col("offset").isNotNull()).select(
            "value", "producer", "txn", "topic", "partition", "offset", "ack_seq", "ack_t")
        frontier = polls.groupBy("group", "topic", "partition").agg(F.max("offset").alias("frontier"))
        missed = (pairs.join(located, ["producer", "txn"])
                  .join(seen.select("group", "value").distinct(), ["group", "value"], "left_anti")
                  .join(frontier, ["group", "topic", "partition"])
                  .where(F.col("frontier") > F.col("offset")))
        broken = missed.groupBy(*pair_keys).agg(F.min("ack_seq").alias("first"), F.count(F.lit(1)).alias("n")).collect()
        if not broken:
            return judge_atomic_visibility(index, PartialViews(pairs=judged), ctx.faults)
        chosen = sorted(broken, key=lambda r: (int(r["first"]), str(r["group"])))[:SAMPLE_PAIRS]
        facts = PartialViews(pairs=judged, broken_pairs=len(broken),
                             broken_txns=len({(r["producer"], r["txn"]) for r in broken}),
                             missed_records=sum(int(r["n"]) for r in broken),
                             sample=self._sample(ctx, chosen, seen, missed, located))
        return judge_atomic_visibility(index, facts, ctx.faults)

    @staticmethod
    def _sample(ctx: CheckContext, chosen: list[Any], seen: DataFrame, missed: DataFrame,
                located: DataFrame) -> list[PartialView]:
        spark = ctx.spark
        assert spark is not None
        keys = local_frame(spark, [(str(r["group"]), str(r["producer"]), int(r["txn"])) for r in chosen],
                           "group string, producer string, txn long")
        txns = keys.select("producer", "txn").distinct()
        saw_rows = seen.join(F.broadcast(keys), ["group", "producer", "txn"]).orderBy("seq").collect()
        missed_rows = missed.join(F.broadcast(keys), ["group", "producer", "txn"]).orderBy("ack_seq").collect()
        sizes = {(str(r["producer"]), int(r["txn"])): int(r["count"]) for r in
                 located.join(F.broadcast(txns), ["producer", "txn"]).groupBy("producer", "txn").count().collect()}
        out: list[PartialView] = []
        for r in chosen:
            key = (str(r["group"]), str(r["producer"]), int(r["txn"]))
            mine = [s for s in saw_rows if (str(s["group"]), str(s["producer"]), int(s["txn"])) == key]
            gone = [m for m in missed_rows if (str(m["group"]), str(m["producer"]), int(m["txn"])) == key]
            out.append(PartialView(group=key[0], producer=key[1], txn=key[2], records=sizes.get(key[1:], 0),
                                   saw=len({s["value"] for s in mine}),
                                   seen=[_plain(s, _POLL_FIELDS) for s in mine],
                                   missed=[_plain(m, _ACK_FIELDS) for m in gone]))
        return out


class LostCommit:
    id = LOST_COMMIT
    family = "txn"
    frames = True
    needs = frozenset({"send"})
    """Producers ran: without them, whether any was transactional cannot be told."""

    damage = Depends(TXN_READS, frozenset({"poll", "pipe.read"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        index = ctx.transactions
        if not index.counts()[COMMITTED]:
            return judge_lost_commit(index, LostCommits(), ctx.faults)
        polls = read_polls(ctx)
        polled = polls.select("value").distinct().withColumn("polled", F.lit(1))
        # A committed, acked record no consumer polled is lost when a consumer's frontier passed its offset in its
        # partition (a drained run: any partition of a topic consumers read), unseen otherwise; records of
        # topics nobody read are unverifiable. One job: each record meets at most one frontier row and one topic.
        frontier = (polls.where(F.col("topic").isNotNull()).groupBy("topic", "partition")
                    .agg(F.max("offset").alias("frontier")))
        read_topics = frontier.select("topic").distinct().withColumn("read_topic", F.lit(True))
        no_ack, was_polled = F.col("offset").isNull(), F.col("polled").isNotNull()
        classified = (_records(ctx, COMMITTED).join(polled, "value", "left")
                      .join(F.broadcast(read_topics), "topic", "left")
                      .join(F.broadcast(frontier), ["topic", "partition"], "left")
                      .withColumns({"candidate": ~no_ack & ~was_polled & F.coalesce(F.col("read_topic"), F.lit(False)),
                                    "lost": F.lit(ctx.drained)
                                    | (F.col("offset") <= F.coalesce(F.col("frontier"), F.lit(-1)))}))
        cand, lost_col = F.col("candidate"), F.col("lost")
        totals = classified.agg(
            F.count(F.lit(1)).alias("records"), F.count(F.when(no_ack, 1)).alias("without_ack"),
            F.count(F.when(was_polled, 1)).alias("polled"), F.count(F.when(~no_ack & ~was_polled, 1)).alias("unpolled"),
            F.count(F.when(cand & lost_col, 1)).alias("lost"), F.count(F.when(cand & ~lost_col, 1)).alias("unseen"),
            F.count_distinct(F.when(cand & lost_col, F.col("producer")), F.when(cand & lost_col, F.col("txn")))
            .alias("lost_txns")).first()
        assert totals is not None
        lost, unseen = int(totals["lost"]), int(totals["unseen"])
        facts = LostCommits(records=int(totals["records"]), without_ack=int(totals["without_ack"]),
                            polled=int(totals["polled"]), lost=lost, unseen=unseen, lost_txns=int(totals["lost_txns"]),
                            unverifiable=int(totals["unpolled"]) - lost - unseen)
        if lost:
            gone = classified.where(cand & lost_col)
            by_tp = gone.groupBy("topic", "partition").count().collect()
            sample = gone.orderBy("ack_t", "ack_seq").limit(LOST_SAMPLE).collect()
            facts = replace(facts, lost_by_tp={(str(r["topic"]), int(r["partition"])): int(r["count"]) for r in by_tp},
                            sample=[{**_plain(r, _ACK_FIELDS), "producer": r["producer"], "txn": r["txn"]}
                                    for r in sample])
        return judge_lost_commit(index, facts, ctx.faults)
