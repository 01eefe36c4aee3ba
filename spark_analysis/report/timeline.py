"""The data behind the report's timeline, small enough to keep in `verdict.json`.

Owns `build_timeline`: fault windows, controller (broker, epoch) changes, leader and ISR size per
partition (state changes only), group state and generation changes, and per time bin the
produce (acks) and consume (polls) rates and the ack latency (p50, max; from send to ack of the
same value) — the big series aggregated in Spark, the small ones from collected rows.
"""

from __future__ import annotations

import math
from typing import Any

from spark_analysis.facts.context import CheckContext
from spark_analysis.session.sql_text import double

MAX_BINS = 300
MAX_PARTITION_ROWS = 48
MAX_INTERNAL_ROWS = 8
"""Rows for partitions of Kafka's internal topics, which are drawn only when their leader or ISR changed."""


def _bin_width(end_t: float) -> float:
    raw = max(end_t, 1.0) / MAX_BINS
    for nice in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600):
        if raw <= nice:
            return float(nice)
    return float(math.ceil(raw / 600.0) * 600)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return None if math.isnan(v) or math.isinf(v) else round(v, 4)


def build_timeline(ctx: CheckContext) -> dict[str, Any]:
    out: dict[str, Any] = {"end_t": round(ctx.end_t, 3)}
    out["faults"] = [w.to_json() for w in ctx.faults.windows]
    operations = [w.to_json() for w in ctx.operations.windows]
    if operations:
        out["operations"] = operations
    zk = [e for e in ctx.rows("controller") if e.get("src") == "zk"] or ctx.rows("controller")
    out["controller"] = [[round(float(e.get("t") or 0), 3), e.get("broker"), e.get("epoch")] for e in zk]
    states = [e for e in ctx.rows("partition.state") if e.get("src") == "zk"] or ctx.rows("partition.state")
    parts: dict[str, list[list[Any]]] = {}
    for e in states:
        if e.get("topic") is None or e.get("partition") is None:
            continue
        key = f"{e['topic']}/{e['partition']}"
        isr = e.get("isr")
        point = [round(float(e.get("t") or 0), 3), e.get("leader"), len(isr) if isr is not None else None]
        series = parts.setdefault(key, [])
        if not series or series[-1][1:] != point[1:]:
            series.append(point)
    user = {k: v for k, v in parts.items() if not k.startswith("__")}
    internal = {k: v for k, v in parts.items() if k.startswith("__")}
    chosen = dict(sorted(user.items())[:MAX_PARTITION_ROWS])
    # Kafka's own topics (__consumer_offsets' 50 partitions) only where something happened: a leader or ISR change,
    # the most changed first, never more than the user's topics get
    moved = sorted(((k, v) for k, v in internal.items() if len(v) > 1), key=lambda kv: (-len(kv[1]), kv[0]))
    room = min(MAX_INTERNAL_ROWS, MAX_PARTITION_ROWS - len(chosen))
    chosen.update(dict(sorted(moved[:max(room, 0)])))
    out["partitions"] = chosen
    out["partitions_omitted"] = len(parts) - len(chosen)
    groups: dict[str, list[list[Any]]] = {}
    for e in ctx.rows("group.state"):
        series = groups.setdefault(str(e.get("group")), [])
        point = [round(float(e.get("t") or 0), 3), e.get("state"), e.get("generation")]
        if not series or series[-1][1:] != point[1:]:
            series.append(point)
    out["groups"] = groups
    width = _bin_width(ctx.end_t)
    out["bin_s"] = width
    out["rates"] = _rates(ctx, width)
    return out


P50_ACCURACY = 10_000
"""`percentile_approx`'s accuracy for the latency p50: exact for a bin of fewer than 5,000 acks, whatever the
partitioning (so the small-run mode and the Parquet-backed one draw the same line), within 0.01% of the
rank above that."""


def _rates(ctx: CheckContext, width: float) -> dict[str, list[Any]]:
    """Per bin: acks, polls (per second) and ack latency p50/max (seconds). Spark only."""
    if ctx.events is None or (ctx.count("ack") == 0 and ctx.count("poll") == 0):
        return {}
    spark = ctx.spark
    assert spark is not None
    bin_of = f"CAST(floor({{t}} / {double(width)}) AS BIGINT)"  # SQL text: one JVM call a plan
    counts = spark.sql(f"""
        SELECT {bin_of.format(t="t")} AS bin, sum(CAST(`type` = 'ack' AS INT)) AS acks,
          sum(CAST(`type` = 'poll' AS INT)) AS polls
        FROM {{ev}} GROUP BY 1""", ev=ctx.df("ack", "poll")).collect()
    lat: dict[int, tuple[Any, Any]] = {}
    if ctx.count("send") and ctx.count("ack"):
        # Each value's first send and first ack, joined by value (both sides shuffled once, narrow).
        rows = spark.sql(f"""
            WITH s AS (SELECT value, min(t) AS send_t FROM {{sends}} WHERE value IS NOT NULL GROUP BY value),
                 a AS (SELECT value, min(t) AS ack_t FROM {{acks}} WHERE value IS NOT NULL GROUP BY value)
            SELECT {bin_of.format(t="ack_t")} AS bin, percentile_approx(ack_t - send_t, 0.5, {P50_ACCURACY}) AS p50,
              max(ack_t - send_t) AS `max`
            FROM s JOIN a USING (value) GROUP BY 1""", sends=ctx.df("send"), acks=ctx.df("ack")).collect()
        lat = {int(r["bin"]): (r["p50"], r["max"]) for r in rows}
    series: dict[str, list[Any]] = {"t": [], "acks_per_s": [], "polls_per_s": [], "lat_p50": [], "lat_max": []}
    for r in sorted(counts, key=lambda r: r["bin"]):
        b = int(r["bin"])
        series["t"].append(round(b * width, 3))
        series["acks_per_s"].append(round(int(r["acks"]) / width, 2))
        series["polls_per_s"].append(round(int(r["polls"]) / width, 2))
        p50, mx = lat.get(b, (None, None))
        series["lat_p50"].append(_num(p50))
        series["lat_max"].append(_num(mx))
    return series
