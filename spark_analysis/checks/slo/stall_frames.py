"""The client-side stalls of `slo.stall` computed in Spark: only small results reach the driver.

Both computations run window functions partitioned by (producer or group, topic, partition) and
ordered by (t, seq), number the segments between two closing events with running counts, and fold
each segment into one stall with a grouping on (stream, segment) (no new shuffle: the window's
partitioning already clusters it). The stalls are then tied to a fault window by a CASE expression
built from the run's few fault windows (no join), and aggregated per (key, fault) into `Cell`s: the
worst stall, the longest closed one, counts. Only those cells are collected (keys x faults rows).

The plans are SQL text (`spark.sql` over the frames), one JVM call per query where the DataFrame API
took one per column expression (issue 39: a warm verify spent about 1,650 py4j calls here).

The pure-Python twin, with the same rules, is `spark_analysis.checks.slo.stalls`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_analysis.checks.shared.txn_frames import COMMITTED_ONLY, with_txn_outcome
from spark_analysis.checks.slo.stalls import Cell, Stall, open_until, read_key, write_key
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.faults import ATTRIBUTION_GRACE_S, FaultWindow
from spark_analysis.facts.transactions import COMMITTED
from spark_analysis.session.local_frame import local_frame
from spark_analysis.session.sql_text import double

_STREAM = "who, topic, `partition`"
_BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
"""The rows of the stream before the current one."""


def _name(*cols: str) -> str:
    return "coalesce(" + ", ".join(f"CAST(`{c}` AS STRING)" for c in cols) + ", '?')"


def _spark(ctx: CheckContext) -> SparkSession:
    assert ctx.spark is not None
    return ctx.spark


def fault_case(windows: Sequence[FaultWindow], start: str, until: str) -> str:
    """The index of the fault window a stall is tied to (`checks.slo.stalls.stall_fault`, whose rule this is as
    Spark SQL), or null: an expression over the columns `start` and `until`."""
    if not windows:
        return "CAST(NULL AS INT)"
    in_force = [f"WHEN {double(w.start)} <= {start}"
                + (f" AND {start} <= {double(w.end)}" if w.end is not None else "") + f" THEN {i}"
                for i, w in reversed(list(enumerate(windows)))]
    gaps = []
    for i, w in enumerate(windows):
        after = (f" WHEN {start} > {double(w.end)} THEN {start} - {double(w.end)}" if w.end is not None else "")
        gaps.append(f"named_struct('d', CASE WHEN {start} < {double(w.start)} AND {double(w.start)} <= {until} "
                    f"THEN {double(w.start)} - {start}{after} END, 'i', {i})")
    nearest = (f"array_min(filter(array({', '.join(gaps)}), "
               f"x -> x.d IS NOT NULL AND x.d <= {double(ATTRIBUTION_GRACE_S)})).i")  # (d, i): nearest, then first
    overlapping = [f"WHEN {double(w.start)} <= {until}" + (f" AND {double(w.end)} >= {start}" if w.end is not None
                                                           else "") + f" THEN {i}" for i, w in enumerate(windows)]
    return f"CASE {' '.join(in_force)} ELSE coalesce({nearest}, CASE {' '.join(overlapping)} END) END"


def _cells(ctx: CheckContext, stalls: DataFrame, by: str, read: bool) -> list[Cell]:
    """Aggregate stall rows (who, topic, partition, start, end, until, start_seq, end_seq, events) per
    `by` + fault and collect the cells."""
    fault = fault_case(ctx.faults.windows, "start", "until")
    rows = _spark(ctx).sql(f"""
        SELECT {by}, fault,
          min_by(named_struct('who', who, 'topic', topic, 'partition', `partition`, 'start', start, 'end', `end`,
                              'until', until, 'start_seq', start_seq, 'end_seq', end_seq, 'events', events),
                 named_struct('d', -duration, 's', start, 'w', who, 'q', start_seq,
                              'e', coalesce(end_seq, CAST(-1 AS BIGINT)))) AS best,
          max(CASE WHEN `end` IS NOT NULL THEN duration END) AS closed_max,
          count(1) AS `count`,
          count(CASE WHEN `end` IS NULL THEN 1 END) AS `open`,
          sum(events) AS events
        FROM (SELECT *, until - start AS duration, {fault} AS fault FROM {{stalls}})
        GROUP BY {by}, fault""", stalls=stalls).collect()
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
    ev = _spark(ctx).sql(f"""
        SELECT {_name("producer", "src")} AS who, {_name("topic")} AS topic, `partition`, coalesce(t, 0.0D) AS t,
          seq, `type` = 'ack' AS is_ack, value,
          CASE WHEN latency_ms IS NOT NULL AND NOT isnan(latency_ms) AND abs(latency_ms) != {double(float("inf"))}
               THEN coalesce(t, 0.0D) - greatest(latency_ms, 0.0D) / 1000.0D END AS send_t
        FROM {{ev}} WHERE `partition` IS NOT NULL""", ev=ctx.df("ack", "send.error"))
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
    stalls = _spark(ctx).sql(f"""
        WITH seg AS (
          SELECT *,
            coalesce(sum(CAST(is_ack AS INT)) OVER b, 0) AS seg,
            last(CASE WHEN is_ack THEN t END, true) OVER b AS prev_t_r,
            last(CASE WHEN is_ack THEN seq END, true) OVER b AS prev_seq_r
          FROM {{ev}}
          WINDOW b AS (PARTITION BY {_STREAM} ORDER BY t, seq {_BEFORE})
        ), agg AS (
          SELECT {_STREAM}, seg,
            min(send_t) AS min_send,
            min_by(seq, named_struct('send_t', send_t, 't', t, 'seq', seq)) AS min_seq,
            max(prev_t_r) AS prev_t,
            max(prev_seq_r) AS prev_seq,
            max(CASE WHEN is_ack THEN t END) AS `end`,
            max(CASE WHEN is_ack THEN seq END) AS end_seq,
            count(1) AS events
          FROM seg GROUP BY {_STREAM}, seg
        )
        SELECT {_STREAM},
          CASE WHEN prev_t IS NOT NULL AND prev_t >= min_send THEN prev_t ELSE min_send END AS start,
          `end`,
          coalesce(`end`, {double(ctx.end_t)}) AS until,
          CASE WHEN prev_t IS NOT NULL AND prev_t >= min_send THEN prev_seq ELSE min_seq END AS start_seq,
          end_seq, events
        FROM agg""", ev=_outcomes(ctx))
    return _cells(ctx, stalls, "topic, `partition`", read=False)


def read_cells(ctx: CheckContext) -> tuple[list[Cell], int]:
    """The read stalls (`checks.slo.stalls.read_stalls`) per group, partition and fault; and the number of groups."""
    spark = _spark(ctx)
    polls = spark.sql(f"""
        SELECT {_name("group", "src")} AS who, {_name("topic")} AS topic, `partition`, coalesce(t, 0.0D) AS t, seq,
          `offset`, {COMMITTED_ONLY} AS rc
        FROM {{poll}} WHERE `offset` IS NOT NULL AND `partition` IS NOT NULL""", poll=ctx.df("poll"))
    rows = spark.sql("""
        SELECT who, topic, min(named_struct('t', t, 'seq', seq)) AS g0, max(t) AS `last`,
          max(CAST(rc AS INT)) AS rc
        FROM {polls} GROUP BY who, topic""", polls=polls).collect()
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
    # A read_committed group: a committed record waits from its commit, any other transactional one never.
    kept, ack_t = "true", "a.t"
    if ctx.transactions.any:
        kept = f"(NOT g.rc OR a.txn_outcome IS NULL OR a.txn_outcome = '{COMMITTED}')"
        ack_t = f"CASE WHEN g.rc AND a.txn_outcome = '{COMMITTED}' THEN greatest(a.t, a.txn_end_t) ELSE a.t END"
    # kind 0: ack; 1: poll (closes a segment); 2: the same poll opening the next one, so that every
    # poll is followed by a segment (records may already wait at the last poll).
    stalls = spark.sql(f"""
        WITH a AS (
          SELECT {_name("topic")} AS topic, `partition`, coalesce(t, 0.0D) AS t, seq, `offset`, txn_outcome, txn_end_t
          FROM {{acks}}
        ), ev AS (
          SELECT /*+ BROADCAST(g) */ g.who, a.topic, a.`partition`, {ack_t} AS t, a.seq, a.`offset`, 0 AS kind,
            g.g0_t, g.g0_seq, g.`last`
          FROM a JOIN {{gt}} g ON a.topic = g.topic WHERE {kept}
          UNION ALL
          SELECT /*+ BROADCAST(g) */ p.who, p.topic, p.`partition`, p.t, p.seq, p.`offset`, k AS kind,
            g.g0_t, g.g0_seq, g.`last`
          FROM {{polls}} p JOIN {{gt}} g ON p.who = g.who AND p.topic = g.topic
          LATERAL VIEW explode(array(1, 2)) x AS k
        ), seg AS (
          SELECT *,
            coalesce(count(CASE WHEN kind = 1 THEN 1 END) OVER b, 0) AS seg,
            coalesce(max(CASE WHEN kind = 1 THEN `offset` + 1 END) OVER b, 0) AS pos_r,
            coalesce(max(CASE WHEN kind = 0 THEN `offset` + 1 END) OVER b, 0) AS hw_r,
            last(CASE WHEN kind = 1 THEN named_struct('t', t, 'seq', seq) END, true) OVER b AS prev_r
          FROM ev
          WINDOW b AS (PARTITION BY {_STREAM} ORDER BY t, seq, kind {_BEFORE})
        ), agg AS (
          SELECT {_STREAM}, seg,
            max(pos_r) AS pos, min(hw_r) AS hw, max(prev_r) AS prev,
            min(CASE WHEN kind = 0 AND `offset` + 1 > pos_r THEN named_struct('t', t, 'seq', seq) END) AS first_ack,
            max(CASE WHEN kind = 1 THEN named_struct('t', t, 'seq', seq) END) AS poll,
            first(g0_t) AS g0_t, first(g0_seq) AS g0_seq, first(`last`) AS last_t
          FROM seg GROUP BY {_STREAM}, seg
        ), stalls AS (
          SELECT {_STREAM},
            CASE WHEN prev IS NULL AND first_ack IS NOT NULL THEN greatest(first_ack.t, g0_t)
                 WHEN prev IS NOT NULL AND hw > pos THEN prev.t
                 WHEN prev IS NOT NULL AND first_ack IS NOT NULL THEN first_ack.t END AS start,
            poll.t AS `end`,
            coalesce(poll.t, last_t) AS until,
            CASE WHEN prev IS NULL AND first_ack IS NOT NULL
                   THEN CASE WHEN first_ack.t >= g0_t THEN first_ack.seq ELSE g0_seq END
                 WHEN prev IS NOT NULL AND hw > pos THEN prev.seq
                 WHEN prev IS NOT NULL AND first_ack IS NOT NULL THEN first_ack.seq END AS start_seq,
            poll.seq AS end_seq, CAST(0 AS BIGINT) AS events
          FROM agg
        )
        SELECT * FROM stalls WHERE start IS NOT NULL AND (`end` IS NOT NULL OR start < until)""",
                       acks=acks, gt=gt, polls=polls)
    return _cells(ctx, stalls, _STREAM, read=True), len(last)

