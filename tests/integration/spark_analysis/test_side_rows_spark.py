"""The small events read in Python (`spark_analysis.ingest.side_rows`) land in the Parquet copy exactly as Spark's own
parse writes them: every column of every row, for events of every small type recorded on Apache Kafka and the
reference broker (tests/data/small_events.jsonl) and for edge values; and a history verifies to the same
verdict either way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.history.bulk import with_seq
from spark_analysis.ingest.load import _spark_convert, convert_to_parquet, load_history
from spark_analysis.ingest.schema import PARQUET_SCHEMA
from spark_analysis.ingest.side_rows import side_table, write_small_tier
from spark_analysis.verify import verify_run
from tests.fixtures.histories import BUGS, scenario, write_run

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SMALL_EVENTS = Path(__file__).resolve().parents[2] / "data" / "small_events.jsonl"


def _rows(spark: Any, target: Path) -> list[dict[str, Any]]:
    df = spark.read.schema(PARQUET_SCHEMA).parquet(str(target))
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: (r["seq"], r["tier"]))


def test_python_and_spark_write_the_same_small_tier(spark: Any, tmp_path: Path) -> None:
    side = tmp_path / "side.jsonl"
    lines = SMALL_EVENTS.read_bytes().splitlines()
    side.write_bytes(b"".join(with_seq(line, i) + b"\n" for i, line in enumerate(lines)))
    table = side_table(side)
    assert table is not None and table.num_rows == len(lines) > 70
    write_small_tier(table, tmp_path / "python")
    _spark_convert(spark, side, tmp_path / "spark")
    python_rows, spark_rows = _rows(spark, tmp_path / "python"), _rows(spark, tmp_path / "spark")
    assert len(python_rows) == len(spark_rows)
    for ours, theirs in zip(python_rows, spark_rows, strict=True):
        assert ours == theirs, f"line {theirs['seq'] + 1} differs"


def test_an_ordinary_history_has_its_small_events_read_in_python(spark: Any, tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    write_run(tmp_path, scenario())
    stats = convert_to_parquet(spark, history, tmp_path / "pq")
    assert stats.refused_chunks == 0 and stats.python_rows == stats.side_lines > 0


def test_a_damaged_line_leaves_the_small_events_to_spark(spark: Any, tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    write_run(tmp_path, scenario())
    with history.open("a", encoding="utf-8") as fh:
        fh.write('{"t":99.0,"src":"engine","type":"probe","ok":"yes"}\n')
    stats = convert_to_parquet(spark, history, tmp_path / "pq")
    assert stats.refused_chunks == 0 and stats.python_rows == 0 and stats.side_lines > 0
    assert load_history(spark, history, parquet_dir=tmp_path / "pq").skipped_lines == 1


def test_a_run_verifies_to_the_same_verdict_whichever_reads_its_small_events(spark: Any, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    run = write_run(tmp_path / "python", scenario(**dict.fromkeys(BUGS, True)))
    python_verdict = verify_run(run, spark=spark, write=False)
    shutil.copytree(run, tmp_path / "spark", ignore=shutil.ignore_patterns(".analysis"))
    monkeypatch.setattr("spark_analysis.ingest.load.side_table", lambda side: None)
    spark_verdict = verify_run(tmp_path / "spark", spark=spark, write=False)
    assert "fail" in {c.status for c in python_verdict.checks}
    assert [(c.check_id, c.status, c.summary, c.evidence, c.metrics) for c in python_verdict.checks] == \
        [(c.check_id, c.status, c.summary, c.evidence, c.metrics) for c in spark_verdict.checks]
