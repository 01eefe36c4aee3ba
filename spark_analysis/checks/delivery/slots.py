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

from spark_analysis.checks.shared.frames import PRODUCER_KEY_HASH, topic_hash_sql
from spark_analysis.facts.context import CheckContext, once_per_verify

SLOT_BITS = 3
SLOTS = 1 << SLOT_BITS
"""Positions per word. 8 measured as fast as 4 or 16 and faster than 64 (every row evaluates one
condition per slot; fewer slots fold fewer rows into a word)."""


def _y(j: int, end: str) -> str:
    return f"y{end}{j}"


# The plans below are SQL text: one py4j round trip each, where the same plan built from Column
# functions took dozens (850 per `increasing_within`).


def slot_words(df: DataFrame, groups: list[str], x: str, y: str, both_ends: bool = True) -> DataFrame:
    """One row per (groups, word): `n` rows, `bits` (slots filled), `lo`/`hi` (least/greatest y), and per
    slot j `ylo<j>`/`yhi<j>` (null when the slot is empty; only `yhi<j>` when not `both_ends`)."""
    keys = ", ".join(f"`{g}`" for g in groups)
    ends = (("min", "lo"), ("max", "hi")) if both_ends else (("max", "hi"),)
    per_slot = [f"{fn}(if(slot = {j}, y, null)) AS {_y(j, end)}" for j in range(SLOTS) for fn, end in ends]
    aggs = ["count(1) AS n", "bit_or(shiftleft(1L, slot)) AS bits", "min(y) AS lo", "max(y) AS hi", *per_slot]
    return df.sparkSession.sql(f"""
        SELECT {keys}, w, {", ".join(aggs)}
        FROM (SELECT {keys}, shiftright(`{x}`, {SLOT_BITS}) AS w, int(`{x}` & {SLOTS - 1}) AS slot, `{y}` AS y
              FROM {{df}})
        GROUP BY {keys}, w""", df=df)


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


@once_per_verify
def location_summary(ctx: CheckContext) -> dict[str, int]:
    """Over the (topic, partition, offset) that acks and polls saw a value at: how many `locations`,
    and how many were `two_valued` (seen holding two different values), once per verify."""
    obs = ctx.df("ack", "poll").where("`offset` IS NOT NULL AND value IS NOT NULL").selectExpr(
        f"{topic_hash_sql()} AS topic_h", "`partition`", "`offset`", "value")
    words = slot_words(obs, ["topic_h", "partition"], "offset", "value")
    two = " + ".join(f"coalesce(int({_y(j, 'lo')} != {_y(j, 'hi')}), 0)" for j in range(SLOTS))
    row = words.selectExpr("coalesce(sum(bit_count(bits)), 0) AS locations",
                           f"coalesce(sum({two}), 0) AS two_valued").first()
    summary = {k: int(v) for k, v in row.asDict().items()} if row is not None else {"locations": 0, "two_valued": 0}
    return summary


def acks_in_value_order(ctx: CheckContext) -> bool:
    """Whether each producer sent each key's values in increasing value order (by file position), and
    its acks of a key in one partition have offsets increasing with value. Then value order is send
    order, and key order holds with no join of sends to acks; False only means "not shown".

    True of the harness, whose producers send `value_base + n` for n = 0, 1, ... Both halves are asked
    per producer first, in one pass over sends and acks (a producer's values are dense, and so are
    its offsets in a partition, so its words are full); per key only for a half that fails there.
    """
    sends = ctx.df("send").where("key IS NOT NULL AND value IS NOT NULL")
    acks = ctx.df("ack").where("key IS NOT NULL AND value IS NOT NULL AND `offset` IS NOT NULL")
    by_producer = ctx.df("send").sparkSession.sql(f"""
        SELECT 0 AS half, xxhash64(producer) AS p_h, 0L AS topic_h, 0L AS `partition`, value AS x, seq AS y
        FROM {{sends}}
        UNION ALL
        SELECT 1 AS half, xxhash64(producer) AS p_h, {topic_hash_sql()} AS topic_h, CAST(`partition` AS BIGINT),
          `offset` AS x, value AS y
        FROM {{acks}}""", sends=sends, acks=acks)
    failing = {int(r["half"]) for r in _failing(by_producer, ["half", "p_h", "topic_h", "partition"], "x", "y")
               .select("half").distinct().collect()}
    if 0 in failing and not increasing_within(
            sends.selectExpr(f"{PRODUCER_KEY_HASH} AS pk_h", "value", "seq"), ["pk_h"], "value", "seq"):
        return False
    return 1 not in failing or increasing_within(
        acks.selectExpr(f"{PRODUCER_KEY_HASH} AS pk_h", f"{topic_hash_sql()} AS topic_h", "`partition`", "value",
                        "`offset`"), ["pk_h", "topic_h", "partition"], "value", "offset")
