"""Spark intermediates shared by the big checks, computed once per run and cached.

Every aggregate buffer here is fixed-width (ints, longs, doubles) so Spark can use its hash
aggregation with map-side partial aggregation; strings (topic, producer, key) enter only as
64-bit hashes, and evidence rows are fetched back by value afterwards.

- `per_value(ctx)`: one row per written value (send/ack/send.error/poll, and pipe.read as a poll, aggregated
  with one shuffle): whether and how it was sent, acknowledged, failed, polled (bit flags OR-ed together);
  whether it belongs to a transaction that was aborted or whose outcome is unknown (then its ack is
  no acknowledged write: `acked_write` is 0; see `checks.delivery.checks`);
  where it was acked; the smallest and largest hash of the locations (topic, partition, offset)
  it was seen at (they differ exactly when it was seen at two locations, up to hash collisions).
  Only the aggregated columns are persisted; the 0/1 flags are derived when read. The clean
  case never builds it (`bitsets.py` counts without it); it serves failures, for their evidence.
- `per_value_stats(ctx)`: the lost-write and duplicate counters, in one pass over `per_value`.
- `keyed_acks(ctx)`: each acked value with a key, with the position of its send: key order's exact
  path (its fast path, without that join, is in `slots.py`).
- `poll_frontier(ctx)`: the highest polled (or pipe.read) offset per partition (small, collected).
- `poll_pairs(ctx)`: anomalous consecutive polls of one consumer on one partition within one
  assignment epoch (an assign/revoke of that partition by that consumer starts a new epoch):
  offset not increasing, or jumping by more than one.
- `weigh(ctx, df, reason)`: a frame of anomalies counted by what permits them (`checks.shared.permits`), in one grouped
  job; `weighed(...)` adds the facts a judge needs about all of them and about the violations alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.shared.permits import Reason, Weighed, mixed, unclean_partitions
from spark_analysis.checks.shared.txn_frames import COMMITTED_ONLY, with_txn_outcome
from spark_analysis.facts.context import CheckContext, once_per_verify
from spark_analysis.facts.transactions import ABORTED, UNKNOWN

WRITE_TYPES = ("send", "ack", "send.error", "poll")
PIPE_READ = "pipe.read"
"""A pipeline's read of an input record: a poll for `delivery.lost_write` (`write_events`, `poll_frontier`)."""
PER_VALUE_STORAGE = StorageLevel.MEMORY_AND_DISK
Facts = TypeVar("Facts")


def _is(kind: str) -> F.Column:
    return F.col("type") == kind


def acks_all(column: str) -> str:
    """SQL: acks=all/-1 in `column`, or no acks recorded (treated as all)."""
    return f"lower(coalesce(`{column}`, 'all')) IN ('all', '-1')"


def topic_hash_sql(topic: str = "topic") -> str:
    """SQL: the 64-bit hash of a topic name, the `topic_h` every frame and check matches topics on."""
    return f"xxhash64({topic})"


def topic_hash() -> F.Column:
    """`topic_hash_sql()` as a Column."""
    return F.expr(topic_hash_sql())


PRODUCER_KEY_HASH = "xxhash64(producer, key)"
"""SQL: the 64-bit hash of (producer, key), the `pk_h` key order groups writes by."""


def producer_key_hash() -> F.Column:
    """`PRODUCER_KEY_HASH` as a Column."""
    return F.expr(PRODUCER_KEY_HASH)


FACT_BITS = {"sent": 1, "acked": 2, "polled": 4, "errored": 8, "definite": 16, "weak": 32, "aborted": 64,
             "undecided": 128}
"""The per-value frame's `bits`: one bit per fact, OR-ed over the value's events."""


def write_events(ctx: CheckContext) -> DataFrame:
    """The send/ack/send.error/poll events with a value, and the pipe.reads (a pipeline reading its input topic,
    counted as polls), with their transaction's outcome (`txn_outcome`: null outside transactions;
    `txn_frames.with_txn_outcome`; a pipe.read's `txn` is the pipeline's, not its record's: left out), which
    `write_facts` reads."""
    types = (*WRITE_TYPES, PIPE_READ) if ctx.count(PIPE_READ) else WRITE_TYPES
    ev = ctx.df(*types).where(F.col("value").isNotNull())
    if ctx.count(PIPE_READ):
        ev = ev.withColumn("txn", F.when(F.col("type") != PIPE_READ, F.col("txn")))
    return with_txn_outcome(ctx, ev)


def write_facts() -> dict[str, str]:
    """What one write event (of `write_events`) says about its value: a condition per fact, as SQL text (one JVM
    call to build, where the Column API took one per operator). The per-value frame and the word bit sets
    (`bitsets.py`) both count these, so the exact and the fast path agree.

    sent; acked (an ack, whatever its transaction's outcome); polled (a poll, or a pipeline's pipe.read: the
    record was read, for `delivery.lost_write`); errored (send.error); definite (an
    error saying the write did not happen); weak (sent with acks weaker than all); aborted (a record of an
    aborted transaction); undecided (a record of a transaction whose outcome is unknown); located (acked or
    polled at a known offset).
    """
    return {
        "sent": "`type` = 'send'",
        "acked": "`type` = 'ack'",
        "polled": f"`type` IN ('poll', '{PIPE_READ}')",
        "errored": "`type` = 'send.error'",
        "definite": "`type` = 'send.error' AND coalesce(definite, false)",
        "weak": f"`type` = 'send' AND NOT ({acks_all('acks')})",
        "aborted": f"coalesce(txn_outcome = '{ABORTED}', false)",
        "undecided": f"coalesce(txn_outcome = '{UNKNOWN}', false)",
        "located": "`type` IN ('ack', 'poll') AND `offset` IS NOT NULL",
    }


@once_per_verify
def _per_value_narrow(ctx: CheckContext) -> DataFrame:
    """The persisted per-value aggregate: only the aggregated columns (the flags are derived on read)."""
    facts = write_facts()
    ev = write_events(ctx).select(
        "type", "value", "t", "seq", "partition", "offset",
        topic_hash().alias("topic_h"),
        F.when(F.col("key").isNotNull(), producer_key_hash()).alias("pk_h"),
        F.expr(" + ".join(f"CASE WHEN {facts[name]} THEN {bit} ELSE 0 END" for name, bit in FACT_BITS.items()))
        .alias("bits"),
        F.expr(f"CASE WHEN {facts['located']} THEN xxhash64(topic, `partition`, `offset`) END").alias("loc_h"),
    )
    ack = _is("ack")
    flags = ev.groupBy("value").agg(
        F.bit_or("bits").alias("bits"),
        F.min(F.when(_is("send"), F.col("seq"))).alias("send_seq"),
        F.min(F.when(_is("send"), F.col("t"))).alias("send_t"),
        F.max("pk_h").alias("pk_h"),
        F.min(F.when(ack, F.col("t"))).alias("ack_t"),
        F.min(F.when(ack, F.col("seq"))).alias("ack_seq"),
        F.min(F.when(ack, F.col("topic_h"))).alias("ack_topic_h"),
        F.min(F.when(ack, F.col("partition"))).alias("ack_partition"),
        F.min(F.when(ack, F.col("offset"))).alias("ack_offset"),
        F.min(F.when(_is("poll") | _is(PIPE_READ), F.col("topic_h"))).alias("poll_topic_h"),
        F.min("loc_h").alias("loc_min"),
        F.max("loc_h").alias("loc_max"),
    )
    flags = flags.persist(PER_VALUE_STORAGE)
    return flags


def per_value(ctx: CheckContext) -> DataFrame:
    """One row per written value (see the module docstring), with its 0/1 flags derived from `bits`:
    sent, acked (an ack was seen), polled, errored, failed_definitely, send_acks_all, txn_aborted (a record
    of an aborted transaction), txn_unknown (of a transaction with an unknown outcome, not aborted) and
    acked_write (acked, and no record of an aborted or unknown transaction: an acknowledged write)."""
    def has(fact: str) -> F.Column:
        return F.col("bits").bitwiseAND(FACT_BITS[fact]) != 0

    return _per_value_narrow(ctx).select(
        "*",
        *(has(fact).cast("int").alias(fact) for fact in ("sent", "acked", "polled", "errored")),
        has("definite").cast("int").alias("failed_definitely"),
        F.when(has("sent"), (~has("weak")).cast("int")).alias("send_acks_all"),
        has("aborted").cast("int").alias("txn_aborted"),
        (has("undecided") & ~has("aborted")).cast("int").alias("txn_unknown"),
        (has("acked") & ~has("aborted") & ~has("undecided")).cast("int").alias("acked_write"),
    )


def strong_ack(col_prefix: str = "") -> F.Column:
    """Sent with acks=all (or never seen sent: treated as acks=all)."""
    return F.coalesce(F.col(col_prefix + "send_acks_all"), F.lit(1)) == 1


@once_per_verify
def per_value_stats(ctx: CheckContext) -> dict[str, Any]:
    """The counters of the delivery checks over `per_value`, computed in ONE pass and kept.

    Lost-write counters (acked: acknowledged writes, i.e. acks outside aborted and unknown transactions;
    polled, unfinished, indefinite_errors (outside aborted and unknown transactions: those records are
    counted as theirs), unpolled_acks_weaker_than_all, acked_never_polled, txn_aborted_records,
    txn_unknown_records, polled_topics) and duplicate counters (values_seen: values
    seen at some location; duplicated_values: values seen at two).
    """
    pv = per_value(ctx)
    ack_seen, polled, strong = F.col("acked") == 1, F.col("polled") == 1, strong_ack()
    acked = F.col("acked_write") == 1
    row = pv.agg(
        F.sum("acked_write").alias("acked"),
        F.sum("polled").alias("polled"),
        F.sum(((F.col("sent") == 1) & ~ack_seen & (F.col("errored") == 0)).cast("int")).alias("unfinished"),
        F.sum(((F.col("errored") == 1) & (F.col("failed_definitely") == 0) & ~ack_seen & (F.col("txn_aborted") == 0)
               & (F.col("txn_unknown") == 0)).cast("int")).alias("indefinite_errors"),
        F.sum((acked & ~polled & ~strong).cast("int")).alias("unpolled_acks_weaker_than_all"),
        F.sum((acked & ~polled & strong).cast("int")).alias("acked_never_polled"),
        F.sum("txn_aborted").alias("txn_aborted_records"),
        F.sum("txn_unknown").alias("txn_unknown_records"),
        F.collect_set(F.col("poll_topic_h")).alias("polled_topics"),
        F.count(F.col("loc_min")).alias("values_seen"),
        F.count(F.when(F.col("loc_min") != F.col("loc_max"), 1)).alias("duplicated_values"),
    ).first()
    stats: dict[str, Any] = {} if row is None else row.asDict()
    stats["polled_topics"] = [int(h) for h in stats.get("polled_topics") or []]
    return stats


def keyed_acks(ctx: CheckContext) -> DataFrame:
    """One row per acked value with a key and an offset: `pk_h` (producer and key), `value`, `ack_topic_h`,
    `ack_partition`, `ack_offset`, `ack_seq` (its lowest-offset ack) and `send_seq` (its first send).

    A value's sends and acks meet in a window by (`pk_h`, value), without a per-value aggregate of
    every event; key order's exact path. Its fast path (`slots.acks_in_value_order`) needs no join.
    """
    kinds = {"send": 0, "ack": 1}
    ev = ctx.df(*kinds).where(F.col("key").isNotNull() & F.col("value").isNotNull()
                              & ((F.col("type") == "send") | F.col("offset").isNotNull())).select(
        producer_key_hash().alias("pk_h"), "value", "seq", "partition", "offset",
        topic_hash().alias("topic_h"), F.when(_is("send"), 0).otherwise(1).alias("kind"))
    # Within one value: its sends first, then its acks by offset.
    w = Window.partitionBy("pk_h", "value").orderBy("kind", "offset", "seq")
    sends = F.count(F.when(F.col("kind") == 0, 1)).over(w)
    return (ev.select("*", F.min(F.when(F.col("kind") == 0, F.col("seq"))).over(w).alias("send_seq"),
                      (F.row_number().over(w) == sends + 1).alias("first_ack"))
            .where((F.col("kind") == 1) & F.col("first_ack") & F.col("send_seq").isNotNull())
            .select("pk_h", "send_seq", "value", F.col("topic_h").alias("ack_topic_h"),
                    F.col("partition").alias("ack_partition"), F.col("offset").alias("ack_offset"),
                    F.col("seq").alias("ack_seq")))


@once_per_verify
def poll_frontier(ctx: CheckContext) -> list[tuple[str, int, int, int]]:
    """(topic, topic hash, partition, highest polled offset) for every polled partition (pipe.reads count as
    polls)."""
    rows = (
        ctx.df("poll", PIPE_READ).where(F.col("offset").isNotNull() & F.col("partition").isNotNull())
        .groupBy("topic", "partition")
        .agg(F.max("offset").alias("max_offset"), F.first(topic_hash()).alias("topic_h"))
        .collect()
    )
    frontier = [(str(r["topic"]), int(r["topic_h"]), int(r["partition"]), int(r["max_offset"])) for r in rows]
    return frontier


@once_per_verify
def poll_pairs(ctx: CheckContext) -> DataFrame:
    """Anomalous consecutive polls: `offset`/`seq` and `prev_offset`/`prev_seq` of the same consumer
    (`src_h`, a hash of `src`) on the same partition (`topic_h`, `partition`) with no assign/revoke
    of it in between; `committed_only`: the later poll's consumer reads committed records only."""
    # Consumer and topic enter as 64-bit hashes: the sort compares longs, not strings. SQL text: one JVM call.
    assert ctx.spark is not None
    pairs = ctx.spark.sql(f"""
        WITH marked AS (
          SELECT xxhash64(src) AS src_h, {topic_hash_sql()} AS topic_h, `partition`, `offset`, seq,
            {COMMITTED_ONLY} AS committed_only
          FROM {{polls}} WHERE `offset` IS NOT NULL
          UNION ALL
          SELECT xxhash64(src) AS src_h, {topic_hash_sql('tp[0]')} AS topic_h, CAST(tp[1] AS BIGINT) AS `partition`,
            CAST(NULL AS BIGINT) AS `offset`, seq, CAST(NULL AS BOOLEAN) AS committed_only
          FROM (SELECT src, seq, explode(partitions) AS tp FROM {{markers}}) WHERE size(tp) = 2
        ), paired AS (
          SELECT *, lag(`offset`) OVER w AS prev_offset, lag(seq) OVER w AS prev_seq
          FROM marked WINDOW w AS (PARTITION BY src_h, topic_h, `partition` ORDER BY seq)
        )
        SELECT * FROM paired WHERE `offset` IS NOT NULL AND prev_offset IS NOT NULL
          AND (`offset` <= prev_offset OR `offset` > prev_offset + 1)""",
                          polls=ctx.df("poll"), markers=ctx.df("assign", "revoke"))
    pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
    return pairs


def events_by_seq(ctx: CheckContext, seqs: list[int]) -> dict[int, dict[str, object]]:
    """The full events at the given `seq`s (for evidence), as dicts without nulls."""
    if not seqs:
        return {}
    rows = ctx.df(*WRITE_TYPES, "commit").where(F.col("seq").isin(seqs)).collect()
    return {int(r["seq"]): {k: v for k, v in r.asDict().items() if v is not None} for r in rows}


@once_per_verify
def topic_names(ctx: CheckContext) -> dict[int, str]:
    """`topic_hash()` -> topic name, for the topics the workload wrote or read."""
    rows = ctx.df("ack", "poll").select("topic", topic_hash().alias("h")).distinct().collect()
    return {int(r["h"]): str(r["topic"]) for r in rows if r["topic"] is not None}


@dataclass(frozen=True, slots=True)
class Weighing:
    """A frame's anomalies grouped by writer and partition, each group with what permits it (None: a violation)."""

    groups: tuple[tuple[int, int | None, int | None, str | None, int], ...]
    """(writer index or -1, topic hash, partition, permit, count)."""
    index: Column
    topic_h: str
    partition: str

    @property
    def anomalies(self) -> tuple[tuple[str | None, int], ...]:
        return tuple((reason, n) for _w, _t, _p, reason, n in self.groups)

    def violations(self, df: DataFrame) -> DataFrame:
        """The rows of `df` (as weighed) that nothing permits."""
        keep = F.lit(False)
        for w, th, p, reason, _n in self.groups:
            if reason is None:
                keep = keep | ((self.index == w) & _same(F.col(self.topic_h), th) & _same(F.col(self.partition), p))
        return df.where(keep)


def _same(col: Column, value: int | None) -> Column:
    return col.isNull() if value is None else col == value


def weigh(ctx: CheckContext, df: DataFrame, reason: Reason, *, value: str | None = "value", topic_h: str = "topic_h",
          partition: str = "partition") -> Weighing:
    """The anomalies of `df` (one row each) counted by what permits them (`reason`), in one grouped Spark job: the
    writer comes from the row's value (each writer writes from its own `value_base` on: `RunInfo.writer_of`), the
    partition's permit from its unclean elections (`permits.permit_of` is the same for one anomaly)."""
    writers = sorted((w for w in ctx.run.writers if w.value_base is not None), key=lambda w: -(w.value_base or 0))
    index = F.lit(-1)
    if value is not None:
        for i in reversed(range(len(writers))):
            index = F.when(F.col(value) >= F.lit(writers[i].value_base), F.lit(i)).otherwise(index)
    rows = df.groupBy(index.alias("w"), F.col(topic_h).alias("th"), F.col(partition).alias("p")).count().collect()
    names, unclean = topic_names(ctx), unclean_partitions(ctx)
    groups = []
    for g in rows:
        w = int(g["w"])
        th, p = (int(g["th"]) if g["th"] is not None else None), (int(g["p"]) if g["p"] is not None else None)
        topic = names.get(th) if th is not None else None
        at = unclean.get((topic, p)) if topic is not None and p is not None else None
        groups.append((w, th, p, reason(writers[w] if w >= 0 else None, at), int(g["count"])))
    return Weighing(tuple(groups), index, topic_h, partition)


def weighed(ctx: CheckContext, df: DataFrame, reason: Reason, facts: Callable[[DataFrame, int], Facts], *,
            value: str | None = "value", topic_h: str = "topic_h", partition: str = "partition") -> Weighed[Facts]:
    """`df`'s anomalies weighed (`weigh`), with `facts(rows, how many)` of all of them and, when some are permitted
    and some not, of the violations alone (the counts come from the weighing: no job counts them again)."""
    weighing = weigh(ctx, df, reason, value=value, topic_h=topic_h, partition=partition)
    anomalies = weighing.anomalies
    found = facts(df, sum(n for _r, n in anomalies))
    violations = facts(weighing.violations(df), sum(n for r, n in anomalies if r is None)) if mixed(anomalies) else None
    return Weighed(found, anomalies, violations)
