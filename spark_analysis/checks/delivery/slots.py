"""Exact facts about positions in order, without sorting the rows: slot words.

Owns `slot_words`, `increasing_within` (within each group, y strictly increases with x and no x
repeats) and the fast paths built on them: `location_summary` (how many (topic, partition, offset)
were seen, how many holding two values) and key order's `acks_in_value_order`.

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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.checks.shared.frames import producer_key_hash, topic_hash
from spark_analysis.facts.context import CheckContext

SLOT_BITS = 3
SLOTS = 1 << SLOT_BITS
"""Positions per word. 8 measured as fast as 4 or 16 and faster than 64 (every row evaluates one
condition per slot; fewer slots fold fewer rows into a word)."""


def _y(j: int, end: str) -> str:
    return f"y{end}{j}"


# The expressions below are SQL text: one py4j round trip each, where the same expression built
# from Column functions took dozens (850 per `increasing_within`).


def slot_words(df: DataFrame, groups: list[str], x: str, y: str, both_ends: bool = True) -> DataFrame:
    """One row per (groups, word): `n` rows, `bits` (slots filled), `lo`/`hi` (least/greatest y), and per
    slot j `ylo<j>`/`yhi<j>` (null when the slot is empty; only `yhi<j>` when not `both_ends`)."""
    rows = df.selectExpr(*(f"`{g}`" for g in groups), f"shiftright(`{x}`, {SLOT_BITS}) AS w",
                         f"int(`{x}` & {SLOTS - 1}) AS slot", f"`{y}` AS y")
    ends = (("min", "lo"), ("max", "hi")) if both_ends else (("max", "hi"),)
    per_slot = [f"{fn}(if(slot = {j}, y, null)) AS {_y(j, end)}" for j in range(SLOTS) for fn, end in ends]
    aggs = ["count(1) AS n", "bit_or(shiftleft(1L, slot)) AS bits", "min(y) AS lo", "max(y) AS hi", *per_slot]
    return rows.groupBy(*groups, "w").agg(*(F.expr(a) for a in aggs))


def _failing(df: DataFrame, groups: list[str], x: str, y: str) -> DataFrame:
    """The words (with their `groups`) that break "y strictly increases with x, no x twice"."""
    words = slot_words(df, groups, x, y, both_ends=False)
    ys = [_y(j, "hi") for j in range(SLOTS)]
    # y_j <= max(y_0 .. y_j-1) is null (not a violation) when slot j or all slots before it are empty.
    behind = [f"coalesce({ys[j]} <= {ys[0] if j == 1 else 'greatest(' + ', '.join(ys[:j]) + ')'}, false)"
              for j in range(1, SLOTS)]
    inside = " OR ".join(["n != bit_count(bits)", *behind])
    before = f"lag(hi) OVER (PARTITION BY {', '.join(f'`{g}`' for g in groups)} ORDER BY w)"
    flags = words.selectExpr(*(f"`{g}`" for g in groups), f"{inside} AS inside",
                             f"coalesce({before} >= lo, false) AS across")
    return flags.where("inside OR across")


def increasing_within(df: DataFrame, groups: list[str], x: str, y: str) -> bool:
    """Whether, within every group of `df`, no two rows share an x and y strictly increases with x.

    Exact (rows with a null x or y must be filtered out by the caller). In a word: no slot got two
    rows (`n` equals the bits set), and each filled slot's y exceeds that of every filled slot before
    it; across words: each word's least y exceeds the greatest y of the group's word before it.
    """
    # count(), not limit(1): a limit runs its first job on one partition, i.e. one core.
    return _failing(df, groups, x, y).count() == 0


def location_summary(ctx: CheckContext) -> dict[str, int]:
    """Over the (topic, partition, offset) that acks and polls saw a value at: how many `locations`,
    and how many were `two_valued` (seen holding two different values). Kept in `ctx.shared`."""
    if "location_summary" in ctx.shared:
        return ctx.shared["location_summary"]
    obs = ctx.df("ack", "poll").where(F.col("offset").isNotNull() & F.col("value").isNotNull()).select(
        topic_hash().alias("topic_h"), "partition", "offset", "value")
    words = slot_words(obs, ["topic_h", "partition"], "offset", "value")
    two = " + ".join(f"coalesce(int({_y(j, 'lo')} != {_y(j, 'hi')}), 0)" for j in range(SLOTS))
    row = words.agg(F.expr("coalesce(sum(bit_count(bits)), 0) AS locations"),
                    F.expr(f"coalesce(sum({two}), 0) AS two_valued")).first()
    summary = {k: int(v) for k, v in row.asDict().items()} if row is not None else {"locations": 0, "two_valued": 0}
    ctx.shared["location_summary"] = summary
    return summary


def acks_in_value_order(ctx: CheckContext) -> bool:
    """Whether each producer sent each key's values in increasing value order (by file position), and
    its acks of a key in one partition have offsets increasing with value. Then value order is send
    order, and key order holds with no join of sends to acks; False only means "not shown".

    True of the harness, whose producers send `value_base + n` for n = 0, 1, ... Both halves are asked
    per producer first, in one pass over sends and acks (a producer's values are dense, and so are
    its offsets in a partition, so its words are full); per key only for a half that fails there.
    """
    keyed = F.col("key").isNotNull() & F.col("value").isNotNull()
    sends = ctx.df("send").where(keyed)
    acks = ctx.df("ack").where(keyed & F.col("offset").isNotNull())
    zero, p_h = F.lit(0).cast("long"), F.xxhash64("producer").alias("p_h")
    by_producer = sends.select(F.lit(0).alias("half"), p_h, zero.alias("topic_h"), zero.alias("partition"),
                               F.col("value").alias("x"), F.col("seq").alias("y")).unionByName(
        acks.select(F.lit(1).alias("half"), p_h, topic_hash().alias("topic_h"), "partition",
                    F.col("offset").alias("x"), F.col("value").alias("y")))
    failing = {int(r["half"]) for r in _failing(by_producer, ["half", "p_h", "topic_h", "partition"], "x", "y")
               .select("half").distinct().collect()}
    if 0 in failing and not increasing_within(
            sends.select(producer_key_hash().alias("pk_h"), "value", "seq"), ["pk_h"], "value", "seq"):
        return False
    return 1 not in failing or increasing_within(
        acks.select(producer_key_hash().alias("pk_h"), topic_hash().alias("topic_h"), "partition", "value", "offset"),
        ["pk_h", "topic_h", "partition"], "value", "offset")
