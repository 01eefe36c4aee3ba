"""The Arrow half of the Parquet conversion, without Spark: chunking, the one-object-per-line
guard, the line-number injection, and which lines Arrow keeps or leaves to Spark."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq

from harness.history.bulk import (
    BULK_SCHEMA,
    SEQ_FIELD,
    iter_chunks,
    newlines_of,
    one_object_per_line,
    with_seq,
)
from spark_analysis.ingest.arrow_split import SplitStats, arrow_type, split_history
from spark_analysis.ingest.schema import PARQUET_SCHEMA


def _split(history: Path, target: Path, side: Path, **options: int) -> SplitStats:
    with side.open("wb") as out:
        return split_history(history, target, out, **options)


def test_the_bulk_columns_have_the_arrow_types_of_the_verifiers_spark_schema() -> None:
    """harness.history.bulk types its columns itself (the history layer knows no Spark); they must agree."""
    spark = {f.name: f.dataType for f in PARQUET_SCHEMA.fields}
    assert {f.name: f.type for f in BULK_SCHEMA} == {f.name: arrow_type(spark[f.name]) for f in BULK_SCHEMA}


def _guard(chunk: bytes, rows: int) -> bool:
    return one_object_per_line(chunk, newlines_of(chunk), rows)


def test_chunks_are_whole_lines_and_lose_no_byte() -> None:
    data = b"".join(b'{"n":%d}\n' % i for i in range(100)) + b'{"torn'
    chunks = list(iter_chunks(io.BytesIO(data), 37))
    assert b"".join(chunks) == data
    assert all(c.endswith(b"\n") for c in chunks[:-1]) and chunks[-1].endswith(b'{"torn')


def test_a_line_longer_than_the_chunk_size_stays_whole() -> None:
    long = b'{"k":"' + b"x" * 100 + b'"}\n'
    assert list(iter_chunks(io.BytesIO(long + b'{"a":1}\n'), 10)) == [long, b'{"a":1}\n']


def test_guard_accepts_one_object_per_line_with_or_without_final_newline() -> None:
    assert _guard(b'{"a":1}\n{"b":2}\n', 2)
    assert _guard(b'{"a":1}\n{"b":2}', 2)


def test_guard_refuses_blank_lines_crlf_two_objects_on_a_line_and_count_mismatch() -> None:
    assert not _guard(b'{"a":1}\n\n{"b":2}\n', 2)  # Arrow skips the blank line
    assert not _guard(b'{"a":1}\r\n{"b":2}\r\n', 2)
    assert not _guard(b'{"a":1} {"b":2}\n{"c":3}\n', 3)
    assert not _guard(b'{"a":1}\n{"b":2}\n', 1)
    assert not _guard(b"", 0)


def test_line_number_goes_in_as_the_first_field_of_objects_only() -> None:
    assert json.loads(with_seq(b'{"type":"send"}', 7)) == {SEQ_FIELD: 7, "type": "send"}
    assert json.loads(with_seq(b'  { "t":1}', 3)) == {SEQ_FIELD: 3, "t": 1}
    assert with_seq(b"{}", 1) == b"{}"
    assert with_seq(b"[1,2]", 1) == b"[1,2]"
    assert with_seq(b'{"t":1,"ty', 2).startswith(b'{"' + SEQ_FIELD.encode() + b'":2,"t":1')


def test_arrow_keeps_bulk_events_and_leaves_small_events_and_refused_chunks_to_spark(tmp_path: Path) -> None:
    lines = [
        {"t": 0.0, "src": "engine", "type": "run.start", "experiment": "x"},
        {"t": 0.1, "src": "producer:p", "type": "send", "producer": "p", "value": 1, "key": "k", "topic": "o"},
        {"t": 0.2, "src": "producer:p", "type": "ack", "producer": "p", "value": 1, "key": "k", "topic": "o",
         "partition": 0, "offset": 0},
        {"t": 0.3, "src": "engine", "type": "fault.start", "params": {"a": [1, {"b": 2}]}, "target": [1]},
        {"t": 0.4, "src": "producer:p", "type": "send", "producer": "p", "value": 2, "key": 5, "topic": "o"},
    ]
    text = "\n".join(json.dumps(e) for e in lines) + "\n"
    history = tmp_path / "history.jsonl"
    history.write_text(text)
    target, side = tmp_path / "pq", tmp_path / "side.jsonl"
    first_chunk = len(text.split("\n", 3)[0]) + len(text.split("\n", 3)[1]) + len(text.split("\n", 3)[2]) + 3
    stats = _split(history, target, side, chunk_bytes=first_chunk)
    # Chunk 1 (lines 0-2) is Arrow's; chunk 2 (lines 3-4) holds a numeric key, so Spark gets both lines.
    assert (stats.lines, stats.arrow_rows, stats.side_lines, stats.refused_chunks) == (5, 2, 3, 1)
    side_events = [json.loads(line) for line in side.read_text().splitlines()]
    assert [(e[SEQ_FIELD], e["type"]) for e in side_events] == [(0, "run.start"), (3, "fault.start"), (4, "send")]
    sends = pq.read_table(target / "tier=send").to_pylist()
    assert [(r["seq"], r["value"], r["key"]) for r in sends] == [(1, 1, "k")]
    acks = pq.read_table(target / "tier=ack").to_pylist()
    assert [(r["seq"], r["partition"], r["offset"]) for r in acks] == [(2, 0, 0)]


def test_arrow_keeps_the_transaction_of_sends_acks_and_errors_and_the_isolation_of_polls(tmp_path: Path) -> None:
    """`txn` and `isolation` are among the columns Arrow parses (Arrow drops the others): the bulk tiers keep
    them, null where an event has none; the small txn.* events go to Spark."""
    base = {"src": "producer:p", "producer": "p", "key": "k", "topic": "o"}
    lines = [
        {"t": 0.1, "type": "txn.begin", "src": "producer:p", "producer": "p", "transactional_id": "p-tid", "txn": 3},
        {"t": 0.2, "type": "send", **base, "value": 1, "txn": 3},
        {"t": 0.3, "type": "ack", **base, "value": 1, "partition": 0, "offset": 0, "txn": 3},
        {"t": 0.4, "type": "send.error", **base, "value": 2, "txn": 3, "error": "_PURGE_QUEUE", "definite": True},
        {"t": 0.5, "type": "send", **base, "value": 3},
        {"t": 0.6, "type": "poll", "src": "consumer:c", "consumer": "c", "group": "g", "topic": "o", "partition": 0,
         "offset": 0, "value": 1, "isolation": "read_committed"},
        {"t": 0.7, "type": "poll", "src": "consumer:c", "consumer": "c", "group": "g", "topic": "o", "partition": 0,
         "offset": 1, "value": 3},
    ]
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(e) + "\n" for e in lines))
    stats = _split(history, tmp_path / "pq", tmp_path / "side.jsonl")
    assert (stats.arrow_rows, stats.side_lines, stats.refused_chunks) == (6, 1, 0)
    rows = {kind: pq.read_table(tmp_path / "pq" / f"tier={kind}").to_pylist() for kind in ("send", "ack",
                                                                                           "send.error", "poll")}
    assert [(r["value"], r["txn"]) for r in rows["send"]] == [(1, 3), (3, None)]
    assert [(r["value"], r["txn"]) for r in rows["ack"] + rows["send.error"]] == [(1, 3), (2, 3)]
    assert [(r["value"], r["isolation"]) for r in rows["poll"]] == [(1, "read_committed"), (3, None)]
    assert "txn.begin" in (tmp_path / "side.jsonl").read_text()


def test_arrow_keeps_a_zombies_flag_and_a_pipeline_outputs_source(tmp_path: Path) -> None:
    """`zombie` (a fenced client's writes) and `source` (a pipeline's output: its input value) are among the
    columns Arrow parses on send/ack/send.error; a pipeline's pipe.read and txn.commit (its `offsets`) go to Spark."""
    zombie = {"src": "producer:p", "producer": "p", "topic": "o", "txn": 1, "zombie": True}
    out = {"src": "pipeline:e", "producer": "e", "topic": "x", "txn": 0, "input_value": 1}
    lines = [
        {"t": 0.1, "type": "send", **zombie, "value": 1},
        {"t": 0.2, "type": "send.error", **zombie, "value": 1, "error": "_PURGE_QUEUE", "definite": False},
        {"t": 0.3, "type": "pipe.read", "src": "pipeline:e", "pipeline": "e", "group": "e", "topic": "o",
         "partition": 0, "offset": 0, "value": 1, "txn": 0},
        {"t": 0.4, "type": "send", **out, "value": 2},
        {"t": 0.5, "type": "ack", **out, "value": 2, "partition": 0, "offset": 0},
        {"t": 0.6, "type": "txn.commit", "src": "pipeline:e", "producer": "e", "txn": 0, "outcome": "committed",
         "offsets": [["o", 0, 1]]},
    ]
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(e) + "\n" for e in lines))
    stats = _split(history, tmp_path / "pq", tmp_path / "side.jsonl")
    assert (stats.arrow_rows, stats.side_lines, stats.refused_chunks) == (4, 2, 0)
    rows = [r for kind in ("send", "ack", "send.error")
            for r in pq.read_table(tmp_path / "pq" / f"tier={kind}").to_pylist()]
    assert sorted((r["value"], r["type"], r["zombie"], r["input_value"]) for r in rows) == [
        (1, "send", True, None), (1, "send.error", True, None), (2, "ack", None, 1), (2, "send", None, 1)]
