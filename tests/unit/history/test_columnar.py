"""The recorder's columnar copy (harness.history.columnar), without Spark: what the writer builds beside the
history, that it is trusted only for the bytes it copied, and that a killed recorder leaves a usable prefix."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.history import columnar
from harness.history.bulk import SEQ_FIELD
from harness.history.columnar import COLUMNS_DIR, MANIFEST, SMALL, read_copy
from harness.history.events import Phase, Send
from harness.history.jsonl import HistoryWriter

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of two chunks of about 2 kB, so that a few hundred events make several."""
    monkeypatch.setattr(columnar, "COPY_CHUNK_BYTES", 2048)
    monkeypatch.setattr(columnar, "COPY_SEGMENT_BYTES", 4096)


def _record(history: Path, sends: int) -> None:
    """Write `sends` sends through a columnar writer, with a phase event every 10."""
    with HistoryWriter(history, columnar=True) as writer:
        for i in range(sends):
            if i % 10 == 0:
                writer(Phase(name=f"p{i}"))
            writer(Send(src="producer:p", producer="p", value=i, key=f"k{i % 3}", topic="orders", acks="all"))


def test_the_writers_copy_holds_every_line_bulk_events_in_parquet_the_rest_with_their_line_numbers(
        tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    _record(history, 200)
    lines = history.read_bytes().splitlines()
    copied = read_copy(history)
    assert copied is not None and copied.lines == len(lines) == 220 and copied.end == history.stat().st_size
    assert len(copied.parts) > 3, "several segments: the test's segment size is small"
    sends = [row for _, part in copied.parts for row in pq.read_table(part).to_pylist()]
    assert [r["value"] for r in sends] == list(range(200))
    assert all(json.loads(lines[r["seq"]])["value"] == r["value"] for r in sends)
    small = [json.loads(line) for line in copied.small.read_bytes().splitlines()]
    assert [e["name"] for e in small] == [f"p{i}" for i in range(0, 200, 10)]
    assert all(json.loads(lines[e[SEQ_FIELD]])["name"] == e["name"] for e in small)
    assert (copied.arrow_rows, copied.side_lines, copied.refused) == (200, 20, 0)


def test_a_copy_is_not_trusted_once_the_historys_bytes_differ(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    _record(history, 50)
    data = history.read_bytes()
    history.write_bytes(data.replace(b'"value":7,', b'"value":8,', 1))
    assert read_copy(history) is None
    history.write_bytes(data[:-10])
    assert read_copy(history) is None
    history.write_bytes(data + b'{"t":1.0,"type":"phase","src":"engine","name":"later"}\n')
    copied = read_copy(history)
    assert copied is not None and copied.end == len(data), "lines appended later are read from the history"


def test_a_torn_manifest_line_leaves_the_chunks_before_it(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    _record(history, 200)
    manifest = tmp_path / COLUMNS_DIR / MANIFEST
    records = manifest.read_text().splitlines()
    manifest.write_text("\n".join(records[:2]) + "\n" + records[2][:15])
    copied = read_copy(history)
    assert copied is not None and copied.lines == json.loads(records[1])["lines"]
    assert len(copied.parts) == 2


def test_a_history_appended_to_gets_no_copy(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text('{"t":0.0,"type":"phase","src":"engine","name":"before"}\n')
    _record(history, 20)
    assert not (tmp_path / COLUMNS_DIR).exists() and read_copy(history) is None


def test_a_writer_killed_mid_run_leaves_a_copy_of_a_prefix_of_its_history(tmp_path: Path) -> None:
    """SIGKILL after three segments were committed: the manifest names only finished parts, the copy is trusted
    for a prefix of the history on disk, and `small.jsonl` is at least as long as the manifest says."""
    history = tmp_path / "history.jsonl"
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from harness.history import columnar
        columnar.COPY_CHUNK_BYTES, columnar.COPY_SEGMENT_BYTES = 2048, 4096
        from harness.history.events import Phase, Send
        from harness.history.jsonl import HistoryWriter
        writer = HistoryWriter({str(history)!r}, columnar=True)
        manifest = {str(tmp_path / COLUMNS_DIR / MANIFEST)!r}

        def committed():
            return os.path.exists(manifest) and open(manifest).read().count("\\n") >= 3

        deadline = time.monotonic() + 90  # a busy machine may starve the copy's thread: wait for it, not a count
        i = 0
        while not committed() and time.monotonic() < deadline:
            for _ in range(50):
                writer(Phase(name=f"p{{i}}") if i % 10 == 0 else
                       Send(src="producer:p", producer="p", value=i, key="k", topic="orders", acks="all"))
                i += 1
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    copied = read_copy(history)
    assert copied is not None and len(copied.parts) >= 3, "three segments were committed before the kill"
    assert copied.end <= history.stat().st_size
    assert copied.small_bytes <= (tmp_path / COLUMNS_DIR / SMALL).stat().st_size
    assert all(part.is_file() for _, part in copied.parts)


def test_a_copy_missing_one_of_its_parts_is_ignored(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    _record(history, 100)
    copied = read_copy(history)
    assert copied is not None
    copied.parts[1][1].unlink()
    assert read_copy(history) is None


def test_a_copy_that_fails_mid_run_stops_keeps_its_finished_segments_and_never_stops_the_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The fifth chunk's split raises: the history gets every event, the copy its first two segments."""
    calls = {"n": 0}

    class Failing(columnar.BulkSplitter):
        def add(self, first: int, chunk: bytes, *, use_arrow: bool = True) -> int:
            calls["n"] += 1
            if calls["n"] == 5:
                raise OSError("disk full")
            return super().add(first, chunk, use_arrow=use_arrow)

    monkeypatch.setattr(columnar, "BulkSplitter", Failing)
    history = tmp_path / "history.jsonl"
    _record(history, 200)
    assert len(history.read_bytes().splitlines()) == 220
    assert "columnar copy" in caplog.text and "disk full" in caplog.text
    copied = read_copy(history)
    assert copied is not None and len(copied.parts) == 2 and copied.lines < 220
