"""The conversion takes the recorder's columnar copy as it is and reads only the rest of the history: the same
rows, line numbers and damaged-line counts as a conversion of the history alone, for a whole copy, for a copy of a
prefix (a crashed run's), and with no copy trusted once the history's bytes changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.history.columnar import COLUMNS_DIR, MANIFEST, copy_history
from spark_analysis.ingest.load import convert_to_parquet, load_history
from tests.integration.spark_analysis.test_parquet_conversion import _history, _rows

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _copy(history: Path) -> int:
    """Build the copy from the history's lines as the writer does (segments of two chunks of about 2 kB);
    returns its number of segments."""
    assert copy_history(history, chunk_bytes=2048, segment_bytes=4096).error is None
    return len((history.parent / COLUMNS_DIR / MANIFEST).read_text().splitlines())


def test_a_conversion_through_the_whole_copy_holds_the_rows_of_one_without_it(spark: Any, tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    _history(history)  # odd lines in the middle (a chunk Arrow refuses) and a torn last line
    assert _copy(history) > 3
    with_copy = convert_to_parquet(spark, history, tmp_path / "copy")
    without = convert_to_parquet(spark, history, tmp_path / "plain", use_copy=False)
    assert with_copy.copied_lines == with_copy.lines == without.lines and without.copied_lines == 0
    assert with_copy.refused_chunks >= 1
    assert _rows(spark, tmp_path / "copy") == _rows(spark, tmp_path / "plain")


def test_a_copy_of_a_prefix_is_completed_from_the_historys_tail(spark: Any, tmp_path: Path) -> None:
    """As after a crash: the manifest's first two segments only (its third line torn)."""
    history = tmp_path / "history.jsonl"
    _history(history)
    _copy(history)
    manifest = tmp_path / COLUMNS_DIR / MANIFEST
    records = manifest.read_text().splitlines()
    manifest.write_text("\n".join(records[:2]) + "\n" + records[2][:20])
    stats = convert_to_parquet(spark, history, tmp_path / "copy")
    assert stats.copied_lines == json.loads(records[1])["lines"] < stats.lines
    convert_to_parquet(spark, history, tmp_path / "plain", use_copy=False)
    assert _rows(spark, tmp_path / "copy") == _rows(spark, tmp_path / "plain")


def test_load_history_counts_the_same_damage_with_or_without_the_copy(spark: Any, tmp_path: Path) -> None:
    plain_dir, copy_dir = tmp_path / "plain", tmp_path / "copy"
    plain_dir.mkdir()
    copy_dir.mkdir()
    _history(plain_dir / "history.jsonl")
    _history(copy_dir / "history.jsonl")
    _copy(copy_dir / "history.jsonl")
    plain, copied = load_history(spark, plain_dir / "history.jsonl"), load_history(spark, copy_dir / "history.jsonl")
    assert (copied.total_lines, copied.skipped_lines, copied.type_counts, copied.end_t) == (
        plain.total_lines, plain.skipped_lines, plain.type_counts, plain.end_t)
    assert copied.damage == plain.damage


def test_a_changed_history_is_converted_without_its_copy(spark: Any, tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    text = _history(history)
    _copy(history)
    history.write_bytes(text.replace(b'"value":', b'"value": ', 1))
    assert convert_to_parquet(spark, history, tmp_path / "pq").copied_lines == 0
