"""Exact facts about positions in order, without sorting the rows: slot words.

Owns `slot_words`, `increasing_within` (within each group, y strictly increases with x and no x
repeats) and the fast paths built on them: `location_summary` (how many (topic, partition, offset)
were seen, how many holding two values), key order's `sends_in_value_order`
and `acks_out_of_value_order`.

A Spark window sorts all the rows of each of its partitions, and the sort was most of the cost
(0.8 s of the 1.7 s a window over 1.66M sends took on two cores). A slot word instead folds the
rows of SLOTS consecutive positions x of one group into one row: word `x >> SLOT_BITS`, slot
`x & (SLOTS - 1)`. It keeps how many rows it got, the bit set of the slots they filled, the least
and greatest y, and the least and greatest y of each slot. Building the words is a hash
aggregation that merges rows before the shuffle wherever a task reads nearby positions together
(a history's offsets and values mostly come in file order); anything else only makes words
sparser, never a fact wrong. Order across words is one comparison per word with the word before
it, in a window over SLOTS times fewer rows.

`increasing_within` groups by 64-bit hashes (of producer, key, topic). A collision merges two
groups into one, and a property that holds for the merged group holds for each group in it, so a
collision can turn a true answer false (the caller then takes its exact path), never a false
answer true.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.frames import producer_key_hash, topic_hash
from spark_analysis.context import CheckContext

SLOT_BITS = 3
SLOTS = 1 << SLOT_BITS
"""Positions per word. 8 measured faster than 16 or 64: every row evaluates one condition per slot."""


def _y(j: int, end: str) -> str:
    return f"y{end}{j}"


def slot_words(df: DataFrame, groups: list[str], x: str, y: str, both_ends: bool = True) -> DataFrame:
    """One row per (groups, word): `n` rows, `bits` (slots filled), `lo`/`hi` (least/greatest y), and per
    slot j `ylo<j>`/`yhi<j>` (null when the slot is empty; only `yhi<j>` when not `both_ends`)."""
    slot = F.col(x).bitwiseAND(SLOTS - 1)
    rows = df.select(*groups, F.shiftright(x, SLOT_BITS).alias("w"), slot.cast("int").alias("slot"),
                     F.col(y).alias("y"))
    per_slot: list[Column] = []
    for j in range(SLOTS):
        at = F.when(F.col("slot") == j, F.col("y"))
        per_slot += [F.min(at).alias(_y(j, "lo")), F.max(at).alias(_y(j, "hi"))] if both_ends else [
            F.max(at).alias(_y(j, "hi"))]
    return rows.groupBy(*groups, "w").agg(
        F.count(F.lit(1)).alias("n"), F.bit_or(F.expr("shiftleft(1L, slot)")).alias("bits"),
        F.min("y").alias("lo"), F.max("y").alias("hi"), *per_slot)


def _false_if_null(cond: Column) -> Column:
    return F.coalesce(cond, F.lit(False))


def increasing_within(df: DataFrame, groups: list[str], x: str, y: str) -> bool:
    """Whether, within every group of `df`, no two rows share an x and y strictly increases with x.

    Exact (rows with a null x or y must be filtered out by the caller). In a word: no slot got two
    rows (`n` equals the bits set), and each filled slot's y exceeds that of every filled slot before
    it; across words: each word's least y exceeds the greatest y of the group's word before it.
    """
    words = slot_words(df, groups, x, y, both_ends=False)
    ys = [F.col(_y(j, "hi")) for j in range(SLOTS)]
    # y_j <= max(y_0 .. y_j-1) is null (not a violation) when slot j or all slots before it are empty.
    behind = [ys[j] <= (ys[0] if j == 1 else F.greatest(*ys[:j])) for j in range(1, SLOTS)]
    inside = reduce(lambda a, b: a | _false_if_null(b), behind, F.col("n") != F.bit_count("bits"))
    across = _false_if_null(F.lag("hi").over(Window.partitionBy(*groups).orderBy("w")) >= F.col("lo"))
    flags = words.select(inside.alias("inside"), across.alias("across"))
    bad = flags.where(F.col("inside") | F.col("across"))
    # count(), not limit(1): a limit runs its first job on one partition, i.e. one core.
    return bad.count() == 0


def location_summary(ctx: CheckContext) -> dict[str, int]:
    """Over the (topic, partition, offset) that acks and polls saw a value at: how many `locations`,
    and how many were `two_valued` (seen holding two different values). Kept in `ctx.shared`."""
    if "location_summary" in ctx.shared:
        return ctx.shared["location_summary"]
    obs = ctx.df("ack", "poll").where(F.col("offset").isNotNull() & F.col("value").isNotNull()).select(
        topic_hash().alias("topic_h"), "partition", "offset", "value")
    words = slot_words(obs, ["topic_h", "partition"], "offset", "value")
    two = [(F.col(_y(j, "lo")) != F.col(_y(j, "hi"))).cast("int") for j in range(SLOTS)]
    row = words.agg(F.coalesce(F.sum(F.bit_count("bits")), F.lit(0)).alias("locations"),
                    F.coalesce(F.sum(reduce(lambda a, b: a + F.coalesce(b, F.lit(0)), two, F.lit(0))), F.lit(0))
                    .alias("two_valued")).first()
    summary = {k: int(v) for k, v in row.asDict().items()} if row is not None else {"locations": 0, "two_valued": 0}
    ctx.shared["location_summary"] = summary
    return summary


def sends_in_value_order(ctx: CheckContext) -> bool:
    """Whether each producer sent each key's values in increasing value order (by file position).

    True of the harness, whose producers send `value_base + n` for n = 0, 1, ...; then a key's
    acks ordered by value are ordered by send, and key order needs no join of sends to acks.
    Asked per producer first (its values are dense, so its words are full); per key only if not.
    """
    sends = ctx.df("send").where(F.col("key").isNotNull() & F.col("value").isNotNull())
    by_producer = sends.select(F.xxhash64("producer").alias("p_h"), "value", "seq")
    if increasing_within(by_producer, ["p_h"], "value", "seq"):
        return True
    return increasing_within(sends.select(producer_key_hash().alias("pk_h"), "value", "seq"), ["pk_h"], "value", "seq")


def acks_out_of_value_order(ctx: CheckContext) -> bool:
    """Whether some producer's acks of one key in one partition have offsets not increasing with value.

    Asked per producer and partition first (a producer's acks fill a partition's offsets densely):
    if there values increase with offset, they do for every key's subset of them.
    """
    acks = ctx.df("ack").where(F.col("key").isNotNull() & F.col("value").isNotNull() & F.col("offset").isNotNull())
    by_producer = acks.select(F.xxhash64("producer").alias("p_h"), topic_hash().alias("topic_h"), "partition",
                              "offset", "value")
    if increasing_within(by_producer, ["p_h", "topic_h", "partition"], "offset", "value"):
        return False
    by_key = acks.select(producer_key_hash().alias("pk_h"), topic_hash().alias("topic_h"), "partition",
                         "value", "offset")
    return not increasing_within(by_key, ["pk_h", "topic_h", "partition"], "value", "offset")
