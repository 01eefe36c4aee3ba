"""The bulk events of a history in columns: which event types are bulk, the Arrow schema they are parsed with,
and the splitter that turns chunks of history lines into per-type Parquet files plus a side file of the rest.

The recorder's columnar copy (`harness.history.columnar`) and the verifiers' conversion
(`spark_analysis.ingest.load`, through `spark_analysis.ingest.arrow_split`) both split lines with `BulkSplitter`,
so a chunk the recorder split and a chunk the conversion split give the same rows. Arrow, whose types are strict,
takes a chunk only when every line is one complete JSON object that matches `BULK_SCHEMA`; otherwise the whole
chunk goes to the side file, where the verifiers read it as Spark would (`spark_analysis.ingest.side_rows`,
`load.with_damage`). Each side line carries its line number (`SEQ_FIELD`, injected as the object's first field),
so `seq` is the line number whichever parser read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

BULK_TYPES = frozenset({"send", "ack", "send.error", "poll", "commit"})
"""Event types that can number millions; every other type is small."""
SEQ_FIELD = "_kafka_chaos_seq"
"""Injected into each side-file line: the line's number in history.jsonl (0-based)."""
CHUNK_BYTES = 16 * 1024 * 1024

BULK_SCHEMA = pa.schema([
    ("t", pa.float64()), ("src", pa.string()), ("type", pa.string()), ("producer", pa.string()),
    ("consumer", pa.string()), ("group", pa.string()), ("member", pa.string()), ("generation", pa.int64()),
    ("topic", pa.string()), ("partition", pa.int64()), ("offset", pa.int64()), ("value", pa.int64()),
    ("key", pa.string()), ("acks", pa.string()), ("error", pa.string()), ("definite", pa.bool_()),
    ("latency_ms", pa.float64()), ("txn", pa.int64()), ("isolation", pa.string()), ("zombie", pa.bool_()),
    ("input_value", pa.int64()),
])
"""The columns Arrow parses the bulk events (send, ack, send.error, poll, commit) with, typed as the verifiers'
Spark schema types them (`tests/unit/spark_analysis/test_arrow_split.py` checks that they agree); Arrow drops a
column it is not given."""
SEQ_COLUMN = pa.field("seq", pa.int64(), nullable=False)

_NL, _OPEN, _CLOSE = ord("\n"), ord("{"), ord("}")


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
    """Writes the bulk tiers (`<target>/tier=<type>/<part>`) and appends every other line to `side`.

    A context manager: leaving it closes every Parquet writer (not `side`, which its caller owns), also after
    an error. `parts` names the files it wrote, by type.
    """

    def __init__(self, target: Path, side: BinaryIO, schema: pa.Schema = BULK_SCHEMA, *,
                 bulk_types: frozenset[str] = BULK_TYPES, part: str = "part-arrow.parquet") -> None:
        self._target, self._bulk, self._part = target, sorted(bulk_types), part
        self._options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        self._out_schema = schema.append(SEQ_COLUMN)
        self._writers: dict[str, pq.ParquetWriter] = {}
        # Dictionaries pay for the repetitive strings only (numbers are mostly distinct).
        self._dictionary = [f.name for f in schema if f.type == pa.string()]
        self._side = side
        self.lines = self.arrow_rows = self.side_lines = self.refused = 0

    def __enter__(self) -> BulkSplitter:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def parts(self) -> dict[str, Path]:
        return {kind: self._target / f"tier={kind}" / self._part for kind in self._writers}

    def close(self) -> None:
        """Close every Parquet writer, then raise one OSError naming all that failed."""
        failures: list[str] = []
        for name, writer in self._writers.items():
            try:
                writer.close()
            except Exception as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
        if failures:
            raise OSError(f"closing the Parquet files under {self._target} failed: " + "; ".join(failures))

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
        table = table.append_column(SEQ_COLUMN, pa.array(range(first, first + n), pa.int64()))
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
            self._writers[kind] = pq.ParquetWriter(folder / self._part, self._out_schema,
                                                   compression="none", use_dictionary=self._dictionary)
        return self._writers[kind]
