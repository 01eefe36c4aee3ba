"""`kafka-chaos compare` on real Spark: two fixture runs of the same experiment and seed that differ
in a known way (run B's controller failover during fault #2 takes 6.5 s instead of 0.3 s, so
`slo.controller_failover` fails in B only, and B's acks on orders/0 stall for 1.2 s in that fault),
plus a third run of another experiment and seed with no verdict.json. The JSON's figures are the
ones the fixture's history implies; the page shows them, escaped, self-contained, with the
mismatch warning when (and only when) the runs differ in experiment or seed."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import CHECK_IDS
from spark_analysis.compare import COMPARE_HTML, COMPARE_JSON, cmd_compare, compare_runs, default_out_dir
from spark_analysis.compare.document import compare_document
from spark_analysis.compare.facts import NOT_VERIFIED, FaultFacts, Measures, RunFacts, RunHeader
from spark_analysis.facts.faults import FaultWindow
from spark_analysis.verify import verify_run
from tests.fixtures.histories import RUN_JSON, Event, scenario, write_run

pytestmark = [pytest.mark.integration, pytest.mark.spark]

STALL_FROM, STALL_UNTIL = 9.5, 10.7
"""Run B: acks on orders/0 for sends in [9.5, 10.7) all arrive at 10.7 (in offset order)."""


def stalled_acks(events: list[Event]) -> list[Event]:
    out = copy.deepcopy(events)
    late = [e for e in out if e["type"] == "ack" and e["partition"] == 0 and STALL_FROM <= e["t"] - 0.01 < STALL_UNTIL]
    assert late, "the fixture has acks on orders/0 in the stall window"
    for k, ev in enumerate(sorted(late, key=lambda e: e["offset"])):
        ev["t"] = round(STALL_UNTIL + k * 0.001, 4)
    return sorted(out, key=lambda e: e["t"])


def run_json(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(RUN_JSON)
    data.update(changes)
    return data


@pytest.fixture(scope="module")
def runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    a = write_run(root / "kafka-3.8", scenario(),
                  run=run_json(broker={"flavour": "apache-kafka", "version": "3.8.0", "bugs": []}))
    b = write_run(root / "kafka-3.9", stalled_acks(scenario(slow_failover=True)),
                  run=run_json(broker={"flavour": "apache-kafka", "version": "3.9.0", "bugs": []}))
    other = write_run(root / "other", scenario(),
                      run=run_json(experiment="<other> & co", seed=8, status="aborted"))
    for run_dir in (a, b):
        verify_run(run_dir, spark=spark)
    return {"a": a, "b": b, "other": other}


@pytest.fixture(scope="module")
def same(spark: Any, runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    paths = compare_runs(runs["a"], runs["b"], tmp_path_factory.mktemp("cmp"), spark)
    return json.loads(paths.json.read_text()), paths.html.read_text()


def fault(doc: dict[str, Any], fid: str) -> dict[str, Any]:
    return next(f for f in doc["faults"] if f["fault_id"] == fid)


def section(html: str, fid: str) -> str:
    """The page's part for one fault (from its heading to the next one)."""
    start = html.index(f'id="fault-{fid}"')
    end = html.find("<h3", start + 1)
    return html[start:end if end > 0 else html.index("<h2", start)]


def test_header_names_each_run_and_no_mismatch_warning_for_same_experiment_and_seed(same: Any) -> None:
    doc, html = same
    a, b = doc["runs"]["a"], doc["runs"]["b"]
    assert (a["name"], a["flavour"], a["version"], a["verdict_status"]) == (
        "kafka-3.8", "apache-kafka", "3.8.0", "pass")
    assert (b["name"], b["version"], b["verdict_status"], b["seed"], b["backend"]) == (
        "kafka-3.9", "3.9.0", "fail", 7, "process")
    assert doc["same_experiment"] is True and doc["same_seed"] is True and doc["warnings"] == []
    assert "Apache Kafka 3.8.0" in html and "Apache Kafka 3.9.0" in html and "kafka-3.9" in html
    assert 'class="warn"' not in html


def test_runs_on_two_releases_make_an_upgrade_report_naming_the_regression_and_the_slower_fault(same: Any) -> None:
    """3.8.0 (A) to 3.9.0 (B): the controller failover check passed on A and fails on B, and fault #2's failover
    grew; the page is titled as the upgrade and says so before the runs' header."""
    doc, html = same
    up = doc["upgrade"]
    assert (up["from"], up["to"], up["direction"]) == ("3.8.0", "3.9.0", "upgrade")
    assert up["regressions"] == doc["differing_checks"] == ["slo.controller_failover"] and up["fixed"] == []
    assert {(s["fault_id"], s["measure"]) for s in up["slower"]} >= {("2", "controller_failover_s")}
    assert all(s["b"] > s["a"] for s in up["slower"])
    assert "upgrade report:" in html[:html.index("</title>")] and "3.8.0 → 3.9.0" in html
    assert html.index('id="upgrade"') < html.index("<h2>Runs</h2>")


def test_faults_line_up_by_schedule_index_with_the_slower_failover_in_run_b(same: Any) -> None:
    doc, html = same
    assert [f["fault_id"] for f in doc["faults"]] == ["1", "2"]
    f1, f2 = fault(doc, "1"), fault(doc, "2")
    assert (f2["a"]["kind"], f2["a"]["target"], f2["a"]["start"], f2["a"]["duration_s"]) == (
        "kill", "broker 1", 9.0, 2.0)
    assert f1["summary"]["controller_failover_s"] == {"a": None, "b": None}
    assert f2["summary"]["controller_failover_s"] == {"a": 0.3, "b": 6.5}
    [fa] = f2["a"]["controller_failovers"]
    [fb] = f2["b"]["controller_failovers"]
    assert (fa["at_s"], fa["duration_s"], fa["what"]) == (0.0, 0.3, "failover from 1 to 2")
    assert (fb["duration_s"], fb["still_open"]) == (6.5, False)
    part = section(html, "2")
    assert "0.300 s" in part and "6.500 s" in part and "+6.200 s" in part


def test_leaderless_windows_per_partition_per_fault(same: Any) -> None:
    doc, html = same
    for side in ("a", "b"):
        f1 = {w["subject"]: (w["at_s"], w["duration_s"]) for w in fault(doc, "1")[side]["leaderless_windows"]}
        f2 = {w["subject"]: (w["at_s"], w["duration_s"]) for w in fault(doc, "2")[side]["leaderless_windows"]}
        assert f1 == {"__consumer_offsets/2": (0.0, 0.2)}
        assert f2 == {"orders/0": (0.0, 0.4), "__consumer_offsets/0": (0.0, 0.4), "__consumer_offsets/2": (0.0, 0.4)}
    assert fault(doc, "2")["summary"]["leaderless_partitions"] == {"a": 3, "b": 3}
    assert "orders/0" in section(html, "2") and "0.400 s" in section(html, "2")


def test_elections_name_the_new_leader_and_the_rule(same: Any) -> None:
    doc, html = same
    got = {(e["partition"], e["at_s"], e["old_leader"], e["new_leader"], e["rule"])
           for e in fault(doc, "2")["b"]["elections"]}
    assert got == {("orders/0", 0.4, 1, 2, "offline"), ("__consumer_offsets/0", 0.4, 1, 2, "offline"),
                   ("__consumer_offsets/2", 0.4, 1, 3, "offline")}
    [e1] = fault(doc, "1")["a"]["elections"]
    assert (e1["partition"], e1["at_s"], e1["old_leader"], e1["new_leader"], e1["rule"]) == (
        "__consumer_offsets/2", 0.2, 3, 1, "offline")
    assert re.search(r"\+0\.400 s: <b>broker 3</b> \(was 1\), rule <i>offline</i>", section(html, "2"))


def test_isr_changes_are_timed_from_the_fault_start(same: Any) -> None:
    doc, html = same
    changes = fault(doc, "2")["a"]["isr_changes"]
    orders0 = [(c["at_s"], c["removed"], c["added"]) for c in changes if c["partition"] == "orders/0"]
    assert orders0 == [(0.4, [1], []), (2.3, [], [1])]
    assert fault(doc, "2")["summary"]["isr_changes"] == {"a": 7, "b": 7}
    # The broker killed by fault #1 rejoins 0.5 s after the heal: still fault #1's (within its grace).
    f1 = [(c["partition"], c["at_s"], c["added"]) for c in fault(doc, "1")["a"]["isr_changes"] if c["added"]]
    assert ("orders/0", 2.5, [3]) in f1 and len(f1) == 5
    assert "+2.300 s: [2, 3] → [2, 3, 1] (+1)" in section(html, "2")


def test_rebalances_are_counted_with_their_duration(same: Any) -> None:
    doc, _html = same
    for side in ("a", "b"):
        reb = fault(doc, "2")[side]["rebalances"]
        assert (reb["count"], reb["total_s"], reb["max_s"]) == (1, 0.5, 0.5)
        assert reb["items"][0]["subject"] == "billing" and reb["items"][0]["at_s"] == 2.5
        assert fault(doc, "1")[side]["rebalances"]["count"] == 0
        # The group's first join, before any fault, is kept apart.
        assert doc["outside_faults"][side]["rebalances"]["count"] == 1


def test_ack_stall_is_the_longest_wait_per_partition_in_the_fault_window(same: Any) -> None:
    doc, html = same
    stalls = {side: {s["partition"]: s for s in fault(doc, "2")[side]["ack_stalls"]} for side in ("a", "b")}
    assert set(stalls["a"]) == set(stalls["b"]) == {"orders/0", "orders/1"}
    assert stalls["a"]["orders/0"]["max_wait_s"] == 0.01
    worst = stalls["b"]["orders/0"]
    assert (worst["max_wait_s"], worst["sent_at_s"]) == (1.2, 0.5)
    assert stalls["b"]["orders/1"]["max_wait_s"] == 0.01
    assert fault(doc, "2")["summary"]["longest_ack_stall_s"] == {"a": 0.01, "b": 1.2}
    assert fault(doc, "2")["summary"]["unanswered_sends"] == {"a": 0, "b": 0}
    # The stall began after fault #2 started: fault #1's window ends there, so it shows no stall.
    assert fault(doc, "1")["summary"]["longest_ack_stall_s"] == {"a": 0.01, "b": 0.01}
    assert "<b>1.200 s</b>" in section(html, "2")


def test_check_statuses_side_by_side_with_the_difference_highlighted(same: Any) -> None:
    doc, html = same
    assert [c["id"] for c in doc["checks"]] == list(CHECK_IDS)
    assert doc["differing_checks"] == ["slo.controller_failover"]
    row = next(c for c in doc["checks"] if c["id"] == "slo.controller_failover")
    assert (row["a"]["status"], row["b"]["status"]) == ("pass", "fail")
    assert "6.500s" in row["b"]["summary"]
    assert re.search(r'<tr class="differs"><td class="mono">slo\.controller_failover</td>', html)
    assert html.count('<tr class="differs"><td class="mono">slo.') == 1


def test_page_is_self_contained(same: Any) -> None:
    _doc, html = same
    assert "<script" not in html and "<link" not in html and "http://" not in html and "https://" not in html
    assert "<style>" in html


def test_different_experiment_and_seed_warn_prominently_and_unverified_checks_never_pass(
        spark: Any, runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    paths = compare_runs(runs["b"], runs["other"], out, spark)
    doc = json.loads((out / COMPARE_JSON).read_text())
    html = (out / COMPARE_HTML).read_text()
    assert doc["same_experiment"] is False and doc["same_seed"] is False
    assert any("different experiments" in w and "<other> & co" in w for w in doc["warnings"])
    assert any("different seeds (run A: 7, run B: 8)" in w for w in doc["warnings"])
    assert paths.warnings == tuple(doc["warnings"])
    # The warning box comes before the run header, and run values are escaped everywhere.
    assert html.index('class="warn"') < html.index("<h2>Runs</h2>")
    assert "&lt;other&gt; &amp; co" in html and "<other>" not in html
    assert doc["runs"]["b"]["verdict_status"] == NOT_VERIFIED and doc["runs"]["b"]["run_status"] == "aborted"
    assert {c["b"]["status"] for c in doc["checks"]} == {NOT_VERIFIED}
    assert "no verdict.json" in " ".join(doc["notes"]["b"])
    assert set(doc["differing_checks"]) == set(CHECK_IDS)
    assert html.count('<span class="badge not-verified">not verified</span>') == len(CHECK_IDS)
    # Still compared: the unverified run's faults are measured from its history.
    assert fault(doc, "2")["summary"]["controller_failover_s"] == {"a": 6.5, "b": 0.3}


def test_cli_body_writes_next_to_run_b_by_default(spark: Any, runs: dict[str, Path], capsys: Any) -> None:
    assert cmd_compare(runs["a"], runs["b"]) == 0
    out = default_out_dir(runs["a"], runs["b"])
    assert out == runs["b"].parent / "compare-kafka-3.8-vs-kafka-3.9"
    assert (out / COMPARE_HTML).is_file() and (out / COMPARE_JSON).is_file()
    printed = capsys.readouterr()
    assert "checks that differ: slo.controller_failover" in printed.out and str(out / COMPARE_HTML) in printed.out
    assert "upgrade 3.8.0 -> 3.9.0: 1 regression (slo.controller_failover), 0 fixed" in printed.out
    assert printed.err == ""


def test_cli_body_refuses_a_directory_that_is_not_a_run(runs: dict[str, Path], tmp_path: Path, capsys: Any) -> None:
    assert cmd_compare(runs["a"], tmp_path) == 2
    assert "is not a run directory" in capsys.readouterr().err


def _facts(name: str, faults: tuple[tuple[str, str], ...]) -> RunFacts:
    header = RunHeader(name, name, "exp", 1, "process", "reference", "0.1.0", "reference broker 0.1.0",
                       "completed", "pass")
    windows = tuple(FaultFacts(FaultWindow(fid, kind, "broker 1", 10.0 * i, 10.0 * i + 5), Measures())
                    for i, (fid, kind) in enumerate(faults))
    return RunFacts(header, windows, Measures(), ())


def test_schedule_differences_are_warnings() -> None:
    doc = compare_document(_facts("x", (("0", "kill"), ("1", "pause"), ("2", "stop"))),
                           _facts("y", (("0", "kill"), ("1", "kill"))))
    assert doc["warnings"] == ["fault #1 is pause in run A but kill in run B",
                               "fault #2 (stop) happened in run A only; in run B it was not injected"]
    assert [f["fault_id"] for f in doc["faults"]] == ["0", "1", "2"] and fault(doc, "2")["b"] is None


def test_a_rolling_restarts_stops_line_up_after_their_operation_by_step() -> None:
    doc = compare_document(_facts("x", (("10", "kill"), ("2.10", "stop"), ("2.2", "stop"), ("3", "kill"))),
                           _facts("y", (("2.1", "stop"),)))
    assert [f["fault_id"] for f in doc["faults"]] == ["2.1", "2.2", "2.10", "3", "10"]


def test_a_run_without_history_has_unknown_faults_not_missing_ones() -> None:
    header = dataclasses.replace(_facts("bare", ()).header, verdict_status=NOT_VERIFIED)
    no_history = RunFacts(header, (), Measures(), (), measured=False)
    doc = compare_document(_facts("x", (("0", "kill"),)), no_history)
    assert doc["warnings"] == ["run B has no history: its faults and figures are unknown, not absent"]
    assert fault(doc, "0")["b"] is None and fault(doc, "0")["b_measured"] is False
    assert {c["b"]["status"] for c in doc["checks"]} == {NOT_VERIFIED}


def test_an_upgrade_report_needs_one_flavour_on_two_releases_and_a_lower_b_is_a_downgrade() -> None:
    def on(version: str, flavour: str = "apache-kafka") -> RunFacts:
        facts = _facts(version, (("0", "kill"),))
        return dataclasses.replace(facts, header=dataclasses.replace(facts.header, version=version, flavour=flavour))

    assert compare_document(on("3.9.2"), on("3.9.2"))["upgrade"] is None
    assert compare_document(on("3.9.2"), on("4.1.0", "confluent"))["upgrade"] is None
    down = compare_document(on("4.1.0"), on("3.9.2"))["upgrade"]
    assert (down["direction"], down["from"], down["to"], down["regressions"]) == ("downgrade", "4.1.0", "3.9.2", [])
