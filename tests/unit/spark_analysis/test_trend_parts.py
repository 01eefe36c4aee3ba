"""The trend's parts that need no Spark: run discovery, the SLO samples kept for it, the reproduce
line, the page rendered from a trend document, and the CLI's argument rules for `report`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from spark_analysis.checks.slo.checks import MAX_SAMPLES, samples
from spark_analysis.trend import TrendError
from spark_analysis.trend.discover import discover_runs, reproduce_for
from spark_analysis.trend.page import render_trend
from tests.fixtures.histories import python_context, scenario


def _run(path: Path, run: dict[str, Any] | None = None, verdict: str | None = None) -> Path:
    path.mkdir(parents=True)
    if run is not None:
        (path / "run.json").write_text(json.dumps(run))
    if verdict is not None:
        (path / "verdict.json").write_text(verdict)
    return path


def test_discovery_finds_runs_directly_and_one_level_down_and_skips_the_rest(tmp_path: Path) -> None:
    """Run dirs (run.json / verdict.json / history.jsonl) at depth 1 or 2; hidden and empty dirs ignored."""
    _run(tmp_path / "direct", {"experiment": "a", "seed": 1})
    _run(tmp_path / "2026-01-01" / "r1", verdict="{}")
    (tmp_path / "2026-01-01" / "r2").mkdir()
    (tmp_path / "2026-01-01" / "r2" / "history.jsonl").write_text("")
    _run(tmp_path / ".hidden" / "r3", {"experiment": "hidden"})
    _run(tmp_path / "a" / "b" / "too-deep", {"experiment": "deep"})
    (tmp_path / "empty").mkdir()
    entries = discover_runs(tmp_path)
    assert [e.run_id for e in entries] == ["2026-01-01/r1", "2026-01-01/r2", "direct"]
    by_id = {e.run_id: e for e in entries}
    assert by_id["direct"].info.experiment == "a" and by_id["direct"].run_json_problem is None
    assert by_id["2026-01-01/r1"].has_verdict_file and by_id["2026-01-01/r1"].run_json_problem == "no run.json"
    assert not by_id["2026-01-01/r2"].has_verdict_file


def test_unreadable_run_json_is_noted_not_fatal_and_empty_runs_dir_is_an_error(tmp_path: Path) -> None:
    """A broken run.json leaves an all-unknown RunInfo plus the reason; no run at all raises TrendError."""
    bad = _run(tmp_path / "runs" / "bad")
    (bad / "run.json").write_text("{not json")
    [entry] = discover_runs(tmp_path / "runs")
    assert entry.info.experiment is None and "not readable as JSON" in str(entry.run_json_problem)
    (tmp_path / "none").mkdir()
    with pytest.raises(TrendError, match="no run directories under"):
        discover_runs(tmp_path / "none")
    with pytest.raises(TrendError, match="does not exist"):
        discover_runs(tmp_path / "missing")


def test_reproduce_line_comes_from_the_cli_and_needs_source_seed_and_backend(tmp_path: Path) -> None:
    """The CLI's reproduce line (source, variant, seed, backend); the resolved copy when source is unknown."""
    _run(tmp_path / "r", {"experiment": "e", "source": "experiments/e.yaml", "variant": "acks=1", "seed": 9})
    (tmp_path / "r" / "experiment.yaml").write_text("name: e\n")
    _run(tmp_path / "s", {"experiment": "e", "seed": 9})
    (tmp_path / "s" / "experiment.yaml").write_text("name: e\n")
    r, s = discover_runs(tmp_path)
    line = reproduce_for(r, seed=9, backend="process")
    assert line is not None and "kafka-chaos run experiments/e.yaml --variant acks=1 --seed 9 --backend process" in line
    line = reproduce_for(s, seed=9, backend="process")
    assert line is not None and f"kafka-chaos run {tmp_path / 's' / 'experiment.yaml'} --seed 9" in line
    assert reproduce_for(r, seed=None, backend="process") is None


def test_slo_checks_keep_sorted_samples_thinned_evenly_above_the_cap() -> None:
    """metrics.samples: every closed duration ascending (ms); above the cap min and max are kept."""
    from spark_analysis.checks.slo.checks import ControllerFailover

    result = ControllerFailover().run(python_context(scenario(slow_failover=True)))
    assert result.metrics["samples"] == sorted(result.metrics["samples"])
    assert len(result.metrics["samples"]) == result.metrics["distribution"]["count"]
    assert max(result.metrics["samples"]) == result.metrics["distribution"]["max"]
    many = [i / 1000 for i in range(5000, 0, -1)]
    thinned = samples(many)
    assert len(thinned) == MAX_SAMPLES and thinned[0] == 0.001 and thinned[-1] == 5.0
    assert thinned == sorted(thinned) and samples([0.12345, 0.1]) == [0.1, 0.123]


def _trend_doc() -> dict[str, Any]:
    counts = {"pass": 1, "fail": 1, "unknown": 0, "allowed": 0, "total": 2, "pass_rate": 0.5}
    dist = {"count": 2, "p50": 1.0, "p90": 2.0, "p99": 2.0, "max": 2.0, "runs": 2, "runs_without_samples": 0,
            "open_at_end": 0}
    return {
        "runs_dir": "runs <&>", "generated": "now", "spark": {"master": "local[2]", "version": "4"},
        "header": {"runs": 2, "by_status": {"pass": 1, "fail": 1, "unknown": 0, "no verdict": 0},
                   "nights": ["2026-01-01"], "experiments": {"e": 2}, "backends": {"process": 2},
                   "brokers": {"reference broker": 2}, "flavours": {"reference": 2}, "bug_flags": {"ack_early": 1}},
        "nights": [{"night": "2026-01-01", "runs": 2, "pass": 1, "fail": 1, "unknown": 0, "no_verdict": 0,
                    "pass_rate": 0.5}],
        "checks": {"slo.controller_failover": {"overall": counts, "nights": {"2026-01-01": counts}}},
        "durations": {"slo.controller_failover": {"overall": dist, "nights": {"2026-01-01": dist}},
                      "slo.rebalance": {"overall": {}, "nights": {}}},
        "failed_runs": [{"run": "n/r <1>", "night": "2026-01-01", "status": "fail", "experiment": "e", "seed": 1,
                         "backend": "process", "tested": "reference broker", "report": "n/r%20%3C1%3E/report.html",
                         "checks": [{"id": "slo.controller_failover", "status": "fail", "summary": "slow <b>",
                                     "fault": "fault #1 kill broker 1"}],
                         "reason": None, "reproduce": "reproduce: kafka-chaos run e.yaml --seed 1", "versions": ""}],
        "runs": [],
    }


def test_page_renders_from_the_trend_document_escaped_and_self_contained() -> None:
    """Every value is escaped; inline SVG only; the failed run links its report relatively."""
    html = render_trend(_trend_doc())
    assert "runs &lt;&amp;&gt;" in html and "slow &lt;b&gt;" in html and "<b>" not in html.split("<body>")[1]
    assert "<script" not in html and not re.search(r"(?:src|href)=\"(?:https?:)?//", html)
    assert 'href="n/r%20%3C1%3E/report.html"' in html and "reproduce: kafka-chaos run e.yaml --seed 1" in html
    assert html.count("<svg") == 3 and "No run has this check." in html and "ack_early (1)" in html


def test_report_cli_rejects_run_dirs_with_trend_and_out_without_trend(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`report` takes run directories or --trend, not both; --out only with --trend; no runs -> exit 2."""
    assert cli_main(["report", "--trend", str(tmp_path), str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err
    assert cli_main(["report", str(tmp_path), "--out", str(tmp_path / "x.html")]) == 2
    assert cli_main(["report"]) == 2
    assert cli_main(["report", "--trend", str(tmp_path)]) == 2
    assert "no run directories under" in capsys.readouterr().err
