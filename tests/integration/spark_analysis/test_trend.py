"""`kafka-chaos report --trend` on real Spark: a RUNS_DIR of 15 runs over 3 nights (pass, fail,
unknown, allowed failure, an old verdict without samples, two runs with no verdict) built from
verdicts that `verify_run` wrote for the fixture histories (healthy and slow failover; the
unknown one derived from them by hand, samples rescaled per run); every number in trend.json is
recomputed here from the verdict files, and the page is checked to be self-contained and to link
each run that did not pass to its report.html."""

from __future__ import annotations

import copy
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from harness.cli import main as cli_main
from spark_analysis.checks import CHECK_IDS
from spark_analysis.report import write_reports
from spark_analysis.trend import build_trend
from spark_analysis.trend.aggregate import SLO_CHECKS
from spark_analysis.verdict import Verdict
from spark_analysis.verify import verify_run
from tests.fixtures.histories import RUN_JSON, scenario, write_run

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SLO = ("slo.controller_failover", "slo.partition_unavailable", "slo.rebalance")
NIGHT1, NIGHT2 = "2026-03-01", "2026-03-02"

# (night dir or "" for directly under RUNS_DIR, run name, template, start time, sample scale, tweak)
PLAN: list[tuple[str, str, str, str | None, float, str]] = [
    ("n1", "a-pass-1", "healthy", "2026-03-01T00:00:05+00:00", 1.0, ""),
    ("n1", "a-pass-2", "healthy", "2026-03-01T01:10:00+00:00", 1.5, ""),
    ("n1", "a-slow-1", "slow_failover", "2026-03-01T02:00:00Z", 1.0, ""),
    ("n1", "a-unknown-1", "no_groups", "2026-03-01T03:00:00+00:00", 2.0, ""),
    ("n1", "a-allowed", "healthy", "2026-03-01T04:00:00+00:00", 0.5, "allowed_duplicate"),
    ("n1", "a-old", "healthy", "2026-03-01T23:59:59+00:00", 1.0, "no_samples"),
    ("n1", "a-aborted", "", "2026-03-01T05:00:00+00:00", 1.0, "no_verdict"),
    # 01:30 at +02:00 is 23:30 UTC the day before: nights are UTC dates (this run is on night 1).
    ("n2", "b-pass-1", "healthy", "2026-03-02T01:30:00+02:00", 3.0, ""),
    ("n2", "b-pass-2", "healthy", "2026-03-02T10:00:00+00:00", 0.25, ""),
    ("n2", "b-slow-1", "slow_failover", "2026-03-02T11:00:00+00:00", 2.0, ""),
    ("n2", "b-slow-2", "slow_failover", "2026-03-02T12:00:00+00:00", 1.25, ""),
    ("n2", "b-unknown-1", "no_groups", "2026-03-02T13:00:00+00:00", 1.0, ""),
    ("n2", "b-garbage", "", "2026-03-02T14:00:00+00:00", 1.0, "garbage_verdict"),
    ("", "c-direct", "healthy", "2026-03-02T15:00:00+00:00", 4.0, ""),
    ("", "c-no-start", "slow_failover", None, 1.0, ""),
]


def _templates(spark: Any, tmp: Path) -> dict[str, dict[str, Any]]:
    """verdict.json of two fixture runs written by the real pipeline, and an unknown one derived by hand."""
    out = {}
    for name, events in (("healthy", scenario()), ("slow_failover", scenario(slow_failover=True))):
        run_dir = write_run(tmp / name, events)
        verify_run(run_dir, spark=spark)
        out[name] = json.loads((run_dir / "verdict.json").read_text())
    assert out["healthy"]["status"] == "pass" and out["slow_failover"]["status"] == "fail"
    # What verify_run writes for a history without group.state events (as run_check words it).
    no_groups = copy.deepcopy(out["healthy"])
    for check in no_groups["checks"]:
        if check["id"] in ("group.assignment_conforms", "group.coordinator_conforms", "slo.rebalance"):
            check.update(status="unknown", summary="cannot conclude: no group.state events in the history",
                         metrics={}, evidence=[])
    no_groups["status"] = "unknown"
    out["no_groups"] = no_groups
    return out


def _make_run(root: Path, plan: tuple[str, str, str, str | None, float, str], templates: dict[str, Any],
              seed: int) -> None:
    night_dir, name, template, started, scale, tweak = plan
    run_dir = root / night_dir / name if night_dir else root / name
    run_dir.mkdir(parents=True)
    run = copy.deepcopy(RUN_JSON)
    run.update(experiment=f"exp-{template or 'none'}", seed=seed, source=f"experiments/{template or 'x'}.yaml",
               started=started, status="aborted" if tweak == "no_verdict" else "completed")
    if tweak == "allowed_duplicate":
        run["verify"]["allow"] = ["duplicate"]
    (run_dir / "run.json").write_text(json.dumps(run))
    if tweak == "no_verdict":
        return
    if tweak == "garbage_verdict":
        (run_dir / "verdict.json").write_text('{"status": "pass", "checks": [')
        return
    verdict = copy.deepcopy(templates[template])
    verdict["run"].update(experiment=run["experiment"], seed=seed, started=started)
    for check in verdict["checks"]:
        metrics = check["metrics"]
        if check["id"] in SLO and "samples" in metrics:
            metrics["samples"] = sorted(round(s * scale, 3) for s in metrics["samples"])
            if tweak == "no_samples":
                del metrics["samples"]
        if tweak == "allowed_duplicate" and check["id"] == "delivery.duplicate":
            check.update(status="fail", allowed=True, summary="1 value appear at more than one offset")
    (run_dir / "verdict.json").write_text(json.dumps(verdict))
    write_reports(Verdict.from_json(verdict), run_dir)


@pytest.fixture(scope="module")
def runs_dir(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("trend")
    templates = _templates(spark, tmp / "templates")
    root = tmp / "runs"
    for i, plan in enumerate(PLAN):
        _make_run(root, plan, templates, seed=100 + i)
    return root


# ---- the independent computation, from the files alone -------------------------------------------

def _night_of(started: str | None) -> str:
    if not started:
        return "unknown"
    from datetime import UTC, datetime

    return datetime.fromisoformat(started).astimezone(UTC).date().isoformat()


def _nearest_rank(values: list[float], q: int) -> float | None:
    data = sorted(values)
    return data[max(1, math.ceil(q / 100 * len(data))) - 1] if data else None


def _expected(root: Path) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {}
    for run_json in sorted(root.rglob("run.json")):
        run_dir = run_json.parent
        run = json.loads(run_json.read_text())
        try:
            verdict = json.loads((run_dir / "verdict.json").read_text())
        except (OSError, ValueError):
            verdict = None
        runs[run_dir.relative_to(root).as_posix()] = {"night": _night_of(run.get("started")), "verdict": verdict}
    nights: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    checks: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    without: dict[tuple[str, str], int] = defaultdict(int)
    for r in runs.values():
        v = r["verdict"]
        status = v["status"] if v else "no verdict"
        nights[r["night"]][status] += 1
        nights[r["night"]]["runs"] += 1
        for c in (v or {}).get("checks", []):
            for key in ((c["id"], r["night"]), (c["id"], "all")):
                checks[key][c["status"]] += 1
                checks[key]["allowed"] += int(c["allowed"] and c["status"] != "pass")
                if c["id"] in SLO and "distribution" in c["metrics"]:
                    if "samples" in c["metrics"]:
                        samples[key].extend(c["metrics"]["samples"])
                    else:
                        without[key] += 1
    return {"runs": runs, "nights": nights, "checks": checks, "samples": samples, "without": without}


# ---- the tests ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trend(spark: Any, runs_dir: Path) -> dict[str, Any]:
    result = build_trend(runs_dir, spark=spark)
    assert result.html == runs_dir / "trend.html" and result.json == runs_dir / "trend.json"
    return dict(json.loads(result.json.read_text()))


def test_run_counts_per_night_match_the_verdicts(runs_dir: Path, trend: dict[str, Any]) -> None:
    """Runs per night by status (no-verdict runs included, nights are UTC dates) and the header."""
    exp = _expected(runs_dir)
    assert len(exp["runs"]) == 15
    assert {r["night"] for r in exp["runs"].values()} == {NIGHT1, NIGHT2, "unknown"}
    assert exp["runs"]["n2/b-pass-1"]["night"] == NIGHT1
    got = {n["night"]: n for n in trend["nights"]}
    assert set(got) == set(exp["nights"])
    for night, counts in exp["nights"].items():
        for status, key in (("pass", "pass"), ("fail", "fail"), ("unknown", "unknown"), ("no verdict", "no_verdict"),
                            ("runs", "runs")):
            assert got[night][key] == counts.get(status, 0), (night, key)
        assert got[night]["pass_rate"] == pytest.approx(counts.get("pass", 0) / counts["runs"], abs=1e-4)
    header = trend["header"]
    assert header["runs"] == 15 and header["by_status"] == {"pass": 7, "fail": 4, "unknown": 2, "no verdict": 2}
    assert header["nights"] == sorted(exp["nights"])
    assert header["experiments"] == {"exp-healthy": 7, "exp-no_groups": 2, "exp-none": 2, "exp-slow_failover": 4}
    assert header["backends"] == {"process": 15}
    assert header["brokers"] == {"reference broker 0.1.0": 15} and header["flavours"] == {"reference": 15}

def test_pass_rates_per_check_and_night_match_the_verdicts(runs_dir: Path, trend: dict[str, Any]) -> None:
    """pass/fail/unknown/allowed per check per night and overall; unknown is not counted as fail."""
    exp = _expected(runs_dir)
    assert len(trend["checks"]) == len([c for c in CHECK_IDS if not c.startswith("quorum.")])  # ZooKeeper runs
    for check, entry in trend["checks"].items():
        cells = {**entry["nights"], "all": entry["overall"]}
        expected_cells = {night for (c, night) in exp["checks"] if c == check}
        assert set(cells) == expected_cells, check
        for night, got in cells.items():
            want = exp["checks"][(check, night)]
            total = want["pass"] + want["fail"] + want["unknown"]
            assert (got["pass"], got["fail"], got["unknown"], got["allowed"], got["total"]) == (
                want["pass"], want["fail"], want["unknown"], want["allowed"], total), (check, night)
            assert got["pass_rate"] == pytest.approx(want["pass"] / total, abs=1e-4)
    failover = trend["checks"]["slo.controller_failover"]["nights"][NIGHT2]
    assert (failover["pass"], failover["fail"]) == (3, 2)
    rebalance = trend["checks"]["slo.rebalance"]["overall"]
    assert rebalance["unknown"] == 2 and rebalance["fail"] == 0
    assert trend["checks"]["delivery.duplicate"]["overall"]["allowed"] == 1


def test_duration_percentiles_per_night_match_the_samples(runs_dir: Path, trend: dict[str, Any]) -> None:
    """count/p50/p90/p99/max per SLO check and night, from the pooled samples (nearest rank)."""
    exp = _expected(runs_dir)
    for check in SLO:
        entry = trend["durations"][check]
        cells = {**entry["nights"], "all": entry["overall"]}
        for night, got in cells.items():
            values = exp["samples"].get((check, night), [])
            assert got["count"] == len(values), (check, night)
            for q in (50, 90, 99):
                assert got[f"p{q}"] == _nearest_rank(values, q), (check, night, q)
            assert got["max"] == (max(values) if values else None)
            assert got["runs_without_samples"] == exp["without"].get((check, night), 0)
    assert trend["durations"]["slo.controller_failover"]["nights"][NIGHT1]["runs_without_samples"] == 1
    assert trend["durations"]["slo.controller_failover"]["nights"][NIGHT2]["count"] >= 4


def test_failed_runs_list_names_checks_reports_and_reproduce_lines(runs_dir: Path, trend: dict[str, Any]) -> None:
    """Every run that did not pass is listed (no-verdict ones too) with its not-passing checks."""
    exp = _expected(runs_dir)
    want = {rid for rid, r in exp["runs"].items() if not r["verdict"] or r["verdict"]["status"] != "pass"}
    got = {r["run"]: r for r in trend["failed_runs"]}
    assert set(got) == want and "n1/a-allowed" not in got
    for rid, row in got.items():
        verdict = exp["runs"][rid]["verdict"]
        if verdict is None:
            assert row["status"] == "no verdict" and row["report"] is None and row["reason"]
            continue
        assert row["status"] == verdict["status"]
        bad = {(c["id"], c["status"], c["summary"]) for c in verdict["checks"]
               if c["status"] != "pass" and not c["allowed"]}
        assert {(c["id"], c["status"], c["summary"]) for c in row["checks"]} == bad
        assert (runs_dir / unquote(row["report"])).resolve() == (runs_dir / rid / "report.html").resolve()
        assert row["reproduce"].startswith("reproduce: kafka-chaos run experiments/")
        assert f"--seed {verdict['run']['seed']} --backend process" in row["reproduce"]
    assert got["n2/b-garbage"]["reason"].startswith("verdict.json is not a readable verdict")
    assert got["n1/a-aborted"]["reason"].startswith("no verdict.json (run status: aborted)")


def test_page_is_self_contained_and_links_every_failed_report(runs_dir: Path, trend: dict[str, Any]) -> None:
    """No script, stylesheet link or http(s) src/href; a relative link to each failed run's report."""
    html = (runs_dir / "trend.html").read_text()
    assert "<script" not in html and "<link" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html)
    hrefs = set(re.findall(r'href="([^"]+)"', html))
    for row in trend["failed_runs"]:
        if row["report"]:
            assert row["report"] in hrefs and (runs_dir / unquote(row["report"])).is_file()
    for href in hrefs:
        assert (runs_dir / unquote(href)).is_file(), href
    assert html.count("<svg") == 2 + len(SLO_CHECKS)
    assert "no verdict" in html and "n2/b-garbage" in html


def test_cli_report_trend_writes_page_and_json_to_out(spark: Any, runs_dir: Path, tmp_path: Path) -> None:
    """`kafka-chaos report --trend RUNS_DIR --out FILE` writes FILE and its .json; links stay valid."""
    out = tmp_path / "site" / "nightly.html"
    assert cli_main(["report", "--trend", str(runs_dir), "--out", str(out)]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["header"]["runs"] == 15
    for href in re.findall(r'href="([^"]+)"', out.read_text()):
        assert (out.parent / unquote(href)).is_file(), href


def test_runs_without_any_verdict_are_all_listed_as_no_verdict(spark: Any, tmp_path: Path) -> None:
    """With no verdict.json anywhere the trend still covers every run, each as "no verdict"."""
    for i in range(2):
        write_run(tmp_path / "runs" / "night" / f"r{i}", scenario()[:5], run={**RUN_JSON, "seed": i})
    trend = build_trend(tmp_path / "runs", spark=spark).trend
    assert trend["header"]["by_status"]["no verdict"] == 2 and trend["checks"] == {}
    assert [n["night"] for n in trend["nights"]] == ["2026-01-01"]
    assert {r["run"] for r in trend["failed_runs"]} == {"night/r0", "night/r1"}
