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

The whole computation is one SQL query (`COUNTERS` holds each counter's set expression): one JVM call to
plan it, where the Column API took about 600 (issue 39).

`write_counters` answers only counters. A check whose counter shows an anomaly finds its evidence
rows elsewhere: in the per-value frames of `frames.py`, or (inconsistent offsets) in the
two-valued rows of `per_location`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.checks.shared.frames import topic_hash, write_events, write_facts
from spark_analysis.facts.context import CheckContext, once_per_verify

_A = "(acked & ~(aborted | undecided))"
"""Acknowledged writes: acked, and no record of an aborted or unknown transaction."""
COUNTERS = {
    "acked": _A,
    "polled": "polled",
    "unfinished": "sent & ~(acked | errored)",
    "indefinite_errors": "errored & ~(definite | acked | aborted | undecided)",
    "unpolled_acks_weaker_than_all": f"{_A} & weak & ~polled",
    "acked_never_polled": f"{_A} & ~(weak | polled)",
    "txn_aborted_records": "aborted",
    "txn_unknown_records": "undecided & ~aborted",
    "values_seen": "located",
    "acked_unsent": "acked & ~sent",
    "ack_seen": "acked",
}
"""Each counter of `write_counters` as a set expression over one word of each fact's set (SQL)."""


@once_per_verify
def write_counters(ctx: CheckContext) -> dict[str, Any]:
    """The counters of `frames.per_value_stats` except `duplicated_values` and `polled_topics`.

    `acked_never_polled` (an acknowledged write, acks=all, never polled) 0 means no write is lost or unseen;
    `acked_unsent` counts values acked with no send seen; `ack_seen` values with an ack (whatever their
    transaction's outcome). One SQL query: the words per fact (`bit_or` of each row's bit by word), then
    `sum(bit_count(...))` of each counter's set expression."""
    assert ctx.spark is not None
    facts = write_facts()
    row = ctx.spark.sql(f"""
        SELECT {", ".join(f"CAST(coalesce(sum(bit_count({expr})), 0) AS BIGINT) AS {name}"
                          for name, expr in COUNTERS.items())}
        FROM (
          SELECT word, {", ".join(f"coalesce(bit_or(CASE WHEN {name} THEN bit END), 0L) AS {name}" for name in facts)}
          FROM (
            SELECT {", ".join(f"{cond} AS {name}" for name, cond in facts.items())},
              shiftright(value, 6) AS word, shiftleft(1L, CAST(value & 63 AS INT)) AS bit
            FROM {{ev}})
          GROUP BY word)""", ev=write_events(ctx)).first()
    counters = {k: int(v) for k, v in row.asDict().items()} if row is not None else {}
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
