"""Loading a run's `history.jsonl` into Spark with one explicit, wide, nullable schema (`spark_analysis.ingest.schema`).

Owns the damaged-line policy (a line that is not a complete JSON object, has
no `type`, or has a field of the wrong JSON type is skipped and counted, never fatal: see
`HistoryDamage`), and the one-time conversion to Parquet that every check then reads with column
pruning (the recorder's columnar copy where it still matches the history, `harness.history.columnar`; for the
rest Arrow parses the bulk events, Python or Spark the rest: see `arrow_split`). `seq` is the event's
line number in the file (file order is the writer's order, which is the order of events within
one source).

Type mismatches cost no second pass: Arrow refuses a chunk holding one (its types are strict), and
Spark, which parses every line Arrow does not take, flags the line in its corrupt-record column
while parsing; the conversion turns that flag into the `_damage` column (`<kind>:<type>`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    LongType,
    StringType,
    StructField,
    StructType,
)

from harness.errors import HarnessError
from harness.history.bulk import CHUNK_BYTES, SEQ_FIELD
from harness.history.columnar import CopiedPrefix, prefix_blocks, read_copy
from spark_analysis.ingest.arrow_split import SplitStats, split_history
from spark_analysis.ingest.schema import (
    BULK_TYPES,
    CORRUPT,
    DAMAGE,
    HISTORY_SCHEMA,
    INTEGER_TEXT,
    LOOSE_LEADER_TYPES,
    PARQUET_SCHEMA,
    SMALL_TIER,
    T_IN_TEXT,
    TYPE_IN_TEXT,
    UNUSED_COLUMNS,
)
from spark_analysis.ingest.side_rows import side_table, write_small_tier
from spark_analysis.session.spark_session import scoped_conf

PARQUET_DIR = ".analysis/history.parquet"
_STAMP = "_source.json"
PARQUET_BLOCK_BYTES = 8 * 1024 * 1024
PARQUET_CODEC = "none"
CONVERSION_SPLIT_BYTES = 64 * 1024 * 1024
PARQUET_FORMAT = 15
"""Bumped whenever the Parquet layout changes, so older conversions are redone, not misread."""
CONCURRENT_WRITERS = len(BULK_TYPES) + 1
"""One open Parquet file per tier and task: no sort by the partition column."""
MAX_LISTED_DAMAGE = 10_000
"""Damaged lines listed one by one (line, t, kind, type); beyond that only counted."""
DAMAGE_SAMPLE = 20
"""Damaged lines verdict.json shows."""
_SEQ_IN_TEXT = r'^\{"' + SEQ_FIELD + r'":([0-9]+),'


class HistoryLoadError(HarnessError):
    """The history file is missing or unreadable as a whole."""


@dataclass(frozen=True, slots=True)
class DamagedLine:
    """One skipped line: its line number (1-based; None if unknown), time (if the line tells it),
    kind (DAMAGE_KINDS), event type (`?` if unknown) and the start of its text."""

    line: int | None
    t: float | None
    kind: str
    type: str
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "t": self.t, "kind": self.kind, "type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class HistoryDamage:
    """What loading skipped: counts by kind and by event type, and the first MAX_LISTED_DAMAGE
    damaged lines in file order (`listed`; all of them unless `truncated`)."""

    total_lines: int = 0
    skipped: int = 0
    by_kind: Mapping[str, int] = field(default_factory=dict)
    by_type: Mapping[str, int] = field(default_factory=dict)
    listed: tuple[DamagedLine, ...] = ()

    @property
    def truncated(self) -> bool:
        return len(self.listed) < self.skipped

    def to_json(self) -> dict[str, Any]:
        return {"skipped_lines": self.skipped, "by_kind": dict(sorted(self.by_kind.items())),
                "by_type": dict(sorted(self.by_type.items())),
                "sample": [d.to_json() for d in self.listed[:DAMAGE_SAMPLE]]}


@dataclass(frozen=True, slots=True)
class LoadedHistory:
    """The history as a DataFrame (Parquet-backed, with `seq`) and what loading had to skip."""

    events: DataFrame
    total_lines: int
    skipped_lines: int
    parquet_path: Path
    type_counts: dict[str, int]
    end_t: float
    damage: HistoryDamage = field(default_factory=HistoryDamage)


MAX_STRING_LEN = str(2**31 - 1)
"""Jackson's limit on one string value, lifted: from Jackson 2.15 it is 20,000,000 characters, and a complete line
with a longer one (a 50 MB `observer.error` text) was read as torn (SPARK-43263; SPARK-49872 lifted it for Spark's own
event logs). A line is limited by memory, as it was before."""


def read_json(spark: SparkSession, path: Path, extra: list[StructField] | None = None,
              as_text: tuple[str, ...] = ()) -> DataFrame:
    """The raw JSON read with the explicit schema (+ `extra` fields; the `as_text` fields read as
    strings, whatever their JSON type), PERMISSIVE (torn lines become corrupt rows)."""
    fields = [StructField(f.name, StringType(), True) if f.name in as_text else f for f in HISTORY_SCHEMA.fields]
    schema = StructType([*fields, *(extra or [])])
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .option("maxStringLen", MAX_STRING_LEN)
        .json(str(path))
    )


def _stamp_of(path: Path) -> dict[str, object]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": PARQUET_FORMAT}


def convert_to_parquet(spark: SparkSession, history: Path, target: Path, *, use_arrow: bool = True,
                       chunk_bytes: int = CHUNK_BYTES, use_python: bool = True, use_copy: bool = True) -> SplitStats:
    """Parse the JSON once and write it as Parquet with `seq` (the line number), partitioned by `tier`.

    `tier` is the event type for the types that can number millions (BULK_TYPES) and "small" for
    the rest, so collecting the small events never decodes the bulk ones and a check reading one
    bulk type (polls, commits) reads only that type's files. The lines the recorder's columnar copy holds
    (`harness.history.columnar`: its Parquet parts and side lines, used when the history's bytes are still
    the ones it copied) are taken as they are; Arrow parses the bulk events of the rest (`arrow_split`). The
    other lines (the small events, and any chunk Arrow refuses, e.g. one holding a torn line) Python reads
    where its reading is exactly Spark's (`side_rows`: every line an undamaged small event, the ordinary case),
    else Spark parses them, with HISTORY_SCHEMA and the damaged-line policy. `use_copy=False` ignores the copy,
    `use_arrow=False` leaves every line it does not hold to Spark, `use_python=False` the side lines;
    `chunk_bytes` is the size of Arrow's chunks.
    """
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    side = target.with_name(target.name + ".spark-lines.jsonl")
    copied = read_copy(history) if use_copy else None
    try:
        with side.open("wb") as side_out:
            if copied is not None:
                _take_copy(copied, target, side_out)
            stats = split_history(history, target, side_out, use_arrow=use_arrow, chunk_bytes=chunk_bytes,
                                  start=copied.end if copied else 0, first_line=copied.lines if copied else 0)
        if copied is not None:
            stats = replace(stats, lines=stats.lines + copied.lines, arrow_rows=stats.arrow_rows + copied.arrow_rows,
                            side_lines=stats.side_lines + copied.side_lines,
                            refused_chunks=stats.refused_chunks + copied.refused, copied_lines=copied.lines)
        table = side_table(side) if stats.side_lines and use_python and not stats.refused_chunks else None
        if table is not None:
            write_small_tier(table, target)
            stats = replace(stats, python_rows=table.num_rows)
        elif stats.side_lines:
            _spark_convert(spark, side, target)
    finally:
        side.unlink(missing_ok=True)
    (target / _STAMP).write_text(json.dumps(_stamp_of(history)))
    return stats


def _take_copy(copied: CopiedPrefix, target: Path, side_out: BinaryIO) -> None:
    """The copy's Parquet parts into the tiers (hard links where the filesystem allows), its side lines into
    `side_out`."""
    for kind, part in copied.parts:
        folder = target / f"tier={kind}"
        folder.mkdir(exist_ok=True)
        try:
            os.link(part, folder / part.name)
        except OSError:
            shutil.copyfile(part, folder / part.name)
    for block in prefix_blocks(copied.small, copied.small_bytes):
        side_out.write(block)


def with_damage(parsed: DataFrame) -> DataFrame:
    """Spark's parse (`leader` read as text) with the damaged-line policy applied, in the same pass.

    A line Spark flags in its corrupt-record column is `torn` when nothing of it parsed and
    `ill-typed` when Spark kept a partial row (a field of the wrong JSON type); a `leader` that is
    not an integer is ill-typed too, except where it is a member id (LOOSE_LEADER_TYPES). A line
    without `type` is `untyped`. A damaged line keeps its row with a null `type` (so no check
    reads it), its kind and type in `_damage`, and the line number and `t` read from its text.
    """
    corrupt, kind, leader = F.col(CORRUPT), F.col("type"), F.col("leader")
    leader_long = F.when(leader.rlike(INTEGER_TEXT), leader.try_cast("long"))
    loose = F.coalesce(kind.isin(*LOOSE_LEADER_TYPES), F.lit(False))
    leader_bad = leader.isNotNull() & leader_long.isNull() & ~loose
    damage = (F.when(corrupt.isNotNull() & kind.isNull(), F.lit("torn"))
              .when(corrupt.isNotNull() | leader_bad, F.lit("ill-typed"))
              .when(kind.isNull(), F.lit("untyped")))
    named = F.coalesce(kind, F.nullif(F.regexp_extract(corrupt, TYPE_IN_TEXT, 1), F.lit("")), F.lit("?"))
    seq = F.coalesce(F.col(SEQ_FIELD), F.regexp_extract(corrupt, _SEQ_IN_TEXT, 1).try_cast("long"),
                     F.lit(-1).cast("long"))
    t = F.coalesce(F.col("t"), F.when(corrupt.isNotNull(), F.regexp_extract(corrupt, T_IN_TEXT, 1).try_cast("double")))
    marked = parsed.withColumns({DAMAGE: F.when(damage.isNotNull(), F.concat(damage, F.lit(":"), named)),
                                 "type": F.when(damage.isNull(), kind), "t": t, "leader": leader_long, "seq": seq})
    tier = F.when(F.col("type").isin(list(BULK_TYPES)), F.col("type")).otherwise(F.lit(SMALL_TIER))
    return marked.drop(SEQ_FIELD).withColumn("tier", tier)


def _spark_convert(spark: SparkSession, lines: Path, target: Path) -> None:
    """Append the events of `lines` (each carrying its line number in SEQ_FIELD) to the tiers."""
    parsed = read_json(spark, lines, extra=[StructField(SEQ_FIELD, LongType(), True)], as_text=("leader",))
    df = with_damage(parsed.drop(*UNUSED_COLUMNS))
    overrides = {
        "spark.sql.maxConcurrentOutputFileWriters": str(CONCURRENT_WRITERS),
        # Large JSON splits: few tasks, so few (larger) Parquet files per tier.
        "spark.sql.files.maxPartitionBytes": str(CONVERSION_SPLIT_BYTES),
    }
    with scoped_conf(spark, overrides):
        # Small row groups keep the writers' buffers (and the driver's GC) small; no compression
        # codec: no per-column compressor buffers, and reading needs no decompression.
        (df.write.option("parquet.block.size", PARQUET_BLOCK_BYTES).option("compression", PARQUET_CODEC)
         .partitionBy("tier").mode("append").parquet(str(target)))


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

    A skipped line is one that is not a complete JSON object (a torn last line after a crash), has
    no `type`, or has a field of the wrong JSON type (see `with_damage`). The returned DataFrame
    holds only complete events; `damage` says what was skipped, by kind and type, line by line.
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
    events = raw.where(F.col("type").isNotNull()).drop(CORRUPT, DAMAGE)
    total = bad + sum(type_counts.values())
    return LoadedHistory(
        events=events,
        total_lines=total,
        skipped_lines=bad,
        parquet_path=target,
        type_counts=type_counts,
        end_t=max((float(r["max_t"]) for r in rows if r["max_t"] is not None and r["type"] is not None),
                  default=0.0),
        damage=read_damage(raw, total, bad),
    )


def read_damage(raw: DataFrame, total: int, skipped: int) -> HistoryDamage:
    """The damaged lines of the Parquet copy `raw` (all in the small tier, with a null `type`);
    no Spark job at all when `skipped` is 0."""
    if not skipped:
        return HistoryDamage(total)
    rows = raw.where((F.col("tier") == SMALL_TIER) & F.col("type").isNull())
    first = rows.select("seq", "t", DAMAGE, F.substring(CORRUPT, 1, 240).alias("text")).orderBy("seq")
    listed = tuple(_damaged_line(r) for r in first.limit(MAX_LISTED_DAMAGE).collect())
    if len(listed) < skipped:
        counts = {str(r[DAMAGE] or "untyped:?"): int(r["count"]) for r in rows.groupBy(DAMAGE).count().collect()}
    else:
        counts = {}
        for d in listed:
            counts[f"{d.kind}:{d.type}"] = counts.get(f"{d.kind}:{d.type}", 0) + 1
    by_kind: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for key, n in counts.items():
        kind, _, typ = key.partition(":")
        by_kind[kind] = by_kind.get(kind, 0) + n
        by_type[typ or "?"] = by_type.get(typ or "?", 0) + n
    return HistoryDamage(total, skipped, by_kind, by_type, listed)


def _damaged_line(row: Any) -> DamagedLine:
    kind, _, typ = str(row[DAMAGE] or "untyped:?").partition(":")
    text = re.sub(r'^\{"' + SEQ_FIELD + r'":[0-9]+,', "{", str(row["text"] or ""))[:120]
    seq = row["seq"]
    return DamagedLine(line=int(seq) + 1 if seq is not None and seq >= 0 else None,
                       t=float(row["t"]) if row["t"] is not None else None, kind=kind, type=typ or "?", text=text)
