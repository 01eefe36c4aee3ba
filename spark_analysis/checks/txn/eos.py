"""Exactly-once checks of transactional producers and read-process-write pipelines (issue 24), in Spark.

- `txn.zombie_fenced`: a transactional client that a new session of its producer fenced (`restart_producer` with
  `zombie: true`: the old client stays alive with its transaction open, which the new session's
  init_transactions aborts) gets nothing committed. Its writes after the fencing carry `zombie: true`, and
  `txn.zombie` {producer, transactional_id, txn, outcome: fenced | refused | committed, error, error_detail} is
  what Kafka answered its commit. Fails when a `txn.zombie` says `committed` (Kafka let a fenced instance commit),
  or when a read_committed reader (a poll with isolation read_committed or none recorded, or a pipeline's
  pipe.read) read a value written with `zombie: true`. Passes otherwise, naming the zombie records, how many
  reached the log (acked) and that none was read committed.
- `txn.exactly_once_pipeline`: each pipeline P (its `pipe.read`s, src `pipeline:<id>`; its output records are the
  send/ack/send.error with producer P, `txn` and `input_value`, the input value each was made from; its transactions'
  outcomes are `spark_analysis.facts.transactions`'s, and each committed one's `offsets` are what it committed for the
  group) is judged on its own. Its inputs are the records acked in the topics it reads (a pipe.read topic, or
  one its committed offsets name), and the records it read; a record is visible (a read_committed reader must
  return it) when acked outside transactions or in a committed one. C(tp) is the largest offset P's committed
  transactions committed on input partition tp. Fails on:
  - duplicate: an input value with two or more outputs in committed transactions of P ("processed twice");
  - loss: a visible input at an offset below C(tp) without an output in a committed transaction of P ("its
    offset was committed but its output was not"), unless P read it, or wrote an output from it, in a
    transaction whose outcome is unknown (counted, not judged; so is an input of an upstream transaction whose
    outcome is unknown);
  - offsets: a committed transaction T that read input partition tp up to offset Y commits no offset there, or
    an offset X <= Y, or an X > Y + 1 with a visible input at an offset in [Y + 1, X) (librdkafka's position
    steps over transaction markers and aborted records, so X > Y + 1 alone is no fault);
  - aborted input: a committed output made from a record of an aborted transaction (`txn.aborted_read` fails
    the read itself; the output is the damage).
  Passes naming the pipelines, the inputs processed exactly once and the outputs committed; unknown when no
  visible input lies below the committed offsets.

Nothing to judge (no zombie; no pipe.read): pass, see `checks.txn.eos_judge`, where the verdicts are decided for
this module and the in-process evaluator alike.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.shared.damage import TXN_READS, Depends
from spark_analysis.checks.shared.txn_frames import pipe_reads, producer_column, read_polls, with_txn_outcome
from spark_analysis.checks.txn.eos_judge import (
    EVIDENCE_ROWS,
    EXACTLY_ONCE_PIPELINE,
    SAMPLE,
    ZOMBIE_FENCED,
    DuplicateInput,
    OffsetClaim,
    PipelineFacts,
    ZombieWrites,
    committed_positions,
    judge_exactly_once_pipeline,
    judge_zombie_fenced,
    offset_claims,
    pipeline_transactions,
)
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.transactions import ABORTED, COMMITTED, UNKNOWN
from spark_analysis.result import CheckResult
from spark_analysis.session.local_frame import local_frame

_READ_FIELDS = ("type", "seq", "t", "consumer", "group", "topic", "partition", "offset", "value", "producer", "txn")
_INPUT_FIELDS = ("type", "seq", "t", "topic", "partition", "offset", "value", "producer", "txn")
_OUTPUT_FIELDS = ("type", "seq", "t", "topic", "partition", "offset", "value", "producer", "txn", "source")
_WRITES = ("send", "ack", "send.error")


def _plain(row: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    return {k: row[k] for k in fields if row[k] is not None}


def _output_of(row: Any) -> dict[str, Any]:
    """An output's transaction and the input value it was made from, under the history's field names."""
    return {k: v for k, v in (("txn", row["txn"]), ("input_value", row["source"])) if v is not None}


class ZombieFenced:
    id = ZOMBIE_FENCED
    family = "txn"
    frames = True
    needs = frozenset({"send"})
    """Producers ran: without them, whether any was a zombie cannot be told."""

    # a zombie's commit and a read of its record are proven by intact lines (txn.zombie; a read and a write with
    # `zombie: true`): no lost line can produce either
    damage = Depends(TXN_READS | {"txn.zombie"})

    def run(self, ctx: CheckContext) -> CheckResult:
        index, attempts = ctx.transactions, ctx.rows("txn.zombie")
        if not attempts and not index.any:
            return judge_zombie_fenced(index, attempts, ZombieWrites(), ctx.faults)
        zombie = ctx.df(*_WRITES).where(F.coalesce(F.col("zombie"), F.lit(False)) & F.col("value").isNotNull())
        per = zombie.groupBy("value").agg(
            F.min(F.struct("seq", producer_column().alias("producer"), "txn")).alias("first"),
            F.max(((F.col("type") == "ack") & F.col("offset").isNotNull()).cast("int")).alias("acked"))
        totals = per.agg(F.count(F.lit(1)).alias("records"), F.sum("acked").alias("acked")).first()
        records = int(totals["records"]) if totals is not None else 0
        if not records:
            return judge_zombie_fenced(index, attempts, ZombieWrites(), ctx.faults)
        written = per.select("value", F.col("first.producer").alias("producer"), F.col("first.txn").alias("txn"))
        reads = read_polls(ctx).where("committed_only").join(written, "value")
        seen = reads.agg(F.count(F.lit(1)).alias("reads"), F.count_distinct("value").alias("values")).first()
        sample = [_plain(r, _READ_FIELDS) for r in reads.orderBy("seq").limit(EVIDENCE_ROWS).collect()]
        facts = ZombieWrites(records=records, acked=int(totals["acked"] or 0) if totals is not None else 0,
                             reads=int(seen["reads"]) if seen is not None else 0,
                             values_read=int(seen["values"]) if seen is not None else 0, sample=sample)
        return judge_zombie_fenced(index, attempts, facts, ctx.faults)


def _persist(ctx: CheckContext, name: str, df: DataFrame) -> DataFrame:
    """`df` persisted and kept in `ctx.shared` (released by `CheckContext.close`)."""
    kept = df.persist(StorageLevel.MEMORY_AND_DISK)
    ctx.shared[f"txn_eos_{name}"] = kept
    return kept


class ExactlyOncePipeline:
    id = EXACTLY_ONCE_PIPELINE
    family = "txn"
    frames = True
    needs = frozenset({"send"})
    """Producers ran: a pipeline's outputs are sends; without them nothing can be told."""

    damage = Depends(TXN_READS - {"poll"}, frozenset({"pipe.read", "send", "ack", "send.error"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        index = ctx.transactions
        if not ctx.count("pipe.read"):
            return judge_exactly_once_pipeline(index, (), ctx.faults)
        spark = ctx.spark
        assert spark is not None
        reads = _persist(ctx, "reads", pipe_reads(ctx))
        per_pipe = reads.groupBy("pipeline").agg(F.count(F.lit(1)).alias("reads"),
                                                  F.count_distinct("value").alias("values"),
                                                  F.collect_set("topic").alias("topics")).collect()
        shape = {str(r["pipeline"]): (int(r["reads"]), int(r["values"])) for r in per_pipe}
        if not shape:
            return judge_exactly_once_pipeline(index, (), ctx.faults)
        pipes = sorted(shape)
        positions = {p: committed_positions(index, p) for p in pipes}
        topics = {(str(r["pipeline"]), str(topic)) for r in per_pipe for topic in r["topics"]}
        topics |= {(p, topic) for p in pipes for (topic, _part) in positions[p]}
        frames = _Frames.build(ctx, spark, reads, pipes, sorted(topics), positions)
        facts = []
        read_max: dict[str, dict[tuple[int, str, int], int]] = defaultdict(dict)
        for r in reads.groupBy("pipeline", "txn", "topic", "partition").agg(F.max("offset").alias("top")).collect():
            read_max[str(r["pipeline"])][(int(r["txn"]), str(r["topic"]), int(r["partition"]))] = int(r["top"])
        claims = {p: offset_claims(index, p, read_max[p]) for p in pipes}
        skipped = frames.skipped(spark, [(p, c) for p in pipes for c in claims[p][1]])
        counts = frames.counts()
        for p in pipes:
            mismatches = sorted([*claims[p][0], *(c for (q, c) in skipped if q == p)],
                                key=lambda c: (c.txn, c.topic, c.partition))
            n = counts.get(p, {})
            facts.append(PipelineFacts(
                pipeline=p, reads=shape[p][0], inputs_read=shape[p][1],
                outputs_committed=int(n.get("outputs_committed", 0)), inputs_judged=int(n.get("judged", 0)),
                processed=int(n.get("processed", 0)), unknown_outcome=int(n.get("unknown_outcome", 0)),
                upstream_unknown=int(n.get("upstream_unknown", 0)), beyond_committed=int(n.get("beyond", 0)),
                duplicates=int(n.get("duplicates", 0)),
                duplicate_sample=frames.duplicates(p) if n.get("duplicates") else (),
                lost=int(n.get("lost", 0)), lost_sample=frames.lost(p) if n.get("lost") else (),
                offset_mismatches=len(mismatches), offset_sample=mismatches[:SAMPLE],
                aborted_outputs=int(n.get("aborted_outputs", 0)),
                aborted_sample=frames.aborted(p) if n.get("aborted_outputs") else ()))
        return judge_exactly_once_pipeline(index, facts, ctx.faults)


class _Frames:
    """The pipelines' inputs and outputs (see the module doc), persisted for the counts and the samples."""

    def __init__(self, inputs: DataFrame, outputs: DataFrame, classified: DataFrame) -> None:
        self.inputs = inputs
        """pipeline, value, type, seq, t, topic, partition, offset (where it was: its ack, else a pipe.read),
        producer, txn, outcome (its upstream transaction; nulls outside transactions), visible."""
        self.outputs = outputs
        """pipeline, value, txn, outcome, source, and the output's event: type, seq, t, topic, partition, offset."""
        self.classified = classified
        """inputs with committed (C of its partition), below, has_out (committed outputs: n), u (processed in a
        transaction with an unknown outcome)."""

    @staticmethod
    def build(ctx: CheckContext, spark: SparkSession, reads: DataFrame, pipes: list[str],
              topics: list[tuple[str, str]], positions: dict[str, dict[tuple[str, int], int]]) -> _Frames:
        index = ctx.transactions
        in_topics = sorted({topic for (_p, topic) in topics})
        producer = producer_column()
        ev = with_txn_outcome(ctx, ctx.df(*_WRITES).where(
            F.col("value").isNotNull() & (producer.isin(pipes) | F.col("topic").isin(in_topics))))
        acked = (F.col("type") == "ack") & F.col("offset").isNotNull() & F.col("partition").isNotNull()
        per = ev.groupBy("value").agg(
            F.min(F.struct("seq", "t", "type", producer.alias("producer"), "topic")).alias("first"),
            F.min(F.when(F.col("txn").isNotNull(), F.struct("seq", producer.alias("producer"), "txn", "txn_outcome")))
            .alias("tx"),
            F.min(F.when(F.col("input_value").isNotNull(), F.struct("seq", F.col("input_value").alias("source"))))
            .alias("src"),
            F.min(F.when(acked, F.struct("seq", "t", "topic", "partition", "offset"))).alias("ack"))
        per = _persist(ctx, "per_value", per)
        ack = F.col("ack")
        outputs = per.select(
            "value", F.coalesce(F.col("tx.producer"), F.col("first.producer")).alias("pipeline"),
            F.col("tx.txn").alias("txn"), F.col("tx.txn_outcome").alias("outcome"), F.col("src.source").alias("source"),
            F.when(ack.isNotNull(), F.lit("ack")).otherwise(F.col("first.type")).alias("type"),
            F.coalesce(F.col("ack.seq"), F.col("first.seq")).alias("seq"),
            F.when(ack.isNotNull(), F.col("ack.t")).otherwise(F.col("first.t")).alias("t"),
            F.coalesce(F.col("ack.topic"), F.col("first.topic")).alias("topic"),
            F.col("ack.partition").alias("partition"), F.col("ack.offset").alias("offset"),
        ).where(F.col("pipeline").isin(pipes))
        outputs = _persist(ctx, "outputs", outputs)
        pipe_topics = local_frame(spark, topics, "pipeline string, topic string")
        located = per.where(ack.isNotNull()).select(
            "value", F.lit(0).alias("prio"), F.col("ack.seq").alias("seq"), F.col("ack.t").alias("t"),
            F.col("ack.topic").alias("topic"), F.col("ack.partition").alias("partition"),
            F.col("ack.offset").alias("offset")).join(F.broadcast(pipe_topics), "topic")
        read_at = reads.select("pipeline", "value", F.lit(1).alias("prio"), "seq", "t", "topic",
                                                     "partition", "offset")
        at = located.unionByName(read_at).groupBy("pipeline", "value").agg(
            F.min(F.struct("prio", "seq", "t", "topic", "partition", "offset")).alias("at"))
        upstream = per.select("value", F.col("tx.producer").alias("producer"), F.col("tx.txn").alias("txn"),
                              F.col("tx.txn_outcome").alias("outcome"))
        kind = F.when(F.col("at.prio") == 0, F.lit("ack")).otherwise(F.lit("pipe.read"))
        inputs = at.join(upstream, "value", "left").select(
            "pipeline", "value", kind.alias("type"),
            F.col("at.seq").alias("seq"), F.col("at.t").alias("t"), F.col("at.topic").alias("topic"),
            F.col("at.partition").alias("partition"), F.col("at.offset").alias("offset"), "producer", "txn", "outcome",
            (F.col("outcome").isNull() | (F.col("outcome") == COMMITTED)).alias("visible"))
        inputs = _persist(ctx, "inputs", inputs)
        txns = local_frame(spark, [(p, t.txn, t.outcome) for p in pipes for t in pipeline_transactions(index, p)]
                           or [("", -1, UNKNOWN)], "pipeline string, txn long, p_outcome string")
        undecided = (reads.join(F.broadcast(txns), ["pipeline", "txn"], "left")
                     .where(F.coalesce(F.col("p_outcome"), F.lit(UNKNOWN)) == UNKNOWN).select("pipeline", "value")
                     .unionByName(outputs.where(F.col("outcome") == UNKNOWN).select(
                         "pipeline", F.col("source").alias("value")))
                     .where(F.col("value").isNotNull()).distinct().withColumn("u", F.lit(True)))
        by_source = outputs.where((F.col("outcome") == COMMITTED) & F.col("source").isNotNull()).groupBy(
            "pipeline", F.col("source").alias("value")).agg(F.count(F.lit(1)).alias("n"))
        pos = local_frame(
            spark,
            [(p, topic, part, off) for p in pipes for (topic, part), off in positions[p].items()]
            or [("", "", -1, -1)], "pipeline string, topic string, partition long, committed long")
        classified = (inputs.join(F.broadcast(pos), ["pipeline", "topic", "partition"], "left")
                      .join(by_source, ["pipeline", "value"], "left")
                      .join(undecided, ["pipeline", "value"], "left")
                      .withColumns({"below": F.coalesce(F.col("offset") < F.col("committed"), F.lit(False)),
                                    "has_out": F.col("n").isNotNull(), "u": F.coalesce(F.col("u"), F.lit(False))}))
        return _Frames(inputs, outputs, _persist(ctx, "classified", classified))

    def counts(self) -> dict[str, dict[str, int]]:
        """Per pipeline: judged, processed, lost, unknown_outcome, upstream_unknown, beyond (see `PipelineFacts`),
        aborted_outputs, duplicates, outputs_committed (two jobs)."""
        vis, below, has, u = (F.col(c) for c in ("visible", "below", "has_out", "u"))
        rows = self.classified.groupBy("pipeline").agg(
            F.count(F.when(vis & below & (has | ~u), 1)).alias("judged"),
            F.count(F.when(vis & below & has, 1)).alias("processed"),
            F.count(F.when(vis & below & ~has & ~u, 1)).alias("lost"),
            F.count(F.when(~has & u, 1)).alias("unknown_outcome"),
            F.count(F.when(below & (F.col("outcome") == UNKNOWN), 1)).alias("upstream_unknown"),
            F.count(F.when(vis & ~below & ~has & ~u, 1)).alias("beyond"),
            # Committed outputs of an aborted input: `n` is its committed outputs (by_source, one row per input).
            F.sum(F.when(F.col("outcome") == ABORTED, F.coalesce(F.col("n"), F.lit(0))).otherwise(0))
            .alias("aborted_outputs")).collect()
        out: dict[str, dict[str, int]] = defaultdict(dict)
        for r in rows:
            out[str(r["pipeline"])].update({k: int(v) for k, v in r.asDict().items() if k != "pipeline"})
        # Committed outputs and the sources with two or more of them, per pipeline, in one job.
        per_source = (self.outputs.where(F.col("outcome") == COMMITTED).groupBy("pipeline", "source")
                      .agg(F.count(F.lit(1)).alias("n")))
        for r in per_source.groupBy("pipeline").agg(
                F.sum("n").alias("n"),
                F.count(F.when(F.col("source").isNotNull() & (F.col("n") >= 2), 1)).alias("dups")).collect():
            out[str(r["pipeline"])]["outputs_committed"] = int(r["n"])
            if r["dups"]:
                out[str(r["pipeline"])]["duplicates"] = int(r["dups"])
        return out

    def _aborted(self) -> DataFrame:
        """Committed outputs whose source is an input of an aborted transaction: the output's columns and the
        input's, prefixed `in_`."""
        src = self.inputs.where(F.col("outcome") == ABORTED).select(
            "pipeline", F.col("value").alias("source"), *(F.col(c).alias(f"in_{c}") for c in _INPUT_FIELDS))
        return self.outputs.where(F.col("outcome") == COMMITTED).join(src, ["pipeline", "source"])

    def aborted(self, pipeline: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        rows = self._aborted().where(F.col("pipeline") == pipeline).orderBy("seq").limit(SAMPLE).collect()
        return [({**_plain(r, _OUTPUT_FIELDS[:-3]), "producer": pipeline, **_output_of(r)},
                 {k.removeprefix("in_"): r[k] for k in (f"in_{c}" for c in _INPUT_FIELDS) if r[k] is not None})
                for r in rows]

    def lost(self, pipeline: str) -> list[dict[str, Any]]:
        vis, below, has, u = (F.col(c) for c in ("visible", "below", "has_out", "u"))
        rows = (self.classified.where((F.col("pipeline") == pipeline) & vis & below & ~has & ~u)
                .orderBy("seq").limit(SAMPLE).collect())
        return [{**_plain(r, _INPUT_FIELDS), "committed_offset": int(r["committed"])} for r in rows]

    def duplicates(self, pipeline: str) -> list[DuplicateInput]:
        committed = self.outputs.where((F.col("pipeline") == pipeline) & (F.col("outcome") == COMMITTED)
                                       & F.col("source").isNotNull())
        first = (committed.groupBy("source").agg(F.count(F.lit(1)).alias("n"), F.min("seq").alias("first"))
                 .where("n >= 2").orderBy("first").limit(SAMPLE).collect())
        sources = [int(r["source"]) for r in first]
        outs = committed.where(F.col("source").isin(sources)).orderBy("seq").collect()
        ins = {int(r["value"]): _plain(r, _INPUT_FIELDS) for r in self.inputs.where(
            (F.col("pipeline") == pipeline) & F.col("value").isin(sources)).collect()}
        return [DuplicateInput(source=s, input=ins.get(s), outputs=[
            {**_plain(o, _OUTPUT_FIELDS[:-3]), "producer": pipeline, **_output_of(o)}
            for o in outs if int(o["source"]) == s]) for s in sources]

    def skipped(self, spark: SparkSession, claims: list[tuple[str, OffsetClaim]]) -> list[tuple[str, OffsetClaim]]:
        """Of the claims that commit past the next offset, those with a visible input in [read_up_to + 1,
        committed), each with the first such input: the gaps and the visible inputs sorted together per
        partition, each gap taking the first input after it."""
        if not claims:
            return []
        gaps = local_frame(
            spark,
            [(p, c.txn, c.topic, c.partition, c.read_up_to + 1, c.committed) for p, c in claims],
            "pipeline string, txn long, topic string, partition long, offset long, hi long")
        keys = ["pipeline", "topic", "partition", "offset"]
        vis = self.inputs.where("visible").select(*keys, F.struct(*_INPUT_FIELDS).alias("rec"))
        both = (gaps.select(*keys, "txn", "hi", F.lit(0).alias("kind"), F.lit(None).cast(vis.schema["rec"].dataType)
                            .alias("rec"))
                .unionByName(vis.select(*keys, F.lit(None).cast("long").alias("txn"),
                                        F.lit(None).cast("long").alias("hi"), F.lit(1).alias("kind"), "rec")))
        w = Window.partitionBy("pipeline", "topic", "partition").orderBy("offset", "kind").rowsBetween(
            1, Window.unboundedFollowing)
        nxt = both.select("*", F.min(F.when(F.col("kind") == 1, F.struct("offset", "rec"))).over(w).alias("next"))
        hits = nxt.where((F.col("kind") == 0) & (F.col("next.offset") < F.col("hi"))).collect()
        found = {(str(r["pipeline"]), int(r["txn"]), str(r["topic"]), int(r["partition"])):
                 _plain(r["next"]["rec"], _INPUT_FIELDS) for r in hits}
        out = []
        for p, c in claims:
            rec = found.get((p, c.txn, c.topic, c.partition))
            if rec is not None:
                out.append((p, OffsetClaim(c.txn, c.topic, c.partition, c.committed, c.read_up_to, rec)))
        return out
