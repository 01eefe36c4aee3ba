"""Loading a run's `history.jsonl` into Spark with one explicit, wide, nullable schema.

Owns `HISTORY_SCHEMA` (every field DESIGN.md lists for any event type, plus a few optional
extras such as `acks`), the torn-line policy (a line that is not a complete JSON object, or has
no `type`, is skipped and counted, never fatal), and the one-time conversion to Parquet that
every check then reads with column pruning (Arrow parses the bulk events, Spark the rest: see
`arrow_split`). `seq` is the event's line number in the file (file order is the writer's order,
which is the order of events within one source).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from harness.errors import HarnessError
from spark_analysis.arrow_split import CHUNK_BYTES, SEQ_FIELD, SplitStats, arrow_schema, split_history

CORRUPT = "_corrupt_record"
PARQUET_DIR = ".analysis/history.parquet"
_STAMP = "_source.json"
PARQUET_BLOCK_BYTES = 8 * 1024 * 1024
PARQUET_CODEC = "none"
CONVERSION_SPLIT_BYTES = 64 * 1024 * 1024
PARQUET_FORMAT = 6
"""Bumped whenever the Parquet layout changes, so older conversions are redone, not misread."""
BULK_TYPES = frozenset({"send", "ack", "send.error", "poll", "commit"})
"""Event types that can number millions; every other type is small."""
SMALL_TIER = "small"
CONCURRENT_WRITERS = len(BULK_TYPES) + 1
"""One open Parquet file per tier and task: no sort by the partition column."""
UNUSED_COLUMNS = ("wall", "experiment", "backend", "seed", "detail", "observer")
"""Parsed (they are in the schema) but not kept in the Parquet copy: no check reads them."""


class HistoryLoadError(HarnessError):
    """The history file is missing or unreadable as a whole."""


def _f(name: str, kind: object) -> StructField:
    return StructField(name, kind, True)  # type: ignore[arg-type]


_S, _L, _D, _B = StringType(), LongType(), DoubleType(), BooleanType()

# Strings accept any JSON value (Spark keeps the raw JSON text of numbers, objects and arrays),
# so fields whose shape varies between observers (fault ids, targets, params, members) are strings.
HISTORY_SCHEMA = StructType(
    [
        _f("t", _D),
        _f("wall", _D),
        _f("src", _S),
        _f("type", _S),
        # run.start / run.end / phase / probe
        _f("experiment", _S),
        _f("backend", _S),
        _f("seed", _L),
        _f("status", _S),
        _f("name", _S),
        _f("ok", _B),
        _f("detail", _S),
        # faults
        _f("fault_id", _S),
        _f("kind", _S),
        _f("target", _S),
        _f("params", _S),
        # brokers, controller, partitions
        _f("broker", _L),
        _f("controller", _L),
        _f("epoch", _L),
        _f("topic", _S),
        _f("partition", _L),
        _f("leader", _L),
        _f("leader_epoch", _L),
        _f("isr", ArrayType(_L)),
        _f("replicas", ArrayType(_L)),
        _f("controller_epoch", _L),
        # groups
        _f("group", _S),
        _f("state", _S),
        _f("generation", _L),
        _f("coordinator", _L),
        _f("protocol", _S),
        _f("members", ArrayType(_S)),
        _f("member", _S),
        _f("partitions", ArrayType(ArrayType(_S))),
        # produce / consume
        _f("producer", _S),
        _f("consumer", _S),
        _f("value", _L),
        _f("key", _S),
        _f("offset", _L),
        _f("acks", _S),
        _f("error", _S),
        _f("definite", _B),
        # observer errors
        _f("observer", _S),
        _f(CORRUPT, _S),
    ]
)
"""Every column a history event may carry; all nullable. Arrays: isr, replicas, members, partitions."""


PARQUET_SCHEMA = StructType(
    [f for f in HISTORY_SCHEMA.fields if f.name not in UNUSED_COLUMNS]
    + [StructField("seq", LongType(), False), StructField("tier", StringType(), True)]
)
"""The Parquet copy: the history columns minus the unused ones, plus `seq`; `tier` partitions it."""


def tiers_of(types: tuple[str, ...] | list[str]) -> list[str]:
    """The `tier` partitions events of `types` live in (each bulk type has its own; the rest share one)."""
    tiers = {t for t in types if t in BULK_TYPES}
    if any(t not in BULK_TYPES for t in types):
        tiers.add(SMALL_TIER)
    return sorted(tiers)


@dataclass(frozen=True, slots=True)
class LoadedHistory:
    """The history as a DataFrame (Parquet-backed, with `seq`) and what loading had to skip."""

    events: DataFrame
    total_lines: int
    skipped_lines: int
    parquet_path: Path
    type_counts: dict[str, int]
    end_t: float


def read_json(spark: SparkSession, path: Path, extra: list[StructField] | None = None) -> DataFrame:
    """The raw JSON read with the explicit schema (+ `extra` fields), PERMISSIVE (torn lines
    become corrupt rows)."""
    schema = StructType([*HISTORY_SCHEMA.fields, *(extra or [])])
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .json(str(path))
    )


def _stamp_of(path: Path) -> dict[str, object]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": PARQUET_FORMAT}


def convert_to_parquet(spark: SparkSession, history: Path, target: Path, *, use_arrow: bool = True,
                       chunk_bytes: int = CHUNK_BYTES) -> SplitStats:
    """Parse the JSON once and write it as Parquet with `seq` (the line number), partitioned by `tier`.

    `tier` is the event type for the types that can number millions (BULK_TYPES) and "small" for
    the rest, so collecting the small events never decodes the bulk ones and a check reading one
    bulk type (polls, commits) reads only that type's files. Arrow parses and writes the bulk
    events (`arrow_split`); Spark parses every other line (the small events, and any chunk Arrow
    refuses, e.g. one holding a torn line), with HISTORY_SCHEMA and the torn-line policy.
    `use_arrow=False` leaves every line to Spark; `chunk_bytes` is the size of Arrow's chunks.
    """
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    side = target.with_name(target.name + ".spark-lines.jsonl")
    try:
        stats = split_history(history, target, side, schema=arrow_schema(PARQUET_SCHEMA), bulk_types=BULK_TYPES,
                              use_arrow=use_arrow, chunk_bytes=chunk_bytes)
        if stats.side_lines:
            _spark_convert(spark, side, target)
    finally:
        side.unlink(missing_ok=True)
    (target / _STAMP).write_text(json.dumps(_stamp_of(history)))
    return stats


def _spark_convert(spark: SparkSession, lines: Path, target: Path) -> None:
    """Append the events of `lines` (each carrying its line number in SEQ_FIELD) to the tiers."""
    tier = F.when(F.col("type").isin(list(BULK_TYPES)), F.col("type")).otherwise(F.lit(SMALL_TIER))
    df = (read_json(spark, lines, extra=[StructField(SEQ_FIELD, LongType(), True)]).drop(*UNUSED_COLUMNS)
          .withColumn("seq", F.coalesce(F.col(SEQ_FIELD), F.lit(-1).cast("long"))).drop(SEQ_FIELD)
          .withColumn("tier", tier))
    overrides = {
        "spark.sql.maxConcurrentOutputFileWriters": str(CONCURRENT_WRITERS),
        # Large JSON splits: few tasks, so few (larger) Parquet files per tier.
        "spark.sql.files.maxPartitionBytes": str(CONVERSION_SPLIT_BYTES),
    }
    before = {key: spark.conf.get(key, None) for key in overrides}
    for key, value in overrides.items():
        spark.conf.set(key, value)
    try:
        # Small row groups keep the writers' buffers (and the driver's GC) small; no compression
        # codec: no per-column compressor buffers, and reading needs no decompression.
        (df.write.option("parquet.block.size", PARQUET_BLOCK_BYTES).option("compression", PARQUET_CODEC)
         .partitionBy("tier").mode("append").parquet(str(target)))
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def _parquet_current(history: Path, target: Path) -> bool:
    stamp = target / _STAMP
    if not stamp.is_file():
        return False
    try:
        return bool(json.loads(stamp.read_text()) == _stamp_of(history))
    except ValueError:
        return False


def load_history(spark: SparkSession, history: Path, *, parquet_dir: Path | None = None) -> LoadedHistory:
    """Load `history` (converting it to Parquet next to it once) and count the skipped lines.

    A skipped line is one that is not a complete JSON object or has no `type` (a torn last line
    after a crash). The returned DataFrame holds only complete events.
    """
    history = Path(history)
    if not history.is_file():
        raise HistoryLoadError(f"history file not found: {history}")
    target = parquet_dir or (history.parent / PARQUET_DIR)
    if parquet_dir is None and not os.access(history.parent, os.W_OK):
        # A read-only run directory (e.g. an archived run): convert into a temporary directory.
        target = Path(tempfile.mkdtemp(prefix="kafka-chaos-parquet-")) / "history.parquet"
    try:
        if not _parquet_current(history, target):
            target.parent.mkdir(parents=True, exist_ok=True)
            convert_to_parquet(spark, history, target)
        raw = spark.read.schema(PARQUET_SCHEMA).parquet(str(target))
    except OSError as exc:
        raise HistoryLoadError(f"cannot convert {history} to Parquet at {target}: {exc}") from exc
    rows = raw.groupBy("type").agg(F.count(F.lit(1)).alias("count"), F.max("t").alias("max_t")).collect()
    type_counts = {str(r["type"]): int(r["count"]) for r in rows if r["type"] is not None}
    bad = sum(int(r["count"]) for r in rows if r["type"] is None)
    events = raw.where(F.col("type").isNotNull()).drop(CORRUPT)
    return LoadedHistory(
        events=events,
        total_lines=bad + sum(type_counts.values()),
        skipped_lines=bad,
        parquet_path=target,
        type_counts=type_counts,
        end_t=max((float(r["max_t"]) for r in rows if r["max_t"] is not None), default=0.0),
    )
