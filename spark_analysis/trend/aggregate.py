"""The trend's numbers, computed with Spark from many runs' `verdict.json` files.

Owns the aggregation: every verdict.json is read into one DataFrame (explicit schema, so the big
`timeline` and evidence are never parsed); a file that is not a verdict (unparsable, not one
JSON object, no valid status) leaves its run as "no verdict"; runs are joined to their verdicts;
checks and SLO samples are exploded and grouped by night (the UTC calendar date of the run's
start, "unknown" when it has none) and by check, with one rollup for the overall figures.

Definitions (the tests recompute them from the verdict files):
- a check's pass rate = pass / (pass + fail + unknown) over the runs that ran it; a result
  exempted by `verify.allow` keeps its own status and is also counted under `allowed`;
- a night's run pass rate = runs that passed / all runs of that night (no-verdict runs included;
  counted on the driver from the per-run rows Spark returns);
- durations are the SLO checks' `metrics.samples` pooled per night; p50/p90/p99 are nearest-rank
  percentiles (as `spark_analysis.checks.shared.common.percentile`), max the largest sample; `runs`
  counts the runs whose check reported a distribution (an `unknown` check reports none), and
  `runs_without_samples` those among them with no samples (verdicts written before samples
  existed): counted, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis.trend.discover import RunEntry

SLO_CHECKS = ("slo.controller_failover", "slo.partition_unavailable", "slo.write_unavailable", "slo.read_unavailable",
              "slo.rebalance")
STATUSES = ("pass", "fail", "unknown")
NO_VERDICT = "no verdict"
UNKNOWN_NIGHT = "unknown"
PERCENTILES = (50, 90, 99)
CORRUPT = "_corrupt_record"

_S, _L, _D, _B = T.StringType(), T.LongType(), T.DoubleType(), T.BooleanType()


def _struct(**fields: T.DataType) -> T.StructType:
    return T.StructType([T.StructField(name, kind) for name, kind in fields.items()])


VERDICT_SCHEMA = _struct(
    status=_S,
    run=_struct(title=_S, experiment=_S, seed=_L, backend=_S, started=_S,
                broker=_struct(flavour=_S, version=_S, bugs=T.ArrayType(_S)),
                versions=T.MapType(_S, _S)),
    checks=T.ArrayType(_struct(
        id=_S, status=_S, allowed=_B, summary=_S, fault=_S,
        metrics=_struct(samples=T.ArrayType(_D), open_at_end=_L,
                        distribution=_struct(count=_L, p50=_D, p90=_D, p99=_D, max=_D)),
    )),
    **{CORRUPT: _S},
)
"""The parts of verdict.json the trend reads (see spark_analysis.verdict / result for the writers)."""

RUNS_SCHEMA = _struct(run_id=_S, started=_S, experiment=_S, seed=_L, backend=_S, title=_S, flavour=_S,
                      version=_S, bugs=T.ArrayType(_S), versions=T.MapType(_S, _S))


@dataclass(frozen=True, slots=True)
class Aggregates:
    """What Spark computed, as plain Python values (small: O(runs + nights x checks))."""

    runs: list[dict[str, Any]]
    """Per run: run_id, night, status (pass/fail/unknown/no verdict), experiment, seed, backend, title,
    flavour, version, bugs, versions, not_passing ([{id, status, summary, fault}] not allowed)."""
    nights: list[dict[str, Any]]
    """Per night (sorted): night, runs, pass, fail, unknown, no_verdict, pass_rate."""
    checks: dict[str, dict[str, Any]]
    """check id -> {"overall": counts, "nights": {night: counts}}; counts: pass, fail, unknown, allowed,
    total, pass_rate."""
    durations: dict[str, dict[str, Any]]
    """SLO check id -> {"overall": dist, "nights": {night: dist}}; dist: count, p50, p90, p99, max, runs,
    runs_without_samples, open_at_end."""


def _to_path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path) if parsed.scheme in ("file", "") else uri).resolve()


def _glob_escape(path: Path) -> str:
    """Hadoop reads paths as glob patterns: escape its metacharacters so a path means only itself."""
    return "".join("\\" + ch if ch in "*?[]{}\\" else ch for ch in str(path))


def _read_verdicts(spark: SparkSession, entries: Sequence[RunEntry]) -> tuple[DataFrame, DataFrame | None]:
    """The readable verdicts (run_id + the verdict's columns, one row per run) and the cached raw read.

    A file counts only when it parsed as exactly one JSON object with a valid status; Spark names
    files by URI, which the driver maps back to run ids (one small row per file).
    """
    with_file = {str(e.verdict_path.resolve()): e.run_id for e in entries if e.has_verdict_file}
    if not with_file:
        fields = [f for f in VERDICT_SCHEMA.fields if f.name != CORRUPT]
        return spark.createDataFrame([], T.StructType([*fields, T.StructField("run_id", _S)])), None
    raw = (spark.read.schema(VERDICT_SCHEMA).option("multiLine", True).option("mode", "PERMISSIVE")
           .option("columnNameOfCorruptRecord", CORRUPT)
           .json([_glob_escape(Path(p)) for p in with_file])
           .select("*", F.col("_metadata.file_path").alias("file"))
           .cache())
    good = (F.col(CORRUPT).isNull() & F.col("status").isin(*STATUSES)).cast("int")
    per_file = raw.groupBy("file").agg(F.count("*").alias("rows"), F.sum(good).alias("good")).collect()
    readable = [(r["file"], with_file.get(str(_to_path(r["file"])))) for r in per_file
                if r["rows"] == 1 and r["good"] == 1]
    ids = spark.createDataFrame([(f, rid) for f, rid in readable if rid is not None], "file string, run_id string")
    return raw.join(F.broadcast(ids), "file").drop("file", CORRUPT), raw


def _runs_frame(spark: SparkSession, entries: Sequence[RunEntry]) -> DataFrame:
    rows = [(e.run_id, e.info.started, e.info.experiment, e.info.seed, e.info.backend,
             e.info.title if e.run_json_problem is None else None, e.info.flavour, e.info.version,
             list(e.info.bugs), dict(e.info.versions) or None) for e in entries]
    return spark.createDataFrame(rows, RUNS_SCHEMA)


def _night(started: Column) -> Column:
    """The UTC calendar date of an ISO-8601 start time, whatever the session time zone.

    A start time without an offset is read in the session time zone (UTC under `get_session`);
    an unparsable or missing one gives the night "unknown".
    """
    seconds = F.try_to_timestamp(started).cast("long")
    day = F.date_from_unix_date(F.floor(seconds / 86400).cast("int")).cast("string")
    return F.coalesce(day, F.lit(UNKNOWN_NIGHT))


def _count(cond: Column) -> Column:
    return F.sum(F.when(cond, 1).otherwise(0))


def _rate(num: Any, den: Any) -> float | None:
    return round(num / den, 4) if den else None


def _joined(spark: SparkSession, entries: Sequence[RunEntry]) -> tuple[DataFrame, DataFrame | None]:
    verdicts, raw = _read_verdicts(spark, entries)
    v = F.broadcast(verdicts).alias("v")
    r = _runs_frame(spark, entries).alias("r")
    pick = lambda name: F.coalesce(F.col(f"v.run.{name}"), F.col(f"r.{name}")).alias(name)  # noqa: E731
    return r.join(v, "run_id", "left").select(
        "run_id",
        _night(F.coalesce(F.col("v.run.started"), F.col("r.started"))).alias("night"),
        F.coalesce(F.col("v.status"), F.lit(NO_VERDICT)).alias("status"),
        pick("experiment"), pick("seed"), pick("backend"), pick("title"),
        F.coalesce(F.col("v.run.broker.flavour"), F.col("r.flavour")).alias("flavour"),
        F.coalesce(F.col("v.run.broker.version"), F.col("r.version")).alias("version"),
        F.coalesce(F.col("v.run.broker.bugs"), F.col("r.bugs")).alias("bugs"),
        F.coalesce(F.col("r.versions"), F.col("v.run.versions")).alias("versions"),
        F.col("v.checks").alias("checks"),
    ), raw


def _check_counts(checks: DataFrame) -> dict[str, dict[str, Any]]:
    grouped = checks.rollup("check", "night").agg(
        *(_count(F.col("cstatus") == s).alias(s) for s in STATUSES),
        _count(F.col("allowed") & (F.col("cstatus") != "pass")).alias("allowed"),
        F.count("*").alias("total"),
        F.grouping("night").alias("g_night"),
    ).where(F.col("check").isNotNull())
    out: dict[str, dict[str, Any]] = {}
    for row in grouped.collect():
        counts: dict[str, Any] = {k: int(row[k]) for k in (*STATUSES, "allowed", "total")}
        counts["pass_rate"] = _rate(counts["pass"], counts["total"])
        entry = out.setdefault(row["check"], {"overall": {}, "nights": {}})
        if row["g_night"]:
            entry["overall"] = counts
        else:
            entry["nights"][row["night"]] = counts
    for entry in out.values():
        entry["nights"] = dict(sorted(entry["nights"].items()))
    return dict(sorted(out.items()))


def _nth(sorted_values: Column, q: int) -> Column:
    """Nearest-rank percentile of a sorted array column (same arithmetic as checks.shared.common.percentile)."""
    rank = F.greatest(F.lit(1), F.ceil(F.lit(q / 100.0) * F.size(sorted_values))).cast("int")
    return F.when(F.size(sorted_values) > 0, F.element_at(sorted_values, rank))


def _durations(checks: DataFrame) -> dict[str, dict[str, Any]]:
    slo = checks.where(F.col("check").isin(*SLO_CHECKS) & F.col("distribution").isNotNull()).select(
        "check", "night", F.coalesce(F.col("samples"), F.array().cast("array<double>")).alias("samples"),
        F.col("samples").isNull().alias("no_samples"), F.coalesce(F.col("open_at_end"), F.lit(0)).alias("open"))
    grouped = (slo.rollup("check", "night")
               .agg(F.sort_array(F.flatten(F.collect_list("samples"))).alias("vs"),
                    F.count("*").alias("runs"), _count(F.col("no_samples")).alias("runs_without_samples"),
                    F.sum("open").alias("open_at_end"), F.grouping("night").alias("g_night"))
               .where(F.col("check").isNotNull())
               .select("check", "night", "runs", "runs_without_samples", "open_at_end", "g_night",
                       F.size("vs").alias("count"), *(_nth(F.col("vs"), q).alias(f"p{q}") for q in PERCENTILES),
                       F.array_max("vs").alias("max")))
    out: dict[str, dict[str, Any]] = {c: {"overall": {}, "nights": {}} for c in SLO_CHECKS}
    for row in grouped.collect():
        dist = {k: row[k] for k in ("count", "p50", "p90", "p99", "max", "runs", "runs_without_samples",
                                    "open_at_end")}
        dist["open_at_end"] = int(dist["open_at_end"] or 0)
        if row["g_night"]:
            out[row["check"]]["overall"] = dist
        else:
            out[row["check"]]["nights"][row["night"]] = dist
    for entry in out.values():
        entry["nights"] = dict(sorted(entry["nights"].items()))
    return out


def _nights(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        night = out.setdefault(run["night"], {"night": run["night"], "runs": 0, **dict.fromkeys(STATUSES, 0),
                                              "no_verdict": 0})
        night["runs"] += 1
        night["no_verdict" if run["status"] == NO_VERDICT else run["status"]] += 1
    for night in out.values():
        night["pass_rate"] = _rate(night["pass"], night["runs"])
    return [out[k] for k in sorted(out)]


def aggregate(spark: SparkSession, entries: Sequence[RunEntry]) -> Aggregates:
    """Read every entry's verdict.json with Spark and compute the trend's numbers."""
    joined, raw = _joined(spark, entries)
    runs = joined.cache()
    checks = runs.where(F.col("checks").isNotNull()).select(
        "run_id", "night", F.explode("checks").alias("c")).select(
        "run_id", "night", F.col("c.id").alias("check"), F.col("c.status").alias("cstatus"),
        F.coalesce(F.col("c.allowed"), F.lit(False)).alias("allowed"), F.col("c.summary").alias("summary"),
        F.col("c.fault").alias("fault"), F.col("c.metrics.samples").alias("samples"),
        F.col("c.metrics.open_at_end").alias("open_at_end"),
        F.col("c.metrics.distribution").alias("distribution")).cache()
    try:
        check_counts = _check_counts(checks)
        durations = _durations(checks)
        not_passing = (checks.where((F.col("cstatus") != "pass") & ~F.col("allowed"))
                       .groupBy("run_id")
                       .agg(F.sort_array(F.collect_list(F.struct(
                           F.col("check").alias("id"), F.col("cstatus").alias("status"), "summary", "fault")))
                           .alias("not_passing")))
        run_rows = [r.asDict(recursive=True) for r in
                    runs.drop("checks").join(not_passing, "run_id", "left").orderBy("night", "run_id").collect()]
    finally:
        for frame in (checks, runs, raw):
            if frame is not None:
                frame.unpersist()
    for run in run_rows:
        run["not_passing"] = run.get("not_passing") or []
        run["bugs"] = list(run.get("bugs") or [])
        run["versions"] = dict(run.get("versions") or {})
    return Aggregates(runs=run_rows, nights=_nights(run_rows), checks=check_counts, durations=durations)
