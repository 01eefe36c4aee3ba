"""Every check on real Spark: passes on the healthy fixture run, fails for the right reason on the
fixture with its bug switched on (status, summary and evidence asserted), and the whole pipeline
writes verdict.json, report.html and junit.xml."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import BY_ID, CHECK_IDS
from spark_analysis.facts.context import spark_context
from spark_analysis.ingest.load import load_history
from spark_analysis.ingest.runinfo import RunInfo, load_run_info
from spark_analysis.result import CheckResult, run_check
from spark_analysis.verify import verify_run
from tests.fixtures.histories import EXPECTED_FAILURES, RUN_JSON, scenario
from tests.integration.spark_analysis.same_words import SAME_WORDS, assert_same_words

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def run_one(spark: Any, run_dir: Path, check_id: str) -> CheckResult:
    loaded = load_history(spark, run_dir / "history.jsonl")
    ctx = spark_context(load_run_info(run_dir), spark, loaded.events, loaded.type_counts, loaded.end_t)
    try:
        return run_check(BY_ID[check_id], ctx)
    finally:
        ctx.close()


def test_healthy_run_passes_every_check_and_writes_all_reports(spark: Any, make_run: Any) -> None:
    """The healthy fixture (a ZooKeeper run) passes every check that applies to ZooKeeper mode (all but
    `quorum.*`); verdict.json, report.html and junit.xml are written."""
    run_dir = make_run("healthy", scenario())
    verdict = verify_run(run_dir, spark=spark)
    statuses = {r.check_id: (r.status, r.summary) for r in verdict.checks}
    applicable = {c for c in CHECK_IDS if RunInfo().applies(c)}
    assert set(statuses) == applicable and applicable == {c for c in CHECK_IDS if not c.startswith("quorum.")}
    assert all(s == "pass" for s, _ in statuses.values()), statuses
    assert verdict.status == "pass"
    data = json.loads((run_dir / "verdict.json").read_text())
    assert data["status"] == "pass" and len(data["checks"]) == len(applicable)
    assert data["history"]["skipped_lines"] == 0
    assert data["timeline"]["rates"]["t"], "timeline has produce/consume rates"
    html = (run_dir / "report.html").read_text()
    assert "reference broker 0.1.0" in html and "<svg" in html and "fault #2" not in html.split("<svg")[0]
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    suite = ET.parse(run_dir / "junit.xml").getroot()
    assert suite.get("tests") == str(len(applicable)) and suite.get("failures") == "0" and suite.get("errors") == "0"


@pytest.mark.parametrize("bug", sorted(EXPECTED_FAILURES))
def test_check_fails_for_its_bug(spark: Any, make_run: Any, bug: str) -> None:
    """The check a bug exists for fails, with the expected summary and the evidence that proves it, on Spark and
    on the in-process evaluator (with the same words, for a check with one judge for both paths)."""
    check_id, text = EXPECTED_FAILURES[bug]
    run_dir = make_run(bug, scenario(**{bug: True}))
    result = run_one(spark, run_dir, check_id)
    assert result.status == "fail", result
    assert text in result.summary, result.summary
    assert 0 < len(result.evidence) <= 20
    EVIDENCE_ASSERTIONS.get(bug, lambda ev: None)(list(result.evidence))
    from spark_analysis.inprocess.evaluator import inprocess_checks

    reference = {r.check_id: r for r in inprocess_checks(run_dir)}
    assert reference[check_id].status == "fail"  # the reference agrees
    if check_id in SAME_WORDS:
        assert_same_words({check_id: result}, reference)


def _values(ev: list[dict[str, Any]]) -> set[Any]:
    return {e.get("value") for e in ev}


EVIDENCE_ASSERTIONS: dict[str, Any] = {
    "lost": lambda ev: (_values(ev) == {21, 23}) or pytest.fail(f"lost evidence {ev}"),
    "duplicate": lambda ev: ({(e["partition"], e["offset"]) for e in ev if e["value"] == 7} == {(0, 3), (0, 22)})
    or pytest.fail(f"duplicate evidence {ev}"),
    "inconsistent": lambda ev: (_values(ev) == {7, 9999} and {e["offset"] for e in ev} == {3})
    or pytest.fail(f"inconsistent evidence {ev}"),
    "reorder": lambda ev: ([(e["value"], e["offset"]) for e in ev] == [(5, 4), (9, 2)])
    or pytest.fail(f"reorder evidence {ev}"),
    "nonmonotonic": lambda ev: ([e["offset"] for e in ev] == [5, 3] and ev[0]["src"] == "consumer:c1")
    or pytest.fail(f"nonmonotonic evidence {ev}"),
    "skip": lambda ev: ([e["offset"] for e in ev] == [5, 7]) or pytest.fail(f"skip evidence {ev}"),
    "commit_back": lambda ev: ([e["offset"] for e in ev][-1] == 1) or pytest.fail(f"commit evidence {ev}"),
    "wrong_election": lambda ev: (ev[-1]["leader"] == 3 and ev[-1]["expected"] == [2])
    or pytest.fail(f"election evidence {ev}"),
    "second_controller": lambda ev: ({e["broker"] for e in ev} == {2, 3}) or pytest.fail(f"controller ev {ev}"),
}


def test_torn_history_of_a_crashed_run_verifies_and_unfinished_writes_are_not_lost(spark: Any, make_run: Any) -> None:
    """A history cut mid-line by a crash verifies without error; sends never acked are unknown, not lost."""
    events = [e for e in scenario() if e["t"] <= 10.0 and e["type"] != "run.end"]
    events.append({"t": 10.01, "wall": 1, "src": "producer:p1", "type": "send", "producer": "p1", "value": 500,
                   "key": "k0", "topic": "orders", "acks": "all"})
    events.append({"t": 10.02, "wall": 1, "src": "producer:p1", "type": "send", "producer": "p1", "value": 501,
                   "key": "k1", "topic": "orders", "acks": "all"})
    run = dict(RUN_JSON, status="crashed")
    run_dir = make_run("torn", events, run=run, torn=True)
    verdict = verify_run(run_dir, spark=spark)
    assert verdict.history["skipped_lines"] == 1
    lost = verdict.by_id("delivery.lost_write")
    assert lost.status != "fail", lost.summary
    assert lost.metrics["lost"] == 0 and lost.metrics["unfinished"] >= 1
    assert "unfinished sends" in lost.summary


def test_history_without_events_gives_unknown_never_pass(spark: Any, make_run: Any) -> None:
    """Checks with none of the events they need are unknown, and so is the run."""
    run_dir = make_run("empty", [{"t": 0.0, "wall": 1, "src": "engine", "type": "run.start"}])
    verdict = verify_run(run_dir, spark=spark, write=False)
    assert {r.status for r in verdict.checks} == {"unknown"}
    assert verdict.status == "unknown"


def test_allowed_failure_does_not_fail_the_run_and_is_skipped_in_junit(spark: Any, make_run: Any) -> None:
    """`verify.allow: [duplicate]` keeps the run green while the report still shows the failure."""
    run = json.loads(json.dumps(RUN_JSON))
    run["verify"]["allow"] = ["duplicate"]
    run_dir = make_run("allowed", scenario(duplicate=True), run=run)
    verdict = verify_run(run_dir, spark=spark)
    dup = verdict.by_id("delivery.duplicate")
    assert dup.status == "fail" and dup.allowed
    assert verdict.status == "pass"
    case = ET.parse(run_dir / "junit.xml").getroot().find("testcase[@name='delivery.duplicate']")
    assert case is not None and case.find("skipped") is not None


def test_cli_exit_status_is_1_on_failure(spark: Any, make_run: Any) -> None:
    """`python -m spark_analysis RUN_DIR` exits 1 when a check fails (in-process, shared session)."""
    from spark_analysis.__main__ import main

    assert main([str(make_run("cli", scenario(lost=True)))]) == 1


def test_spark_and_reference_agree_on_fixtures(spark: Any, make_run: Any) -> None:
    """The in-process evaluator and the Spark checks reach the same statuses, and the same words for the checks
    with one judge for both paths, on every check of the whole verify."""
    from spark_analysis.inprocess.evaluator import INPROCESS_CHECKS, inprocess_checks

    for bug in ("lost", "inconsistent", "skip"):
        run_dir = make_run(f"ref-{bug}", scenario(**{bug: True}))
        ref = {r.check_id: r for r in inprocess_checks(run_dir)}
        verdict = verify_run(run_dir, spark=spark, write=False)
        got = {r.check_id: r for r in verdict.checks if r.check_id in INPROCESS_CHECKS}
        assert {k: r.status for k, r in got.items()} == {k: r.status for k, r in ref.items()}, bug
        assert_same_words(got, ref)


def test_writes_beyond_a_group_behind_at_the_drains_end_are_unseen_on_both_paths(spark: Any, make_run: Any) -> None:
    """The healthy run with the polls of orders/0's last 3 acked writes taken out: after a drain that ended with
    the group behind (`group.drain` not ok) they are unseen (lost_write unknown); with no such event, lost; and
    their read stall stays open until the drain's end. The in-process evaluator and Spark agree on each."""
    from spark_analysis.inprocess.evaluator import inprocess_checks

    events = scenario()
    tail = sorted((e for e in events if e["type"] == "ack" and e["partition"] == 0), key=lambda e: e["offset"])[-3:]
    unread = {e["value"] for e in tail}
    events = [e for e in events if not (e["type"] == "poll" and e.get("value") in unread)]
    behind = {"t": events[-1]["t"] - 0.01, "wall": 1, "src": "group:billing", "type": "group.drain",
              "group": "billing", "ok": False, "detail": "member 0: orders/0: read up to 3 short of the end"}
    cases = (("behind", [*events[:-1], behind, events[-1]], "unknown"), ("caught", events, "fail"))
    for name, history, status in cases:
        run_dir = make_run(f"drain-{name}", history)
        got = verify_run(run_dir, spark=spark, write=False).by_id("delivery.lost_write")
        (ref,) = [r for r in inprocess_checks(run_dir) if r.check_id == "delivery.lost_write"]
        assert (got.status, ref.status) == (status, status), (got.summary, ref.summary)
        assert got.summary == ref.summary and got.metrics["lost"] == (0 if status == "unknown" else 3)
    # The read stall of the unread tail: open until the drain's end when the group ended behind (both paths).
    run_dir = make_run("drain-read", [*events[:-1], behind, events[-1]])
    got = verify_run(run_dir, spark=spark, write=False).by_id("slo.read_unavailable")
    (ref,) = [r for r in inprocess_checks(run_dir) if r.check_id == "slo.read_unavailable"]
    assert got.metrics["worst"][0] == ref.metrics["worst"][0] and got.summary == ref.summary
    assert got.metrics["worst"][0]["key"] == "billing orders/0" and got.metrics["open_at_end"] >= 1


def test_duplicate_is_reported_when_an_ack_of_the_duplicated_value_has_no_offset(spark: Any, make_run: Any) -> None:
    """An ack without an offset (librdkafka did not report one) does not crash delivery.duplicate
    (seen in a real ignore_idempotence run); the summary names the offsets the polls saw."""
    events = scenario(duplicate=True)
    for ev in events:
        if ev["type"] == "ack" and ev.get("value") == 7:
            ev.pop("offset", None)
    result = run_one(spark, make_run("duplicate_no_ack_offset", events), "delivery.duplicate")
    assert result.status == "fail", result
    assert "value 7 at orders/0@3 and orders/0@22" in result.summary, result.summary


def test_generation_reused_by_a_second_rebalance_fails_generation_monotonic(spark: Any, make_run: Any) -> None:
    """A consumer assigned twice under one generation id (a rebalance that did not bump the generation,
    as with the reference broker's generation_reuse flag) fails group.generation_monotonic."""
    events = scenario()
    for ev in events:
        if ev["type"] in ("assign", "group.state") and ev.get("generation") == 2:
            ev["generation"] = 1
    result = run_one(spark, make_run("generation_reuse", events), "group.generation_monotonic")
    assert result.status == "fail", result
    assert "in generation 1, which gave it" in result.summary and "consumer:c1" in result.summary, result.summary
    assert {e.get("generation") for e in result.evidence} == {1}
