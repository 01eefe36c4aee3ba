"""The fast half of the Parquet conversion: Apache Arrow parses the bulk events, Spark (or Python) the rest.

Owns the pass over `history.jsonl` (or over the part of it the recorder's columnar copy does not cover: `start`)
in chunks of whole lines through `harness.history.bulk.BulkSplitter`, which writes the bulk tiers and sends every
other line to the side file: every small event, and every line Arrow cannot read exactly as Spark would (a torn
line, a field of an unexpected JSON type, a blank line, CRLF), in fact a whole chunk as soon as one of its lines is
such a line. Also the Arrow type of a Spark column type (`arrow_type`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
from pyspark.sql.types import ArrayType, BooleanType, DataType, DoubleType, LongType, StringType

from harness.history.bulk import BULK_SCHEMA, BULK_TYPES, CHUNK_BYTES, BulkSplitter, iter_chunks

_ARROW_TYPES: dict[type[DataType], pa.DataType] = {
    StringType: pa.string(), LongType: pa.int64(), DoubleType: pa.float64(), BooleanType: pa.bool_(),
}


def arrow_type(dt: DataType) -> pa.DataType:
    """The Arrow type of a history column's Spark type (arrays of them included)."""
    if isinstance(dt, ArrayType):
        return pa.list_(arrow_type(dt.elementType))
    try:
        return _ARROW_TYPES[type(dt)]
    except KeyError:
        raise TypeError(f"no Arrow type for {dt}") from None


@dataclass(frozen=True, slots=True)
class SplitStats:
    """What the split did: lines seen, rows Arrow wrote, lines left to the side file, chunks Arrow refused; how
    many side lines Python then read instead of Spark (`spark_analysis.ingest.side_rows`, set by the conversion); and
    how
    many lines the recorder's columnar copy already held (`copied_lines`, included in `lines`)."""

    lines: int
    arrow_rows: int
    side_lines: int
    refused_chunks: int
    python_rows: int = 0
    copied_lines: int = 0


def split_history(history: Path, target: Path, side: BinaryIO, *, schema: pa.Schema = BULK_SCHEMA,
                  bulk_types: frozenset[str] = BULK_TYPES, use_arrow: bool = True,
                  chunk_bytes: int = CHUNK_BYTES, start: int = 0, first_line: int = 0) -> SplitStats:
    """Write the bulk tiers of `history` from byte `start` on (its line `first_line`) under `target` with Arrow
    and append the rest to `side` (see module doc).

    `use_arrow=False` sends every line to the side file (Spark then parses the whole history).
    """
    with history.open("rb") as stream, BulkSplitter(target, side, schema, bulk_types=bulk_types) as splitter:
        stream.seek(start)
        first = first_line
        for chunk in iter_chunks(stream, chunk_bytes):
            first += splitter.add(first, chunk, use_arrow=use_arrow)
        return SplitStats(splitter.lines, splitter.arrow_rows, splitter.side_lines, splitter.refused)
