"""Issue 22 without Spark: a run that did not complete is never a pass (the status -> verdict rule,
verdict.json, the JUnit `run.complete` testcase, the report banner), and the damaged-history rule
of the delivery and consumer checks (threshold, fault windows, what stays a failure)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import DAMAGE
from spark_analysis.checks.shared.damage import apply_damage_rule, finding, judge_with_damage
from spark_analysis.facts.completion import PHASES, incompleteness
from spark_analysis.facts.faults import build_fault_index
from spark_analysis.ingest.load import DamagedLine, HistoryDamage
from spark_analysis.ingest.runinfo import RunInfo, run_info_from_mapping
from spark_analysis.report.html import render_html
from spark_analysis.report.junit import RUN_COMPLETE_CASE, render_junit
from spark_analysis.result import CheckResult, failed, passed, unknown
from spark_analysis.verdict import (
    Verdict,
    damage_note,
    read_verdict,
    run_metadata,
    run_status,
)
from tests.fixtures.histories import (
    interrupted_mid_chaos,
    killed_mid_chaos,
    python_context,
    run_json,
    scenario,
    with_chaos_phase,
)


def _ending(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] in ("phase", "run.end")]


def _info(**changes: Any) -> RunInfo:
    return run_info_from_mapping(run_json(**changes))


# -- the status -> verdict rule -------------------------------------------------------------------

def test_a_completed_run_with_its_run_end_is_complete() -> None:
    assert incompleteness(_info(), _ending(scenario())) is None
    # No run.json (verified elsewhere): the history's run.end decides.
    assert incompleteness(RunInfo(), _ending(scenario())) is None


def test_kill_9_mid_chaos_running_without_run_end_is_incomplete_naming_the_phases_never_reached() -> None:
    inc = incompleteness(_info(status="running", ended=None), _ending(killed_mid_chaos()))
    assert inc is not None
    assert inc.status == "running" and inc.missing_phases == ("heal", "drain", "teardown")
    assert inc.run_end_status is None
    assert "'running'" in inc.reason and "no run.end" in inc.reason
    assert "phases never reached: heal, drain, teardown" in inc.reason


def test_sigterm_interrupted_is_incomplete_with_the_error() -> None:
    inc = incompleteness(_info(status="interrupted"), _ending(interrupted_mid_chaos()))
    assert inc is not None and inc.status == "interrupted" and inc.missing_phases == ("heal", "drain")
    assert inc.reason == "run interrupted by SIGTERM; phases never reached: heal, drain"
    assert inc.to_json() == {"status": "interrupted", "missing_phases": ["heal", "drain"], "reason": inc.reason,
                             "run_json_status": "interrupted", "run_end_status": "interrupted"}


@pytest.mark.parametrize(("status", "events", "words"), [
    ("crashed", [{"type": "run.end", "status": "crashed", "error": "RuntimeError: boom"}],
     "run crashed: RuntimeError: boom"),
    ("aborted", [{"type": "run.end", "status": "aborted"}], "run aborted"),
    ("completed", [], "run.json says 'completed' but the history has no run.end"),
    ("completed", [{"type": "run.end", "status": "crashed"}], "the history's run.end says 'crashed'"),
    ("running", [{"type": "run.end", "status": "completed"}], "though the history's run.end says 'completed'"),
    (None, [], "the history has no run.end"),
])
def test_every_other_ending_is_incomplete(status: str | None, events: list[dict[str, Any]], words: str) -> None:
    phases = [{"type": "phase", "name": p} for p in PHASES]
    inc = incompleteness(RunInfo(status=status), phases + events)
    assert inc is not None and words in inc.reason, inc
    assert inc.missing_phases == ()


def test_an_incomplete_run_is_never_pass_but_a_real_violation_still_fails_it() -> None:
    inc = incompleteness(_info(status="running"), _ending(killed_mid_chaos()))
    ok = [passed("controller.unique", "ok"), passed("delivery.duplicate", "ok")]
    assert run_status(ok) == "pass"
    assert run_status(ok, inc) == "unknown"
    assert run_status([*ok, failed("controller.unique", "two controllers", [{"t": 1}])], inc) == "fail"
    assert run_status([], inc) == "unknown"
    # An allowed failure does not fail the run, and does not make an incomplete run pass either.
    allowed = [passed("a.b", "ok"), CheckResult("delivery.duplicate", "fail", "dup", allowed=True)]
    assert run_status(allowed) == "pass" and run_status(allowed, inc) == "unknown"


def test_context_completed_follows_the_same_rule() -> None:
    assert python_context(scenario()).completed
    assert not python_context(killed_mid_chaos(), run_json(status="running")).completed
    # run.json says completed but the history lacks run.end: the drain's polls may be missing too.
    assert not python_context(killed_mid_chaos()).completed
    assert python_context(with_chaos_phase(scenario())).completed


# -- verdict.json, JUnit, HTML ----------------------------------------------------------------------

DAMAGE_JSON = {"skipped_lines": 37, "by_kind": {"torn": 37}, "by_type": {"poll": 20, "ack": 13, "?": 4},
               "sample": [{"line": 80, "t": 9.1, "kind": "torn", "type": "poll", "text": '{"t":9.1,"src":"c'}]}


def _verdict(incomplete: bool = True, damaged: bool = False) -> Verdict:
    run = _info(status="running")
    inc = incompleteness(run, _ending(killed_mid_chaos())) if incomplete else None
    results = [passed("controller.unique", "ok"), unknown("delivery.lost_write", "cannot conclude: 37 damaged")]
    history: dict[str, Any] = {"lines": 412, "events": 412, "skipped_lines": 0}
    if damaged:
        history.update(events=375, skipped_lines=37, damage=DAMAGE_JSON)
    return Verdict(status=run_status(results, inc), checks=tuple(results), run=run_metadata(run), history=history,
                   incomplete=inc.to_json() if inc else None)


def test_verdict_json_records_why_and_keeps_its_fields(tmp_path: Path) -> None:
    v = _verdict()
    data = v.to_json()
    assert data["status"] == "unknown"
    assert data["incomplete"]["missing_phases"] == ["heal", "drain", "teardown"]
    assert "harness killed?" in data["incomplete"]["reason"]
    for key in ("format", "status", "counts", "run", "history", "faults", "not_selected", "analysis", "checks",
                "timeline"):
        assert key in data
    v.write(tmp_path)
    assert read_verdict(tmp_path).incomplete == json.loads(json.dumps(data["incomplete"]))
    assert _verdict(incomplete=False).to_json()["incomplete"] is None


def test_junit_has_a_run_complete_testcase_that_errors_with_the_reason() -> None:
    suite = ET.fromstring(render_junit(_verdict()))
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    error = cases[RUN_COMPLETE_CASE].find("error")
    assert error is not None and error.get("type") == "incomplete"
    assert "harness killed?" in str(error.get("message")) and "heal, drain, teardown" in str(error.text)
    assert cases[RUN_COMPLETE_CASE].get("classname") == "kafka_chaos.run"
    assert suite.get("tests") == "3" and suite.get("errors") == "2" and suite.get("failures") == "0"
    complete = ET.fromstring(render_junit(_verdict(incomplete=False)))
    assert RUN_COMPLETE_CASE not in {c.get("name") for c in complete.findall("testcase")}
    assert complete.get("tests") == "2" and complete.get("errors") == "1"


def test_junit_and_html_show_the_skipped_lines() -> None:
    v = _verdict(incomplete=False, damaged=True)
    suite = ET.fromstring(render_junit(v))
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["skipped_history_lines"] == "37"
    assert "37 of 412 history lines skipped" in str(suite.findtext("system-err"))
    html = render_html(v)
    assert 'id="damaged"' in html and "37 of 412 history lines skipped (37 torn; types poll 20, ack 13, ? 4)" in html
    assert 'id="incomplete"' not in html


def test_report_shows_an_incomplete_run_before_the_timeline() -> None:
    html = render_html(_verdict())
    banner = html.index('id="incomplete"')
    assert banner < html.index("<h2>Timeline</h2>")
    assert "the verdict cannot be pass" in html and "heal, drain, teardown" in html[banner:banner + 800]


def test_damage_note_wording() -> None:
    assert damage_note({"lines": 10, "skipped_lines": 0}) is None
    assert damage_note({"lines": 412, "skipped_lines": 37, "damage": DAMAGE_JSON}) == (
        "37 of 412 history lines skipped (37 torn; types poll 20, ack 13, ? 4), first at line 80")
    assert damage_note({"lines": 5, "skipped_lines": 1}) == "1 of 5 history lines skipped"


# -- the damaged-history rule -----------------------------------------------------------------------

FAULTS = build_fault_index([{"type": "fault.start", "t": 5.0, "fault_id": 1, "kind": "kill", "target": [3]},
                            {"type": "fault.end", "t": 7.0, "fault_id": 1}])


def _damage(*lines: tuple[str, float | None, str], total: int = 100_000) -> HistoryDamage:
    listed = tuple(DamagedLine(i + 1, t, kind, typ) for i, (typ, t, kind) in enumerate(lines))
    by_type: dict[str, int] = {}
    for d in listed:
        by_type[d.type] = by_type.get(d.type, 0) + 1
    return HistoryDamage(total, len(listed), {"torn": len(listed)}, by_type, listed)


LOST = failed("delivery.lost_write", "lost 3 acked writes on orders/0 during fault #1 kill broker 3",
              [{"value": 1}], {"lost": 3}, "fault #1 kill broker 3")
DUP = failed("delivery.duplicate", "1 value appear at more than one offset", [{"value": 7}], {"duplicated_values": 1})


def test_a_damaged_poll_inside_a_fault_window_turns_a_lost_write_into_unknown_with_the_count() -> None:
    found = finding(_damage(("poll", 6.0, "torn")), DAMAGE["delivery.lost_write"], FAULTS)
    assert found is not None and found.over and found.in_faults == 1
    r = judge_with_damage(LOST, found)
    assert r.status == "unknown" and r.fault is None
    assert r.summary.startswith("cannot conclude: 1 damaged history line of the events it reads (poll 1, 1 inside")
    assert "would fail: lost 3 acked writes" in r.summary
    assert r.metrics["damaged_lines"] == 1 and r.metrics["status_without_damage_rule"] == "fail"
    assert r.metrics["lost"] == 3 and r.evidence == LOST.evidence


def test_a_pass_over_the_threshold_is_unknown_too() -> None:
    ok = passed("delivery.lost_write", "all 100 acked writes were polled", {"acked": 100})
    many = _damage(*[("ack", 20.0 + i, "ill-typed") for i in range(101)])  # > 0.1% of 100,000, outside faults
    (r,) = apply_damage_rule([ok], many, FAULTS, DAMAGE)
    assert r.status == "unknown" and "101 damaged history lines" in r.summary


def test_below_the_threshold_and_outside_fault_windows_the_status_stands() -> None:
    few = _damage(("poll", 20.0, "torn"), ("ack", 21.0, "torn"))
    (r,) = apply_damage_rule([LOST], few, FAULTS, DAMAGE)
    assert r.status == "fail" and r.metrics["damaged_lines"] == 2 and r.fault == LOST.fault


def test_damaged_lines_of_other_types_leave_a_check_alone() -> None:
    other = _damage(("group.state", 6.0, "torn"), ("send", 6.0, "torn"))
    results = apply_damage_rule([LOST, passed("group.generation_monotonic", "ok")], other, FAULTS, DAMAGE)
    assert [r.status for r in results] == ["fail", "pass"]
    assert "damaged_lines" not in results[0].metrics


def test_a_line_of_unknown_type_or_time_counts_for_every_check_and_every_window() -> None:
    found = finding(_damage(("?", None, "torn")), DAMAGE["delivery.key_order"], FAULTS)
    assert found is not None and found.over and found.by_type == {"?": 1}
    no_faults = build_fault_index([])
    later = finding(_damage(("?", None, "torn")), DAMAGE["delivery.key_order"], no_faults)
    assert later is not None and not later.over


def test_a_failure_missing_lines_cannot_produce_stays_a_failure() -> None:
    (r,) = apply_damage_rule([DUP], _damage(("poll", 6.0, "torn")), FAULTS, DAMAGE)
    assert r.status == "fail" and "missing lines cannot produce this" in r.summary
    # A poll skip is exactly what a missing poll looks like: unknown.
    skip = failed("consumer.poll_skip", "1 poll skip", [{"offset": 5}], {"poll_skips": 1})
    (s,) = apply_damage_rule([skip], _damage(("poll", 6.0, "torn")), FAULTS, DAMAGE)
    assert s.status == "unknown"


def test_no_damage_changes_nothing() -> None:
    results = [LOST, DUP]
    assert apply_damage_rule(results, None, FAULTS, DAMAGE) == results
    assert apply_damage_rule(results, HistoryDamage(100), FAULTS, DAMAGE) == results


def test_the_spark_log_config_is_one_shared_file_in_the_cache_not_one_per_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each verify used to leave /tmp/kafka-chaos-spark-log4j2-<pid>.properties behind (issue 22)."""
    from spark_analysis.session.spark_session import LOG4J2_PROPERTIES, quiet_log_config

    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path))
    first = quiet_log_config()
    assert first.parent == tmp_path and first.read_text() == LOG4J2_PROPERTIES
    assert quiet_log_config() == first and [p.name for p in tmp_path.iterdir()] == [first.name]
