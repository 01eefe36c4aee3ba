"""The client-side stalls of `slo.stall` computed in Spark: only small results reach the driver.

Both computations run window functions partitioned by (producer or group, topic, partition) and
ordered by (t, seq), number the segments between two closing events with running counts, and fold
each segment into one stall with a grouping on (stream, segment) (no new shuffle: the window's
partitioning already clusters it). The stalls are then tied to a fault window by a CASE expression
built from the run's few fault windows (no join), and aggregated per (key, fault) into `Cell`s: the
worst stall, the longest closed one, counts. Only those cells are collected (keys x faults rows).

The pure-Python twin, with the same rules, is `spark_analysis.checks.slo.stalls`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_analysis.checks.shared.txn_frames import committed_only_column, with_txn_outcome
from spark_analysis.checks.slo.stalls import Cell, Stall, open_until, read_key, write_key
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.faults import ATTRIBUTION_GRACE_S, FaultWindow
from spark_analysis.facts.transactions import COMMITTED
from spark_analysis.session.local_frame import local_frame

_STREAM = ("who", "topic", "partition")


def _name(*cols: str) -> Column:
    return F.coalesce(*(F.col(c).cast("string") for c in cols), F.lit("?"))


def _before() -> Any:
    """The rows of the stream before the current one, in (t, seq) order."""
    return Window.partitionBy(*_STREAM).orderBy("t", "seq").rowsBetween(Window.unboundedPreceding, -1)


def fault_column(windows: Sequence[FaultWindow], start: Column, until: Column) -> Column:
    """The index of the fault window a stall is tied to (`checks.slo.stalls.stall_fault`), or null."""
    branches: list[tuple[Column, int]] = []
    for i in range(len(windows) - 1, -1, -1):
        w = windows[i]
        cond = F.lit(w.start) <= start
        if w.end is not None:
            cond = cond & (start <= F.lit(w.end + ATTRIBUTION_GRACE_S))
        branches.append((cond, i))
    for i, w in enumerate(windows):
        cond = F.lit(w.start) <= until
        if w.end is not None:
            cond = cond & (F.lit(w.end) >= start)
        branches.append((cond, i))
    if not branches:
        return F.lit(None).cast("int")
    expr = F.when(branches[0][0], F.lit(branches[0][1]))
    for cond, i in branches[1:]:
        expr = expr.when(cond, F.lit(i))
    return expr


def _cells(ctx: CheckContext, stalls: DataFrame, by: tuple[str, ...], read: bool) -> list[Cell]:
    """Aggregate stall rows (who, topic, partition, start, end, until, start_seq, end_seq, events) per
    `by` + fault and collect the cells."""
    stalls = stalls.select("*", (F.col("until") - F.col("start")).alias("duration"))
    stalls = stalls.withColumn("fault", fault_column(ctx.faults.windows, F.col("start"), F.col("until")))
    order = F.struct((-F.col("duration")).alias("d"), "start", "who", "start_seq",
                     F.coalesce(F.col("end_seq"), F.lit(-1).cast("long")).alias("e"))
    payload = F.struct("who", "topic", "partition", "start", "end", "until", "start_seq", "end_seq", "events")
    rows = stalls.groupBy(*by, "fault").agg(
        F.min_by(payload, order).alias("best"),
        F.max(F.when(F.col("end").isNotNull(), F.col("duration"))).alias("closed_max"),
        F.count(F.lit(1)).alias("count"),
        F.count(F.when(F.col("end").isNull(), 1)).alias("open"),
        F.sum("events").alias("events"),
    ).collect()
    out: list[Cell] = []
    for r in rows:
        b = r["best"]
        stall = Stall(str(b["who"]), str(b["topic"]), int(b["partition"]), float(b["start"]),
                      None if b["end"] is None else float(b["end"]), float(b["until"]), int(b["start_seq"]),
                      None if b["end_seq"] is None else int(b["end_seq"]), int(b["events"]))
        key = read_key(stall.who, stall.topic, stall.partition) if read else write_key(stall.topic, stall.partition)
        out.append(Cell(key, None if r["fault"] is None else int(r["fault"]),
                        stall, None if r["closed_max"] is None else float(r["closed_max"]), int(r["count"]),
                        int(r["open"]), int(r["events"] or 0)))
    return out


def _outcomes(ctx: CheckContext) -> DataFrame:
    """Acks and send.errors with a partition, with their send time `send_t` (see `checks.slo.stalls.send_time`)."""
    lat = F.col("latency_ms")
    valid = lat.isNotNull() & ~F.isnan(lat) & (F.abs(lat) != F.lit(float("inf")))
    t = F.coalesce(F.col("t"), F.lit(0.0))
    ev = ctx.df("ack", "send.error").where(F.col("partition").isNotNull()).select(
        _name("producer", "src").alias("who"), _name("topic").alias("topic"), "partition", t.alias("t"), "seq",
        (F.col("type") == "ack").alias("is_ack"), "value",
        F.when(valid, t - F.greatest(lat, F.lit(0.0)) / 1000.0).alias("send_t"))
    if not ev.where(F.col("send_t").isNull()).limit(1).count():
        return ev
    # Histories without latency_ms: the first send of the value (never after t), else t.
    sends = (ctx.df("send").where(F.col("value").isNotNull())
             .groupBy("value").agg(F.min(F.coalesce(F.col("t"), F.lit(0.0))).alias("sent_t")))
    missing = (ev.where(F.col("send_t").isNull()).join(sends, "value", "left")
               .withColumn("send_t", F.least(F.coalesce(F.col("sent_t"), F.col("t")), F.col("t"))).drop("sent_t"))
    return ev.where(F.col("send_t").isNotNull()).unionByName(missing)


def write_cells(ctx: CheckContext) -> list[Cell]:
    """The write stalls (`checks.slo.stalls.write_stalls`) per partition and fault."""
    ev = _outcomes(ctx)
    before = _before()
    ack = F.col("is_ack")
    seg = ev.select(
        "*",
        F.coalesce(F.sum(ack.cast("int")).over(before), F.lit(0)).alias("seg"),
        F.last(F.when(ack, F.col("t")), ignorenulls=True).over(before).alias("prev_t"),
        F.last(F.when(ack, F.col("seq")), ignorenulls=True).over(before).alias("prev_seq"),
    ).groupBy(*_STREAM, "seg").agg(
        F.min("send_t").alias("min_send"),
        F.min_by("seq", F.struct("send_t", "t", "seq")).alias("min_seq"),
        F.max("prev_t").alias("prev_t"),
        F.max("prev_seq").alias("prev_seq"),
        F.max(F.when(ack, F.col("t"))).alias("end"),
        F.max(F.when(ack, F.col("seq"))).alias("end_seq"),
        F.count(F.lit(1)).alias("events"),
    )
    from_prev = F.col("prev_t").isNotNull() & (F.col("prev_t") >= F.col("min_send"))
    stalls = seg.select(
        *_STREAM,
        F.when(from_prev, F.col("prev_t")).otherwise(F.col("min_send")).alias("start"),
        "end",
        F.coalesce(F.col("end"), F.lit(float(ctx.end_t))).alias("until"),
        F.when(from_prev, F.col("prev_seq")).otherwise(F.col("min_seq")).alias("start_seq"),
        "end_seq", "events",
    )
    return _cells(ctx, stalls, ("topic", "partition"), read=False)


def read_cells(ctx: CheckContext) -> tuple[list[Cell], int]:
    """The read stalls (`checks.slo.stalls.read_stalls`) per group, partition and fault; and the number of groups."""
    spark = ctx.spark
    assert spark is not None
    polls = ctx.df("poll").where(F.col("offset").isNotNull() & F.col("partition").isNotNull()).select(
        _name("group", "src").alias("who"), _name("topic").alias("topic"), "partition",
        F.coalesce(F.col("t"), F.lit(0.0)).alias("t"), "seq", "offset", committed_only_column().alias("rc"))
    firsts = polls.groupBy("who", "topic").agg(F.min(F.struct("t", "seq")).alias("g0"), F.max("t").alias("last"),
                                               F.max(F.col("rc").cast("int")).alias("rc"))
    rows = firsts.collect()
    if not rows:
        return [], 0
    last: dict[str, float] = {}
    committed: set[str] = set()
    for r in rows:
        last[str(r["who"])] = max(last.get(str(r["who"]), float(r["last"])), float(r["last"]))
        if r["rc"]:
            committed.add(str(r["who"]))
    open_until(last, ctx.drains_behind)
    gt = local_frame(
        spark,
        [(str(r["who"]), str(r["topic"]), float(r["g0"]["t"]), int(r["g0"]["seq"]), last[str(r["who"])],
          str(r["who"]) in committed) for r in rows],
        "who string, topic string, g0_t double, g0_seq long, last double, rc boolean")
    acks = with_txn_outcome(ctx, ctx.df("ack").where(F.col("offset").isNotNull() & F.col("partition").isNotNull()))
    acks = acks.select(
        _name("topic").alias("topic"), "partition", F.coalesce(F.col("t"), F.lit(0.0)).alias("t"), "seq", "offset",
        F.lit(0).alias("kind"), "txn_outcome", "txn_end_t")
    acks = acks.join(F.broadcast(gt), "topic")
    if ctx.transactions.any:
        # A read_committed group: a committed record waits from its commit, any other transactional one never.
        outcome, rc = F.col("txn_outcome"), F.col("rc")
        acks = acks.where(~rc | outcome.isNull() | (outcome == COMMITTED)).withColumn(
            "t", F.when(rc & (outcome == COMMITTED), F.greatest(F.col("t"), F.col("txn_end_t"))).otherwise(F.col("t")))
    # kind 0: ack; 1: poll (closes a segment); 2: the same poll opening the next one, so that every
    # poll is followed by a segment (records may already wait at the last poll).
    ev = acks.drop("txn_outcome", "txn_end_t").unionByName(
        polls.drop("rc").join(F.broadcast(gt), ["who", "topic"]).select(
            "*", F.explode(F.array(F.lit(1), F.lit(2))).alias("kind")))
    w = Window.partitionBy(*_STREAM).orderBy("t", "seq", "kind")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    is_ack, closer = F.col("kind") == 0, F.col("kind") == 1
    seg = ev.select(
        "*",
        F.coalesce(F.count(F.when(closer, 1)).over(before), F.lit(0)).alias("seg"),
        F.coalesce(F.max(F.when(closer, F.col("offset") + 1)).over(before), F.lit(0)).alias("pos"),
        F.coalesce(F.max(F.when(is_ack, F.col("offset") + 1)).over(before), F.lit(0)).alias("hw"),
        F.last(F.when(closer, F.struct("t", "seq")), ignorenulls=True).over(before).alias("prev"),
    ).groupBy(*_STREAM, "seg").agg(
        F.max("pos").alias("pos"),
        F.min("hw").alias("hw"),
        F.max("prev").alias("prev"),
        F.min(F.when(is_ack & (F.col("offset") + 1 > F.col("pos")), F.struct("t", "seq"))).alias("first"),
        F.max(F.when(closer, F.struct("t", "seq"))).alias("poll"),
        F.first("g0_t").alias("g0_t"), F.first("g0_seq").alias("g0_seq"), F.first("last").alias("last"),
    )
    first_t, first_seq = F.col("first.t"), F.col("first.seq")
    from_first = F.col("first").isNotNull()
    waiting = F.col("prev").isNotNull() & (F.col("hw") > F.col("pos"))
    start = (F.when(F.col("prev").isNull() & from_first, F.greatest(first_t, F.col("g0_t")))
             .when(waiting, F.col("prev.t")).when(F.col("prev").isNotNull() & from_first, first_t))
    start_seq = (F.when(F.col("prev").isNull() & from_first,
                        F.when(first_t >= F.col("g0_t"), first_seq).otherwise(F.col("g0_seq")))
                 .when(waiting, F.col("prev.seq")).when(F.col("prev").isNotNull() & from_first, first_seq))
    stalls = seg.select(
        *_STREAM, start.alias("start"), F.col("poll.t").alias("end"),
        F.coalesce(F.col("poll.t"), F.col("last")).alias("until"), start_seq.alias("start_seq"),
        F.col("poll.seq").alias("end_seq"), F.lit(0).cast("long").alias("events"),
    ).where(F.col("start").isNotNull() & (F.col("end").isNotNull() | (F.col("start") < F.col("until"))))
    return _cells(ctx, stalls, _STREAM, read=True), len(last)
