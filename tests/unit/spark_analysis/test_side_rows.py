"""Which side-file lines Python reads for the small tier (`spark_analysis.ingest.side_rows`) and which it leaves to
Spark, and the values it stores; Spark's own reading is compared in tests/integration (test_side_rows_spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history.bulk import with_seq
from spark_analysis.ingest.side_rows import side_table

GOOD = '{"t":5,"src":"zk","type":"partition.state","topic":"orders","partition":0,"leader":"3","isr":[3,1]}'


def _table(tmp_path: Path, *lines: str | bytes) -> list[dict[str, object]] | None:
    side = tmp_path / "side.jsonl"
    side.write_bytes(b"".join(with_seq(line if isinstance(line, bytes) else line.encode(), i) + b"\n"
                              for i, line in enumerate(lines)))
    table = side_table(side)
    return None if table is None else table.to_pylist()


def test_a_recorded_line_becomes_the_row_spark_would_write(tmp_path: Path) -> None:
    rows = _table(tmp_path, GOOD, '{"t":6.5,"type":"group.state","group":"g","leader":"consumer-1-ab","fault_id":7,'
                              '"target":["broker",2],"extra":{"ignored":true}}')
    assert rows is not None
    first, second = rows
    assert (first["seq"], first["t"], first["leader"], first["isr"], first["_damage"]) == (0, 5.0, 3, [3, 1], None)
    assert (second["seq"], second["leader"], second["fault_id"], second["target"]) == (1, None, "7", '["broker",2]')


@pytest.mark.parametrize("line", [
    GOOD.replace('"src":"zk"', '"src": "zk"'),                   # not the recorder's compact form
    GOOD.replace('"t":5,', '"t":5,"t":6,'),                     # a duplicate key
    GOOD.replace('"partition":0', '"partition":"zero"'),        # ill-typed
    GOOD.replace('"leader":"3"', '"leader":"broker-3"'),        # a leader that is no broker id
    GOOD.replace('"type":"partition.state",', ''),              # untyped
    GOOD.replace('partition.state', 'poll'),                    # a bulk event
    GOOD.replace('"topic"', '"Topic"'),                         # a column's name in another case
    GOOD.replace('"isr":[3,1]', '"_corrupt_record":"x"'),       # the corrupt-record column
    GOOD.replace('"t":5', '"t":"NaN"'),                         # a double given as a word
    GOOD[:40],                                                  # torn
])
def test_a_line_python_would_not_read_exactly_as_spark_leaves_the_whole_file_to_spark(tmp_path: Path,
                                                                                       line: str) -> None:
    assert _table(tmp_path, GOOD, line) is None


def test_bytes_that_are_not_utf8_leave_the_file_to_spark(tmp_path: Path) -> None:
    assert _table(tmp_path, GOOD, GOOD.encode().replace(b"orders", b"ord\xffrs")) is None
