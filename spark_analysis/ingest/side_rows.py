"""The small events' half of the Parquet conversion, read in Python wherever that is exactly Spark's reading.

Owns `side_table`: the side file's lines (every small event, each carrying its line number in SEQ_FIELD:
`arrow_split`) as the rows Spark's parse plus `load.with_damage` write into the small tier, or None as soon as
one line is one whose Spark reading this module does not reproduce to the byte; the conversion then has Spark
parse the whole file, as before. Python takes a file only when every line is:
- one complete JSON object, starting with its SEQ_FIELD, with no duplicate key at any depth, in the form
  `json.dumps(..., separators=(",", ":"))` writes (the recorder's, `harness.history.jsonl`): a string column
  keeps a number's, object's or array's JSON text exactly as it stands in the line (SPARK-48148, Spark 4.0),
  and Python renders that text identically only for a line in that form;
- undamaged (`json_read.damage_kind`: no torn, untyped or ill-typed line: those keep Spark's damage policy);
- a small event (a bulk line only reaches the side file in a chunk Arrow refused);
- without a double column given as a word (`NaN`), or a key that differs from a column's name only by case.

Why: the side file holds tens to hundreds of lines in an ordinary run, and a Spark job that parses them and
writes a partitioned Parquet copy cost about 3.5 s on a cold JVM (its first JSON parse and Parquet write) and
0.3 s on a warm one. Python does it in milliseconds. A test compares both readings column by column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import DoubleType, StructType

from harness.history.bulk import SEQ_FIELD
from spark_analysis.ingest.arrow_split import arrow_type
from spark_analysis.ingest.json_read import LEADER_TEXT, READ_TYPES, as_read, damage_kind, json_text
from spark_analysis.ingest.schema import BULK_TYPES, CORRUPT, PARQUET_SCHEMA, SMALL_TIER

SIDE_FILE_NAME = "part-python.parquet"
_PREFIX = '{"' + SEQ_FIELD + '":'
_LOWER = {name.lower(): name for name in [*READ_TYPES, CORRUPT]}
"""The columns Spark's parse fills, by lower-case name (other keys it ignores)."""


class _NotExact(Exception):
    """The line is one whose Spark reading this module does not reproduce."""


def arrow_side_schema(columns: StructType = PARQUET_SCHEMA) -> pa.Schema:
    """The small tier's Parquet columns (the Parquet copy's, without the `tier` partition column)."""
    return pa.schema([pa.field(f.name, arrow_type(f.dataType), nullable=f.name != "seq")
                      for f in columns.fields if f.name != "tier"])


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _NotExact("a duplicate key")
    return out


def _leader(value: Any, ascii_only: bool) -> int | None:
    """`leader` read as text, then as a long where it is an integer's digits (`load.with_damage`)."""
    if value is None:
        return None
    text = json_text(value, ascii_only)
    return int(text) if LEADER_TEXT.fullmatch(text) else None


def _row(line: str) -> dict[str, Any]:
    if not line.startswith(_PREFIX):
        raise _NotExact("no line number first")
    try:
        ev = json.loads(line, object_pairs_hook=_no_duplicates)
    except ValueError as exc:  # also a torn line: Spark's policy decides it
        raise _NotExact(str(exc)) from exc
    ascii_only = line == json_text(ev, True)
    if not ascii_only and line != json_text(ev, False):
        raise _NotExact("not in the recorder's compact form")
    seq = ev.pop(SEQ_FIELD, None) if isinstance(ev, dict) else None
    if type(seq) is not int or damage_kind(ev) is not None or ev["type"] in BULK_TYPES:
        raise _NotExact("damaged, or a bulk event")
    row: dict[str, Any] = {"seq": seq}
    for key, value in ev.items():
        name = _LOWER.get(key.lower())
        if name is None:
            continue  # a field outside the schema: Spark drops it too
        if name != key or name == CORRUPT:
            raise _NotExact(f"key {key!r}: a column's name in another case, or the corrupt-record column")
        if isinstance(READ_TYPES[key], DoubleType) and isinstance(value, str):
            raise _NotExact("a double given as a word")
        row[key] = _leader(value, ascii_only) if key == "leader" else as_read(value, READ_TYPES[key], ascii_only)
    return row


def side_table(side: Path) -> pa.Table | None:
    """The side file's events as the small tier's rows, or None where Spark must read the file (module doc)."""
    rows: list[dict[str, Any]] = []
    with side.open("r", encoding="utf-8", errors="strict", newline="\n") as fh:
        try:
            for line in fh:
                rows.append(_row(line.removesuffix("\n")))
        except (_NotExact, UnicodeDecodeError):
            return None
    return pa.Table.from_pylist(rows, schema=arrow_side_schema())


def write_small_tier(table: pa.Table, target: Path) -> None:
    """Write `table` as the Parquet copy's small tier under `target` (as Spark's partitioned write names it)."""
    folder = target / f"tier={SMALL_TIER}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / SIDE_FILE_NAME, compression="none")
