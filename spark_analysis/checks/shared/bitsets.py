"""The delivery checks' counters as set arithmetic on 64-bit words: no shuffle of the events by value.

Owns `write_counters(ctx)`, the fast path of the delivery checks' counters, and `per_location(ctx)`,
the grouping by location that inconsistent offsets takes its evidence from (its fast path,
`slots.location_summary`, counts the same locations without grouping the rows).

Written values are integers, so each fact about values (sent, acked, polled, errored, ...) is a
set of integers, kept as 64-bit words: word `value >> 6` holds bit `value & 63`. Building the
words is a hash aggregation by word with `bit_or`; each task folds its rows into one word per
64 values before anything is shuffled, so the millions of send/ack/poll events never travel as
rows. A counter is then `sum(bit_count(<set expression>))` over the words, e.g. acked, not sent
with weak acks and not polled: `acked & ~(weak | polled)`. Sparse values only make the word
table larger (at worst one word per value), never wrong.

`write_counters` answers only counters. A check whose counter shows an anomaly finds its evidence
rows elsewhere: in the per-value frames of `frames.py`, or (inconsistent offsets) in the
two-valued rows of `per_location`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.checks.shared.frames import topic_hash, write_events, write_facts
from spark_analysis.facts.context import CheckContext


def _word(values: Column) -> Column:
    """The word (of 64 values) a value is in."""
    return F.shiftright(values, 6)


def _bit(column: str) -> Column:
    """The bit of the value in column `column` within its word."""
    return F.expr(f"shiftleft(1L, cast(`{column}` & 63 as int))")


def _set(cond: Column) -> Column:
    """Aggregate: the word of values whose rows satisfy `cond` (0 when none does)."""
    return F.coalesce(F.bit_or(F.when(cond, F.col("bit"))), F.lit(0).cast("long"))


def _count(words: Column) -> Column:
    return F.coalesce(F.sum(F.bit_count(words)), F.lit(0)).cast("long")


def write_counters(ctx: CheckContext) -> dict[str, Any]:
    """The counters of `frames.per_value_stats` except `duplicated_values` and `polled_topics`.

    `acked_never_polled` (an acknowledged write, acks=all, never polled) 0 means no write is lost or unseen;
    `acked_unsent` counts values acked with no send seen; `ack_seen` values with an ack (whatever their
    transaction's outcome)."""
    if "write_counters" in ctx.shared:
        return ctx.shared["write_counters"]
    facts = write_facts()
    ev = write_events(ctx).select(
        *(cond.alias(name) for name, cond in facts.items()), _word(F.col("value")).alias("word"),
        _bit("value").alias("bit"))
    words = ev.groupBy("word").agg(*(_set(F.col(name)).alias(name) for name in facts))
    s, w, raw, p, e, d, loc, ab, un = (F.col(n) for n in ("sent", "weak", "acked", "polled", "errored", "definite",
                                                          "located", "aborted", "undecided"))
    no = F.bitwise_not
    a = raw.bitwiseAND(no(ab.bitwiseOR(un)))  # acknowledged writes: no record of an aborted or unknown txn
    row = words.agg(
        _count(a).alias("acked"),
        _count(p).alias("polled"),
        _count(s.bitwiseAND(no(raw.bitwiseOR(e)))).alias("unfinished"),
        _count(e.bitwiseAND(no(d.bitwiseOR(raw).bitwiseOR(ab).bitwiseOR(un)))).alias("indefinite_errors"),
        _count(a.bitwiseAND(w).bitwiseAND(no(p))).alias("unpolled_acks_weaker_than_all"),
        _count(a.bitwiseAND(no(w.bitwiseOR(p)))).alias("acked_never_polled"),
        _count(ab).alias("txn_aborted_records"),
        _count(un.bitwiseAND(no(ab))).alias("txn_unknown_records"),
        _count(loc).alias("values_seen"),
        _count(raw.bitwiseAND(no(s))).alias("acked_unsent"),
        _count(raw).alias("ack_seen"),
    ).first()
    counters = {k: int(v) for k, v in row.asDict().items()} if row is not None else {}
    ctx.shared["write_counters"] = counters
    return counters


def per_location(ctx: CheckContext) -> DataFrame:
    """One row per (topic, partition, offset) an ack or poll saw a value at: `topic_h`, `partition`,
    `offset`, and the smallest and largest value seen there (`vmin`, `vmax`; they differ exactly
    when the location held two values). The failure path of inconsistent offsets: it shuffles every row."""
    obs = ctx.df("ack", "poll").where(F.col("offset").isNotNull() & F.col("value").isNotNull()).select(
        topic_hash().alias("topic_h"), "partition", "offset", "value")
    # A location's ack and polls sit in different files, so an aggregation before the shuffle
    # would not merge rows: shuffle the rows by location first, then aggregate once.
    return obs.repartition("topic_h", "partition", "offset").groupBy("topic_h", "partition", "offset").agg(
        F.min("value").alias("vmin"), F.max("value").alias("vmax"))
