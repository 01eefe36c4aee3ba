"""Report writers: `report.html` (self-contained, timeline as inline SVG) and `junit.xml`.

`write_reports(verdict, run_dir)` writes both; `render_runs(run_dirs, out)` re-renders the
reports of several already-verified runs from their `verdict.json` (no Spark) plus an index.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from spark_analysis.report.html import render_index, write_html
from spark_analysis.report.junit import write_junit
from spark_analysis.verdict import Verdict, read_verdict


def write_reports(verdict: Verdict, run_dir: Path, source: Path | None = None) -> tuple[Path, Path]:
    """report.html and junit.xml into `run_dir`; `source`: the run directory they describe, when elsewhere (its
    experiment.yaml goes into the report)."""
    return write_html(verdict, run_dir, source), write_junit(verdict, run_dir)


def render_runs(run_dirs: Iterable[Path], index: Path | None = None) -> list[Path]:
    """Re-render report.html/junit.xml for each run dir from its verdict.json; optional index page."""
    written: list[Path] = []
    pairs: list[tuple[str, Verdict]] = []
    for run_dir in run_dirs:
        verdict = read_verdict(Path(run_dir))
        written.extend(write_reports(verdict, Path(run_dir)))
        pairs.append((Path(run_dir).name, verdict))
    if index is not None:
        index.write_text(render_index(pairs), encoding="utf-8")
        written.append(index)
    return written
