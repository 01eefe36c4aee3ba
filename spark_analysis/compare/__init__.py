"""Two runs of the same experiment and seed side by side: `kafka-chaos compare RUN_A RUN_B`.

`compare_runs(run_a, run_b, out=None, spark=None, spark_master=None) -> ComparePaths` gathers each
run's facts (`collect`: run.json, verdict.json, and per fault from the history: controller
failover, leaderless windows, elections and their rule, ISR changes, rebalances, ack stalls),
lines them up (`document`: faults by schedule index, checks by id, warnings when the runs differ
in experiment, seed or schedule) and writes `compare.json` and the page rendered from it
(`page`) into `out` (default: `compare-<A>-vs-<B>/` next to RUN_B, i.e. `runs/compare-A-vs-B/`
for runs under `runs/`). `cmd_compare` is the CLI's body (exit 0 once written, 2 on bad input).
Modules: `facts` (typed facts), `intervals` (the SLO checks' own intervals), `acks` (Spark),
`collect`, `document`, `page`.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from harness.errors import HarnessError
from spark_analysis.compare.collect import collect_run
from spark_analysis.compare.document import compare_document
from spark_analysis.compare.page import render_compare
from spark_analysis.session.spark_session import get_session
from spark_analysis.trend.discover import RUN_MARKERS

COMPARE_HTML = "compare.html"
COMPARE_JSON = "compare.json"
EXIT_WRITTEN, EXIT_ERROR = 0, 2


class CompareError(HarnessError):
    """A run directory is not one, or the comparison cannot be written."""


@dataclass(frozen=True, slots=True)
class ComparePaths:
    """What `compare_runs` wrote, and the warnings the page opens with."""

    html: Path
    json: Path
    warnings: tuple[str, ...] = ()
    differing_checks: tuple[str, ...] = ()
    upgrade: str | None = None
    """`upgrade 3.8.1 -> 3.9.2: 1 regression (slo.controller_failover)`, when the runs are one flavour on two
    releases."""


def default_out_dir(run_a: Path, run_b: Path) -> Path:
    """`compare-<name of A>-vs-<name of B>/` beside RUN_B."""
    a, b = Path(run_a).resolve(), Path(run_b).resolve()
    return b.parent / f"compare-{a.name}-vs-{b.name}"


def _require_run_dir(path: Path) -> None:
    if not path.is_dir() or not any((path / m).is_file() for m in RUN_MARKERS):
        raise CompareError(f"{path} is not a run directory (no {', '.join(RUN_MARKERS)})")


def compare_runs(run_a: Path, run_b: Path, out: Path | None = None, spark: SparkSession | None = None, *,
                 spark_master: str | None = None) -> ComparePaths:
    """Compare run A with run B; write compare.html and compare.json into `out` (default `default_out_dir`)."""
    run_a, run_b = Path(run_a), Path(run_b)
    for path in (run_a, run_b):
        _require_run_dir(path)
    started = time.perf_counter()
    session = spark or get_session(spark_master)
    facts_a = collect_run(run_a, session)
    facts_b = collect_run(run_b, session)
    info = {"master": session.sparkContext.master, "version": session.version,
            "seconds": round(time.perf_counter() - started, 3)}
    doc = compare_document(facts_a, facts_b, info)
    out_dir = Path(out) if out is not None else default_out_dir(run_a, run_b)
    html_path, json_path = out_dir / COMPARE_HTML, out_dir / COMPARE_JSON
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(doc, indent=1, default=str, allow_nan=False), encoding="utf-8")
        html_path.write_text(render_compare(doc), encoding="utf-8")
    except OSError as exc:
        raise CompareError(f"cannot write the comparison into {out_dir}: {exc}") from exc
    up = doc["upgrade"]
    line = None if up is None else (
        f"{up['direction']} {up['from']} -> {up['to']}: {len(up['regressions'])} regression"
        f"{'' if len(up['regressions']) == 1 else 's'} ({', '.join(up['regressions']) or 'none'}), "
        f"{len(up['fixed'])} fixed, {len(up['slower'])} fault timing{'' if len(up['slower']) == 1 else 's'} grew")
    return ComparePaths(html_path, json_path, tuple(doc["warnings"]), tuple(doc["differing_checks"]), line)


def cmd_compare(run_a: Path, run_b: Path, out: Path | None = None, spark_master: str | None = None) -> int:
    """`kafka-chaos compare RUN_A RUN_B [--out DIR] [--spark-master URL]`: 0 once written, 2 on bad input."""
    try:
        paths = compare_runs(Path(run_a), Path(run_b), Path(out) if out is not None else None,
                             spark_master=spark_master)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for warning in paths.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    differ = ", ".join(paths.differing_checks) or "none"
    print(f"checks that differ: {differ}")
    if paths.upgrade:
        print(paths.upgrade)
    print(f"compare page: {paths.html}  numbers: {paths.json}")
    return EXIT_WRITTEN


__all__ = ["COMPARE_HTML", "COMPARE_JSON", "CompareError", "ComparePaths", "cmd_compare", "compare_runs",
           "default_out_dir"]
