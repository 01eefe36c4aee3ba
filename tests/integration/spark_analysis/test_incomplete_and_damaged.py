"""Issue 22 on real Spark, on small fixture histories: a run that did not complete is never a pass
(kill -9 and SIGTERM mid-chaos), and a damaged history (torn lines in the middle, a wrong-typed
field) is counted, printed, and makes the delivery checks unknown instead of a confident failure."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from spark_analysis.ingest.load import load_history
from spark_analysis.verify import verify_run
from tests.fixtures.histories import (
    history_lines,
    ill_typed,
    interrupted_mid_chaos,
    killed_mid_chaos,
    run_json,
    scenario,
    tear_middle,
    write_lines,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DELIVERY = ("delivery.lost_write", "delivery.duplicate", "delivery.inconsistent_offsets", "delivery.key_order")


def test_kill_9_mid_chaos_is_unknown_with_the_phases_never_reached_in_every_report(
        spark: Any, make_run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """run.json still `running`, no run.end, fault #2 never healed: verify says unknown (exit 1), never pass."""
    run_dir = make_run("killed", killed_mid_chaos(), run=run_json(status="running", ended=None))
    assert cli_main(["verify", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "incomplete run (running), cannot pass: the run never finished" in out
    assert "phases never reached: heal, drain, teardown" in out and "verdict: unknown" in out
    data = json.loads((run_dir / "verdict.json").read_text())
    assert data["status"] == "unknown"
    assert data["incomplete"]["status"] == "running"
    assert data["incomplete"]["missing_phases"] == ["heal", "drain", "teardown"]
    assert all(c["status"] != "fail" for c in data["checks"]), "missing data alone never fails a check"
    suite = ET.parse(run_dir / "junit.xml").getroot()
    case = suite.find("testcase[@name='run.complete']")
    assert case is not None and case.find("error") is not None
    assert int(suite.get("errors") or 0) >= 1
    assert 'id="incomplete"' in (run_dir / "report.html").read_text()


def test_sigterm_mid_chaos_is_unknown_and_a_violation_in_the_partial_history_still_fails(
        spark: Any, make_run: Any) -> None:
    """`interrupted` is unknown (heal and drain never ran); a second controller seen before the
    interruption is a real violation and fails the run (fail > unknown)."""
    run = run_json(status="interrupted", error="interrupted by SIGTERM")
    verdict = verify_run(make_run("sigterm", interrupted_mid_chaos(), run=run), spark=spark, write=False)
    assert verdict.status == "unknown"
    assert verdict.incomplete is not None and verdict.incomplete["missing_phases"] == ["heal", "drain"]
    assert verdict.incomplete["reason"].startswith("run interrupted by SIGTERM")
    assert verdict.by_id("controller.unique").status == "pass", "checks that can decide keep their status"
    bad = verify_run(make_run("sigterm-bug", interrupted_mid_chaos(second_controller=True), run=run), spark=spark,
                     write=False)
    assert bad.by_id("controller.unique").status == "fail" and bad.status == "fail"
    assert bad.incomplete is not None


def test_37_torn_lines_in_the_middle_are_counted_printed_and_make_the_delivery_checks_unknown(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines, torn = tear_middle(history_lines(scenario()), 37)
    run_dir = write_lines(tmp_path / "torn37", lines)
    assert cli_main(["verify", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert f"damaged history: 37 of {len(lines)} history lines skipped (37 torn" in out
    assert f"first at line {torn[0]}" in out
    data = json.loads((run_dir / "verdict.json").read_text())
    assert data["history"]["skipped_lines"] == 37 and data["history"]["damage"]["by_kind"] == {"torn": 37}
    assert data["incomplete"] is None and data["status"] == "unknown"
    checks = {c["id"]: c for c in data["checks"]}
    for check_id in DELIVERY:
        assert checks[check_id]["status"] == "unknown", checks[check_id]
        assert "damaged history line" in checks[check_id]["summary"]
        assert checks[check_id]["metrics"]["damaged_lines"] > 0 and checks[check_id]["fault"] is None
    assert not [c for c in data["checks"] if c["status"] == "fail"], "no confident wrong answer"
    assert 'id="damaged"' in (run_dir / "report.html").read_text()
    suite = ET.parse(run_dir / "junit.xml").getroot()
    assert "37 of" in str(suite.findtext("system-err"))


def test_a_wrong_typed_value_is_a_skipped_line_not_a_null_and_does_not_blame_a_fault(
        spark: Any, make_run: Any) -> None:
    """`"value": "not-a-number"` on a poll during fault #1: counted as skipped (ill-typed), not read as a
    poll without a value; lost_write and poll_skip, which would fail on the gap, are unknown."""
    events, line = ill_typed(scenario(), "poll", "value", "not-a-number", nth=10)
    run_dir = make_run("ill-typed", events)
    loaded = load_history(spark, run_dir / "history.jsonl")
    assert loaded.skipped_lines == 1 and loaded.total_lines == len(events)
    assert [(d.line, d.kind, d.type) for d in loaded.damage.listed] == [(line, "ill-typed", "poll")]
    assert loaded.type_counts["poll"] == sum(1 for e in events if e["type"] == "poll") - 1
    verdict = verify_run(run_dir, spark=spark, write=False)
    lost, skip = verdict.by_id("delivery.lost_write"), verdict.by_id("consumer.poll_skip")
    assert lost.status == "unknown" and lost.metrics["status_without_damage_rule"] == "fail", lost
    assert skip.status == "unknown" and "1 inside fault windows" in skip.summary
    assert verdict.status == "unknown" and verdict.history["skipped_lines"] == 1


def test_a_member_id_as_group_leader_is_fine_a_non_integer_partition_leader_is_not(
        spark: Any, make_run: Any) -> None:
    """`leader` is a member id in group.state (the fixture's "m1", real observers' too) and a broker id
    everywhere else: only the latter is ill-typed."""
    events, line = ill_typed(scenario(), "partition.state", "leader", "two")
    loaded = load_history(spark, make_run("leaders", events) / "history.jsonl")
    assert [(d.line, d.kind, d.type) for d in loaded.damage.listed] == [(line, "ill-typed", "partition.state")]
    leaders = {r["leader"] for r in loaded.events.where("type = 'partition.state'").select("leader").collect()}
    assert leaders and all(isinstance(x, int) for x in leaders)
    assert loaded.type_counts["group.state"] == sum(1 for e in events if e["type"] == "group.state")


def test_a_complete_50_mb_line_is_an_event_not_a_torn_line(spark: Any, make_run: Any) -> None:
    """Issue 36: an `observer.error` whose text is 50 MB, written whole, was read as torn (Jackson's 20,000,000
    character limit on one string, from 2.15). It is an event like any other, and the run passes."""
    events = scenario()
    at = events[5]
    events.insert(6, {"type": "observer.error", "src": "observer", "t": at["t"], "wall": at["wall"],
                      "observer": "admin", "error": "x" * 50_000_000})
    run_dir = make_run("long-line", events)
    verdict = verify_run(run_dir, spark=spark, write=False)
    assert verdict.history["skipped_lines"] == 0, verdict.history["damage"]
    assert verdict.history["types"]["observer.error"] == 1
    assert verdict.status == "pass"
