"""`verify_run`: the one entry point from a run directory to its verdict and reports.

Owns the pipeline: read run.json -> load history.jsonl (Parquet once; a small history is then
cached in memory, under the small-run settings: `session.SMALL_RUN_CONF`) -> run the selected checks
(each crash-proof: a crash is `unknown`) -> the damaged-history rule -> apply `verify.allow` and `expect:` ->
whether the run completed (an incomplete run is never `pass`) -> timeline -> write verdict.json,
report.html and junit.xml into the run directory. The same code runs embedded
(`local[*]`), on a cluster (`spark_master`) or under spark-submit (an active session is reused).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from harness.install.cache import cache_root
from spark_analysis.checks import ALL_CHECKS, DAMAGE
from spark_analysis.checks.shared.damage import apply_damage_rule
from spark_analysis.facts.completion import ENDING_TYPES, incompleteness
from spark_analysis.facts.context import spark_context
from spark_analysis.ingest.load import PARQUET_DIR, load_history
from spark_analysis.ingest.runinfo import RunInfo, load_run_info
from spark_analysis.report import write_reports
from spark_analysis.report.timeline import build_timeline
from spark_analysis.result import Check, CheckResult, run_check
from spark_analysis.session.spark_session import SMALL_RUN_BYTES, SMALL_RUN_CONF, get_session, scoped_conf
from spark_analysis.verdict import Verdict, apply_allow, apply_expect, run_metadata, run_status

HISTORY_FILE = "history.jsonl"


def output_dir(run_dir: Path, out: Path | None = None) -> Path:
    """Where a verify of `run_dir` writes: `out` when given, else the run directory, else (a read-only run
    directory: an archive mount, a colleague's share) `<cache>/verified/<run name>-<hash of its path>/`."""
    if out is not None:
        return Path(out)
    run_dir = Path(run_dir)
    if os.access(run_dir, os.W_OK):
        return run_dir
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]
    return cache_root() / "verified" / f"{run_dir.resolve().name}-{digest}"


def verify_run(
    run_dir: Path,
    *,
    spark_master: str | None = None,
    spark: SparkSession | None = None,
    checks: tuple[Check, ...] = ALL_CHECKS,
    write: bool = True,
    small_run_bytes: int = SMALL_RUN_BYTES,
    out: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Verify the run in `run_dir`; writes verdict.json, report.html, junit.xml unless `write=False`, into
    `output_dir(run_dir, out)` (the run directory unless it is read-only or `out` says otherwise), the Parquet
    conversion too when that is not the run directory.

    A history of at most `small_run_bytes` verifies in the small-run mode: `SMALL_RUN_CONF` for the
    duration, and the events cached in memory as one partition (same results, less per-query overhead).
    `progress` hears each step ("starting Spark", "reading the history", "check 3/33: <id>", "writing the
    reports"): the CLI shows it while the verdict is due.
    """
    run_dir = Path(run_dir)
    target = output_dir(run_dir, out)
    run = load_run_info(run_dir)
    say = progress or (lambda _text: None)
    if spark is None:
        say("starting Spark")
    session = spark or get_session(spark_master)
    history = run_dir / HISTORY_FILE
    small = history.is_file() and history.stat().st_size <= small_run_bytes
    say(f"reading the history ({history.stat().st_size / 1e6:.1f} MB)" if history.is_file() else "reading the history")
    parquet = None if target == run_dir else target / PARQUET_DIR
    with scoped_conf(session, SMALL_RUN_CONF if small else {}):
        verdict = _verify(run_dir, run, session, checks, small, parquet, say)
    if write:
        say("writing verdict.json, report.html, junit.xml")
        target.mkdir(parents=True, exist_ok=True)
        verdict.write(target)
        write_reports(verdict, target, source=run_dir)
    return verdict


def _verify(run_dir: Path, run: RunInfo, session: SparkSession, checks: tuple[Check, ...], small: bool,
            parquet: Path | None, say: Callable[[str], None]) -> Verdict:
    started = time.perf_counter()
    loaded = load_history(session, run_dir / HISTORY_FILE, parquet_dir=parquet)
    events = loaded.events.coalesce(1).cache() if small else loaded.events
    load_s = time.perf_counter() - started
    ctx = spark_context(run, session, events, loaded.type_counts, loaded.end_t, loaded.skipped_lines,
                        loaded.damage)
    try:
        selected = [c for c in checks if run.is_selected(c.id)]
        results: list[CheckResult] = []
        for i, check in enumerate(selected, 1):
            say(f"check {i}/{len(selected)}: {check.id}")
            results.append(run_check(check, ctx))
        results = apply_damage_rule(results, loaded.damage, ctx.faults, DAMAGE)
        incomplete = incompleteness(run, ctx.rows(*ENDING_TYPES))
        checks_s = time.perf_counter() - started - load_s
        try:
            timeline = build_timeline(ctx)
        except Exception as exc:  # the report must still be written without its timeline
            timeline = {"error": f"{type(exc).__name__}: {exc}"}
        faults = tuple(w.to_json() for w in ctx.faults.windows)
    finally:
        ctx.close()
        if small:
            events.unpersist()
    results, expectation = apply_expect(apply_allow(results, run), run)
    return Verdict(
        status=run_status(results, incomplete, expectation),
        checks=tuple(results),
        run=run_metadata(run),
        history={
            "path": str(run_dir / HISTORY_FILE),
            "lines": loaded.total_lines,
            "events": loaded.total_lines - loaded.skipped_lines,
            "skipped_lines": loaded.skipped_lines,
            "end_t": round(loaded.end_t, 3),
            "types": dict(sorted(loaded.type_counts.items())),
            "damage": loaded.damage.to_json(),
        },
        faults=faults,
        not_selected=tuple(c.id for c in checks if c.id not in {s.id for s in selected}),
        analysis={
            "spark_master": session.sparkContext.master,
            "spark_version": session.version,
            "load_s": round(load_s, 3),
            "checks_s": round(checks_s, 3),
            "total_s": round(time.perf_counter() - started, 3),
        },
        timeline=timeline,
        incomplete=incomplete.to_json() if incomplete else None,
        expectation=expectation,
    )
