"""The fast half of the Parquet conversion: Apache Arrow parses the bulk events, Spark the rest.

Owns the split of `history.jsonl` into chunks of whole lines; Arrow's parse of each chunk with
the columns bulk events carry (`ARROW_COLUMNS`); the Parquet writers of the bulk tiers; and the
side file of lines Spark parses instead: every small event, every line Arrow cannot read exactly
as Spark would (a torn line, a field of an unexpected JSON type, a blank line, CRLF), in fact a
whole chunk as soon as one of its lines is such a line. Each line the side file gets carries its
line number (`SEQ_FIELD`, injected as the object's first field), so `seq` is the line number
whichever parser read the line. Spark therefore still decides every line Arrow does not take,
with the same schema and the same damaged-line policy (torn, untyped and ill-typed lines are
skipped and counted: `load.with_damage`); Arrow, whose types are strict, only takes chunks in which
every line is one complete JSON object that matches the bulk columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq
from pyspark.sql.types import ArrayType, BooleanType, DataType, DoubleType, LongType, StringType, StructType

_NL, _OPEN, _CLOSE = ord("\n"), ord("{"), ord("}")
SEQ_FIELD = "_kafka_chaos_seq"
"""Injected into each side-file line: the line's number in history.jsonl (0-based)."""
CHUNK_BYTES = 16 * 1024 * 1024
ARROW_COLUMNS = (
    "t", "src", "type", "producer", "consumer", "group", "member", "generation", "topic", "partition",
    "offset", "value", "key", "acks", "error", "definite",
)
"""The columns bulk events (send, ack, send.error, poll, commit) carry (DESIGN.md's history table); the few more
Arrow parses are `spark_analysis.schema.BULK_EXTRA_COLUMNS` (latency_ms, txn, isolation, zombie, input_value)."""

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


def arrow_schema(parquet_schema: StructType) -> pa.Schema:
    """`ARROW_COLUMNS` with the Arrow types of their Spark types in `parquet_schema`."""
    by_name = {f.name: f.dataType for f in parquet_schema.fields}
    return pa.schema([(name, arrow_type(by_name[name])) for name in ARROW_COLUMNS])


@dataclass(frozen=True, slots=True)
class SplitStats:
    """What the split did: lines seen, rows Arrow wrote, lines left to the side file, chunks Arrow refused; and
    how many side lines Python then read instead of Spark (`spark_analysis.side_rows`, set by the conversion)."""

    lines: int
    arrow_rows: int
    side_lines: int
    refused_chunks: int
    python_rows: int = 0


def iter_chunks(stream: BinaryIO, size: int) -> Iterator[bytes]:
    """Chunks of about `size` bytes of whole lines; only the last may lack its newline."""
    rest = b""
    while True:
        block = stream.read(size)
        if not block:
            if rest:
                yield rest
            return
        data = rest + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            rest = data
            continue
        yield data[:cut]
        rest = data[cut:]


def newlines_of(chunk: bytes) -> np.ndarray:
    """Positions of the chunk's newline bytes."""
    return np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == _NL)


def one_object_per_line(chunk: bytes, newlines: np.ndarray, rows: int) -> bool:
    """Whether Arrow's `rows` rows are the chunk's lines one for one.

    True when every line starts with `{` and ends with `}` (so no line is blank, ends in CR or
    holds part of an object: a `{` right after a complete value is not JSON) and there are as many
    rows as lines (so no line holds two objects either).
    """
    ends_with_newline = chunk.endswith(b"\n")
    if not chunk or rows != len(newlines) + (0 if ends_with_newline else 1):
        return False
    data = np.frombuffer(chunk, dtype=np.uint8)
    line_starts = newlines[:-1] + 1 if ends_with_newline else newlines + 1
    return bool(data[0] == _OPEN and data[-2 if ends_with_newline else -1] == _CLOSE
                and (data[line_starts] == _OPEN).all() and (data[newlines - 1] == _CLOSE).all())


def with_seq(line: bytes, seq: int) -> bytes:
    """`line` with `SEQ_FIELD` injected as its first field (unchanged if it is not `{"...`)."""
    body = line.lstrip()
    if body.startswith(b"{") and body[1:].lstrip().startswith(b'"'):
        return b'{"%s":%d,' % (SEQ_FIELD.encode(), seq) + body[1:]
    return line


class BulkSplitter:
    """Writes the bulk tiers (`<target>/tier=<type>/part-arrow.parquet`) and the side file.

    A context manager: leaving it closes every writer, also after an error.
    """

    def __init__(self, target: Path, side: Path, schema: pa.Schema, bulk_types: frozenset[str]) -> None:
        self._target, self._bulk = target, sorted(bulk_types)
        self._options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        self._out_schema = schema.append(pa.field("seq", pa.int64(), nullable=False))
        self._writers: dict[str, pq.ParquetWriter] = {}
        # Dictionaries pay for the repetitive strings only (numbers are mostly distinct).
        self._dictionary = [f.name for f in schema if f.type == pa.string()]
        self._side = side.open("wb")
        self.lines = self.arrow_rows = self.side_lines = self.refused = 0

    def __enter__(self) -> BulkSplitter:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close every writer and the side file, then raise one OSError naming all that failed."""
        failures: list[str] = []
        for name, closable in [*self._writers.items(), ("side file", self._side)]:
            try:
                closable.close()
            except Exception as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
        self._writers.clear()
        if failures:
            raise OSError(f"closing the conversion's files under {self._target} failed: " + "; ".join(failures))

    def stats(self) -> SplitStats:
        return SplitStats(self.lines, self.arrow_rows, self.side_lines, self.refused)

    def add(self, first: int, chunk: bytes, *, use_arrow: bool = True) -> int:
        """Route one chunk (its first line is line `first`): its bulk rows to the tiers, every
        other line to the side file. Returns its number of lines."""
        newlines = newlines_of(chunk)
        n = len(newlines) + (0 if chunk.endswith(b"\n") else 1)
        self.lines += n
        table = self._parse(chunk) if use_arrow else None
        if table is None or not one_object_per_line(chunk, newlines, table.num_rows):
            self.refused += int(use_arrow)
            self._to_side(first, chunk.split(b"\n")[:n], range(n))
            return n
        table = table.append_column(self._out_schema.field("seq"), pa.array(range(first, first + n), pa.int64()))
        kinds = table.column("type")
        for kind in self._bulk:
            part = table.filter(pc.equal(kinds, kind))
            if part.num_rows:
                self._writer(kind).write_table(part)
                self.arrow_rows += part.num_rows
        small = pc.indices_nonzero(pc.invert(pc.fill_null(pc.is_in(kinds, pa.array(self._bulk)), False)))
        if len(small):
            lines = chunk.split(b"\n")
            idx = small.to_pylist()
            self._to_side(first, [lines[i] for i in idx], idx)
        return n

    def _parse(self, chunk: bytes) -> pa.Table | None:
        try:
            return pj.read_json(pa.BufferReader(chunk), parse_options=self._options)
        except pa.ArrowInvalid:
            return None

    def _to_side(self, first: int, lines: list[bytes], numbers: range | list[int]) -> None:
        self._side.write(b"".join(with_seq(line, first + i) + b"\n" for line, i in zip(lines, numbers, strict=True)))
        self.side_lines += len(lines)

    def _writer(self, kind: str) -> pq.ParquetWriter:
        if kind not in self._writers:
            folder = self._target / f"tier={kind}"
            folder.mkdir(parents=True, exist_ok=True)
            self._writers[kind] = pq.ParquetWriter(folder / "part-arrow.parquet", self._out_schema,
                                                   compression="none", use_dictionary=self._dictionary)
        return self._writers[kind]


def split_history(history: Path, target: Path, side: Path, *, schema: pa.Schema, bulk_types: frozenset[str],
                  use_arrow: bool = True, chunk_bytes: int = CHUNK_BYTES) -> SplitStats:
    """Write the bulk tiers of `history` under `target` with Arrow and the rest to `side` (see module doc).

    `use_arrow=False` sends every line to the side file (Spark then parses the whole history).
    """
    with history.open("rb") as stream, BulkSplitter(target, side, schema, bulk_types) as splitter:
        first = 0
        for chunk in iter_chunks(stream, chunk_bytes):
            first += splitter.add(first, chunk, use_arrow=use_arrow)
        return splitter.stats()
