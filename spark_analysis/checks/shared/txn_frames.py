"""Spark frames of transactional records: the transactions' outcomes joined onto the bulk events.

The outcomes come from the small `txn.*` events (`CheckContext.transactions`, a few rows per transaction) and
reach the executors as a broadcast table, so tagging the bulk events is a map-side join. A run without any
transaction event never joins anything: `with_txn_outcome` adds null columns.

- `with_txn_outcome(ctx, df)`: `txn_outcome` (null: not a transactional record; committed, aborted or unknown)
  and `txn_end_t` (when its transaction ended) on rows that carry `producer` and `txn`.
- `txn_records(ctx)`: one row per transactional record (a value a transactional producer sent): its producer,
  transaction, outcome, and where it was acked (its first ack); persisted, kept in `ctx.shared`.
- `hidden_values(ctx)`: the values a read_committed consumer must never return, or may legitimately not return
  (records of aborted transactions, and of transactions whose outcome is unknown).
- `read_polls(ctx)`: the reads of the transaction checks: polls, and the input records a read-process-write
  pipeline read (`pipe.read`: its consumer reads committed records only), that name a value, partition and
  offset; with the reading group (`group`, else `src`), consumer (`consumer`, else `src`: `pipeline:<id>` for a
  pipeline) and whether it reads committed records only (`committed_only`: no `isolation` recorded counts as
  read_committed, as for every `pipe.read`).
- `pipe_reads(ctx)`: a pipeline's pipe.reads that name a value, partition, offset and transaction, with the
  pipeline's id (`pipeline`, else `src` without `pipeline:`).
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.facts.context import CheckContext, once_per_verify
from spark_analysis.facts.transactions import COMMITTED, READ_COMMITTED, UNKNOWN
from spark_analysis.session.local_frame import local_frame

READ_TYPES = ("poll", "pipe.read")
"""The events of records a consumer received (`read_polls`)."""
TXN_TABLE_SCHEMA = "txn_producer_k string, txn_k long, txn_outcome_k string, txn_end_t_k double"


def producer_column() -> Column:
    """The producer of a bulk event: `producer`, else `src` without `producer:` (`transactions.producer_name`)."""
    return F.coalesce(F.col("producer"), F.regexp_replace(F.col("src"), "^producer:", ""))


def pipeline_column() -> Column:
    """The pipeline of a pipe.read: `pipeline`, else `src` without `pipeline:` (`transactions.pipeline_name`)."""
    return F.coalesce(F.col("pipeline"), F.regexp_replace(F.col("src"), "^pipeline:", ""))


COMMITTED_ONLY = f"coalesce(isolation, '{READ_COMMITTED}') = '{READ_COMMITTED}'"
"""SQL: a poll's consumer reads committed records only (`transactions.committed_only`: no isolation recorded counts
as read_committed, librdkafka's default)."""


def committed_only_column() -> Column:
    """`COMMITTED_ONLY` as a Column."""
    return F.expr(COMMITTED_ONLY)


@once_per_verify
def txn_table(ctx: CheckContext) -> DataFrame | None:
    """(producer, txn, outcome, end_t) per transaction; None when the run has no transaction event."""
    if not ctx.transactions.any:
        return None
    spark = ctx.spark
    assert spark is not None
    return local_frame(spark, ctx.transactions.table(), TXN_TABLE_SCHEMA)


def with_txn_outcome(ctx: CheckContext, df: DataFrame) -> DataFrame:
    """`df` (rows with `producer`, `src` and `txn`) with `txn_outcome` and `txn_end_t` (see the module doc)."""
    table = txn_table(ctx)
    if table is None:
        return df.withColumns({"txn_outcome": F.lit(None).cast("string"), "txn_end_t": F.lit(None).cast("double")})
    keyed = df.withColumn("txn_producer_j", producer_column())
    on = (F.col("txn_producer_j") == F.col("txn_producer_k")) & (F.col("txn") == F.col("txn_k"))
    joined = keyed.join(F.broadcast(table), on, "left")
    return joined.withColumns({
        "txn_outcome": F.when(F.col("txn").isNotNull(), F.coalesce(F.col("txn_outcome_k"), F.lit(UNKNOWN))),
        "txn_end_t": F.when(F.col("txn").isNotNull(), F.col("txn_end_t_k")),
    }).drop("txn_producer_j", "txn_producer_k", "txn_k", "txn_outcome_k", "txn_end_t_k")


@once_per_verify
def txn_records(ctx: CheckContext) -> DataFrame:
    """One row per transactional record: `value`, `producer`, `txn`, `txn_outcome`, and its first ack (`ack_t`,
    `ack_seq`, `topic`, `partition`, `offset`; null when it was never acked with an offset)."""
    ev = with_txn_outcome(ctx, ctx.df("send", "ack", "send.error").where(
        F.col("txn").isNotNull() & F.col("value").isNotNull()))
    acked = (F.col("type") == "ack") & F.col("offset").isNotNull() & F.col("partition").isNotNull()
    first_ack = F.min(F.when(acked, F.struct("seq", "t", "topic", "partition", "offset")))
    rows = ev.groupBy("value").agg(
        F.min(F.struct(F.col("seq"), producer_column().alias("producer"), F.col("txn"), F.col("txn_outcome")))
        .alias("first"), first_ack.alias("ack"))
    records = rows.select(
        "value", F.col("first.producer").alias("producer"), F.col("first.txn").alias("txn"),
        F.col("first.txn_outcome").alias("txn_outcome"), F.col("ack.t").alias("ack_t"),
        F.col("ack.seq").alias("ack_seq"), F.col("ack.topic").alias("topic"),
        F.col("ack.partition").alias("partition"), F.col("ack.offset").alias("offset"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    return records


def hidden_values(ctx: CheckContext) -> DataFrame:
    """`value` of every record a read_committed consumer need not return (its transaction is not committed)."""
    return txn_records(ctx).where(F.col("txn_outcome") != COMMITTED).select("value")


def read_polls(ctx: CheckContext) -> DataFrame:
    """Polls and pipe.reads with a value, partition and offset: `value`, `group`, `consumer`, `committed_only`,
    `topic`, `partition`, `offset`, `seq`, `t`, `type`."""
    return ctx.df(*READ_TYPES).where(
        F.col("value").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull()).select(
        "value", F.coalesce(F.col("group"), F.col("src")).alias("group"),
        F.coalesce(F.col("consumer"), F.col("src")).alias("consumer"), committed_only_column().alias("committed_only"),
        "topic", "partition", "offset", "seq", "t", "type")


def pipe_reads(ctx: CheckContext) -> DataFrame:
    """pipe.reads with a value, partition, offset and txn: `pipeline`, `txn`, `topic`, `partition`, `offset`,
    `value`, `seq`, `t`."""
    named = F.col("value").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull()
    return ctx.df("pipe.read").where(named & F.col("txn").isNotNull() & F.col("topic").isNotNull()).select(
        pipeline_column().alias("pipeline"), "txn", "topic", "partition", "offset", "value", "seq", "t")
