"""`build_trend`: from RUNS_DIR to `trend.html` and `trend.json`.

Owns the pipeline: discover the run directories -> aggregate their verdicts with Spark -> the
trend's JSON form (header, per-night runs, per-check pass rates, SLO durations, the runs that did
not pass with their report links and reproduce lines, every run in brief) -> write trend.json and
the page rendered from it. Links are relative to the page's directory, so the whole tree can be
moved or published as it is.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pyspark.sql import SparkSession

from spark_analysis.report.html import REPORT_FILE
from spark_analysis.session.spark_session import get_session
from spark_analysis.trend.aggregate import NO_VERDICT, Aggregates, aggregate
from spark_analysis.trend.discover import RunEntry, TrendError, discover_runs, reproduce_for
from spark_analysis.trend.page import render_trend

TREND_HTML = "trend.html"
TREND_JSON = "trend.json"
FORMAT_VERSION = 1
VERSION_KEYS = ("harness", "librdkafka", "confluent_kafka", "java", "pyspark", "python")


@dataclass(frozen=True, slots=True)
class TrendResult:
    """What `build_trend` wrote and the numbers it wrote."""

    html: Path
    json: Path
    trend: Mapping[str, Any]

    @property
    def failed_runs(self) -> int:
        return len(self.trend["failed_runs"])


def _href(page_dir: Path, target: Path) -> str:
    return quote(Path(os.path.relpath(target.resolve(), page_dir.resolve())).as_posix())


def _no_verdict_reason(entry: RunEntry) -> str:
    run_status = f" (run status: {entry.info.status})" if entry.info.status else ""
    if entry.has_verdict_file:
        return f"verdict.json is not a readable verdict{run_status}"
    return f"no verdict.json{run_status}" + (f"; {entry.run_json_problem}" if entry.run_json_problem else "")


def _versions(run: Mapping[str, Any]) -> str:
    """Broker and software versions from run.json or, for a run without one, from its verdict."""
    versions = run.get("versions") or {}
    broker = " ".join(str(x) for x in (run.get("flavour"), run.get("version")) if x)
    parts = [f"broker {broker}"] if broker else []
    parts += [f"{k} {versions[k]}" for k in VERSION_KEYS if versions.get(k)]
    return ", ".join(parts)


def _header(runs: list[dict[str, Any]], nights: list[str]) -> dict[str, Any]:
    def counted(values: list[str]) -> dict[str, int]:
        return dict(sorted(Counter(values).items()))

    return {
        "runs": len(runs),
        "by_status": {s: sum(1 for r in runs if r["status"] == s) for s in ("pass", "fail", "unknown", NO_VERDICT)},
        "nights": nights,
        "experiments": counted([str(r.get("experiment") or "unknown") for r in runs]),
        "backends": counted([str(r.get("backend") or "unknown") for r in runs]),
        "brokers": counted([str(r.get("title") or "unknown broker") for r in runs]),
        "flavours": counted([str(r.get("flavour") or "unknown") for r in runs]),
        "bug_flags": counted([bug for r in runs for bug in r["bugs"]]),
    }


def trend_document(runs_dir: Path, entries: list[RunEntry], agg: Aggregates, page_dir: Path,
                   spark: Mapping[str, Any]) -> dict[str, Any]:
    """The trend's JSON form (what trend.json holds and the page shows)."""
    by_id = {e.run_id: e for e in entries}
    failed: list[dict[str, Any]] = []
    brief: list[dict[str, Any]] = []
    for run in agg.runs:
        entry = by_id[run["run_id"]]
        report = entry.path / REPORT_FILE
        brief.append({"run": run["run_id"], "night": run["night"], "status": run["status"],
                      "experiment": run.get("experiment"), "seed": run.get("seed"), "backend": run.get("backend"),
                      "tested": run.get("title")})
        if run["status"] == "pass":
            continue
        reproduce = reproduce_for(entry, seed=run.get("seed"), backend=run.get("backend"))
        failed.append({
            "run": run["run_id"],
            "night": run["night"],
            "status": run["status"],
            "experiment": run.get("experiment"),
            "variant": entry.variant or None,
            "seed": run.get("seed"),
            "backend": run.get("backend"),
            "tested": run.get("title"),
            "report": _href(page_dir, report) if report.is_file() else None,
            "checks": [dict(c) for c in run["not_passing"]],
            "reason": _no_verdict_reason(entry) if run["status"] == NO_VERDICT else None,
            "reproduce": reproduce,
            # The reproduce line names the tested versions itself; without one, list them here.
            "versions": None if reproduce else _versions(run),
        })
    nights = [str(n["night"]) for n in agg.nights]
    return {
        "format": FORMAT_VERSION,
        "runs_dir": str(runs_dir),
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "spark": dict(spark),
        "header": _header(agg.runs, nights),
        "nights": agg.nights,
        "checks": agg.checks,
        "durations": agg.durations,
        "failed_runs": failed,
        "runs": brief,
    }


def build_trend(
    runs_dir: Path,
    *,
    out: Path | None = None,
    spark_master: str | None = None,
    spark: SparkSession | None = None,
) -> TrendResult:
    """Aggregate every run under `runs_dir`; write `out` (default RUNS_DIR/trend.html) and trend.json beside it.

    trend.json goes next to the page (`out.with_suffix(".json")`; RUNS_DIR/trend.json by default).
    Raises TrendError when RUNS_DIR holds no run directory or the output cannot be written.
    """
    runs_dir = Path(runs_dir)
    started = time.perf_counter()
    entries = discover_runs(runs_dir)
    html_path = Path(out) if out is not None else runs_dir / TREND_HTML
    json_path = html_path.with_suffix(".json") if out is not None else runs_dir / TREND_JSON
    session = spark or get_session(spark_master)
    agg = aggregate(session, entries)
    info = {"master": session.sparkContext.master, "version": session.version,
            "seconds": round(time.perf_counter() - started, 3)}
    trend = trend_document(runs_dir, entries, agg, html_path.parent, info)
    try:
        html_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(trend, indent=1, default=str, allow_nan=False), encoding="utf-8")
        html_path.write_text(render_trend(trend), encoding="utf-8")
    except OSError as exc:
        raise TrendError(f"cannot write the trend to {html_path} / {json_path}: {exc}") from exc
    return TrendResult(html=html_path, json=json_path, trend=trend)
