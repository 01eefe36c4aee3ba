"""Run metadata, result rules, verdict status, fault attribution, and the HTML / JUnit writers,
without Spark."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from spark_analysis.__main__ import main
from spark_analysis.checks.delivery.judge import lost_summary
from spark_analysis.checks.shared.permits import power_loss_truncations
from spark_analysis.facts.faults import build_fault_index, describe_target
from spark_analysis.ingest.runinfo import RunInfo, load_run_info, parse_seconds, run_info_from_mapping
from spark_analysis.report import render_runs
from spark_analysis.report.html import render_html
from spark_analysis.report.junit import render_junit
from spark_analysis.result import CheckResult, failed, passed, run_check, unknown, worst
from spark_analysis.verdict import (
    Verdict,
    apply_allow,
    apply_expect,
    expectation_note,
    read_verdict,
    run_metadata,
    run_status,
)
from tests.fixtures.histories import python_context, scenario


def test_allow_matches_full_id_family_or_last_part() -> None:
    info = RunInfo(allow=("duplicate", "slo", "partition.leader_in_isr"))
    assert info.is_allowed("delivery.duplicate")
    assert info.is_allowed("slo.rebalance")
    assert info.is_allowed("partition.leader_in_isr")
    assert not info.is_allowed("delivery.lost_write")


def test_run_json_is_read_tolerantly_and_slos_parse_durations(tmp_path: Path) -> None:
    assert load_run_info(tmp_path) == RunInfo()
    info = run_info_from_mapping({"verify": {"slo": {"rebalance": "2m", "controller_failover": "500ms",
                                                     "partition_unavailable": 40, "bad": "soon"}},
                                  "broker": "not a mapping"})
    assert info.slo == {"rebalance": 120.0, "controller_failover": 0.5, "partition_unavailable": 40.0}
    assert parse_seconds(True) is None and parse_seconds("30s") == 30.0


def test_title_names_kafka_version_or_reference_broker_and_its_bugs() -> None:
    assert run_info_from_mapping({"broker": {"flavour": "apache-kafka", "version": "3.7.1"}}).title == \
        "Apache Kafka 3.7.1"
    ref = run_info_from_mapping({"broker": {"flavour": "reference", "version": "0.1", "bugs": ["ack_early"]}})
    assert ref.title == "reference broker 0.1 with bug flags ack_early"


class _Boom:
    id = "delivery.lost_write"
    family = "delivery"
    needs: frozenset[str] = frozenset()

    def run(self, ctx: Any) -> CheckResult:
        raise RuntimeError("boom in the check")


def test_a_crashed_check_is_unknown_with_the_exception_never_pass() -> None:
    result = run_check(_Boom(), python_context(scenario()))
    assert result.status == "unknown"
    assert "RuntimeError: boom in the check" in result.summary
    assert "traceback" in result.metrics


def test_status_order_and_evidence_cap() -> None:
    assert worst(["pass", "unknown", "pass"]) == "unknown"
    assert worst(["unknown", "fail"]) == "fail"
    r = failed("x.y", "many", [{"i": i} for i in range(50)])
    assert len(r.evidence) == 20


def _verdict(allow: tuple[str, ...] = ()) -> Verdict:
    results = [
        passed("controller.unique", "ok", {"n": 1}),
        failed("delivery.lost_write", "lost 3 acked writes on orders/2 during fault #2 kill broker 1",
               [{"t": 1.0, "value": 5, "note": "<script>"}], {"lost": 3}, "fault #2 kill broker 1"),
        unknown("slo.rebalance", "no group.state events"),
        failed("delivery.duplicate", "1 value twice", [{"value": 1}]),
    ]
    run = RunInfo(experiment="exp", allow=allow, flavour="reference", version="0.1", bugs=("ack_early",))
    results = apply_allow(results, run)
    return Verdict(status=run_status(results), checks=tuple(results), run=run_metadata(run),
                   faults=({"id": "2", "kind": "kill", "target": "broker 1", "start": 1.0, "end": 2.0,
                            "label": "fault #2 kill broker 1"},),
                   timeline={"end_t": 3.0, "controller": [[0.0, 1, 1], [1.5, -1, None], [1.7, 2, 2]],
                             "faults": [{"id": "2", "kind": "kill", "start": 1.0, "end": 2.0, "label": "x"}],
                             "partitions": {"orders/0": [[0.0, 1, 3], [1.6, 2, 2]]},
                             "groups": {"g": [[0.0, "Stable", 1]]},
                             "rates": {"t": [0.0, 1.0], "acks_per_s": [5, 6], "polls_per_s": [5, 5],
                                       "lat_p50": [0.01, None], "lat_max": [0.02, None]}})


def test_run_status_is_the_worst_of_the_checks_not_allowed() -> None:
    assert _verdict().status == "fail"
    assert _verdict(allow=("lost_write", "duplicate")).status == "unknown"
    assert run_status([]) == "unknown"


def test_junit_has_one_testcase_per_check_with_failure_error_skipped() -> None:
    suite = ET.fromstring(render_junit(_verdict(allow=("duplicate",))))
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert len(cases) == 4 and suite.get("tests") == "4"
    assert cases["delivery.lost_write"].find("failure") is not None
    assert cases["slo.rebalance"].find("error").get("type") == "unknown"  # type: ignore[union-attr]
    assert cases["delivery.duplicate"].find("skipped") is not None
    assert suite.get("failures") == "1" and suite.get("errors") == "1" and suite.get("skipped") == "1"


def test_html_is_self_contained_names_the_broker_and_escapes_evidence() -> None:
    html = render_html(_verdict(), "name: exp\n")
    assert "reference broker 0.1 with bug flags ack_early" in html.split("</title>")[0]
    assert "<svg" in html and "&lt;script&gt;" in html and "<script>" not in html
    assert "lost 3 acked writes on orders/2 during fault #2 kill broker 1" in html
    for external in ("src=\"http", "href=\"http", "<link", "@import"):
        assert external not in html


def test_verdict_round_trips_through_json_and_reports_render_from_it(tmp_path: Path) -> None:
    v = _verdict()
    v.write(tmp_path)
    again = read_verdict(tmp_path)
    assert again.to_json() == json.loads(json.dumps(v.to_json()))
    written = render_runs([tmp_path], tmp_path / "index.html")
    assert {p.name for p in written} == {"report.html", "junit.xml", "index.html"}


def test_cli_render_only_exit_status_follows_the_verdict(tmp_path: Path) -> None:
    _verdict().write(tmp_path)
    assert main([str(tmp_path), "--render-only"]) == 1
    assert main([str(tmp_path / "missing")]) == 2


def test_fault_windows_name_the_fault_and_attribute_failures() -> None:
    idx = build_fault_index([
        {"type": "fault.start", "t": 5.0, "fault_id": 1, "kind": "kill", "target": [3]},
        {"type": "fault.end", "t": 7.0, "fault_id": 1},
        {"type": "fault.start", "t": 9.0, "fault_id": 2, "kind": "kill", "target": "broker:1"},
    ])
    assert [w.label for w in idx.windows] == ["fault #1 kill broker 3", "fault #2 kill broker 1"]
    at = idx.active_at(6.0)
    assert at is not None and at.fault_id == "1"
    nxt = idx.at_or_after(8.0)
    assert nxt is not None and nxt.fault_id == "2"
    assert idx.stopping_gracefully(10.0) == set() and idx.took_from_clients(1, 9.0, 10.0) == idx.windows[1]
    assert describe_target("[1, 2]") == "broker 1, broker 2"


def test_a_lost_write_acknowledged_before_a_power_loss_is_laid_to_it_and_the_summary_says_why() -> None:
    """A write acked at 4 s, inside a consumer's pause window, and lost: the power loss at 10 s, which undid what no
    replica had synced, explains it, not the pause in force at its ack; a write acked after the loss, as before."""
    lost = [{"role": "broker", "id": 1, "bytes": 900, "log_bytes": 400, "files": 3, "removed": 0, "segments": []}]
    idx = build_fault_index([
        {"type": "fault.start", "t": 3.0, "fault_id": 0, "kind": "pause", "target": "consumer:audit/0",
         "effect": {"nodes": [{"role": "consumer", "id": "audit/0"}], "down": True, "lost": []}},
        {"type": "fault.start", "t": 10.0, "fault_id": 1, "kind": "power_loss", "target": "broker:1",
         "effect": {"nodes": [{"role": "broker", "id": 1}], "down": True, "lost": lost}},
        {"type": "fault.end", "t": 15.0, "fault_id": 1},
        {"type": "fault.end", "t": 23.0, "fault_id": 0},
    ])
    before, after = idx.explaining_loss(4.0), idx.explaining_loss(16.0)
    assert before is not None and before.fault_id == "1" and before.effect.loses_unsynced
    assert after is not None and after.fault_id == "0"
    summary, fault = lost_summary({("orders", 0): 1}, [{"t": 4.0, "topic": "orders", "partition": 0}], idx)
    assert fault == "fault #1 power_loss broker 1"
    assert "power_loss broker 1" in summary and "log.flush.interval.messages" in summary


def test_a_power_loss_of_every_replica_of_a_partition_may_cut_its_log_back_and_of_some_replicas_not() -> None:
    """`power_loss_truncations`: orders/0's replicas (1, 2, 3) were all dark together at the power loss of broker 1
    (2 and 3 lost power in windows that hold its start), so its log may have been cut back under its readers;
    orders/1 kept a replica on broker 4, which never lost power."""
    lost = [{"role": "broker", "id": 1, "bytes": 1, "log_bytes": 1, "files": 1, "removed": 0, "segments": []}]
    events = [
        {"type": "partition.state", "t": 1.0, "topic": "orders", "partition": 0, "leader": 1, "replicas": [1, 2, 3],
         "isr": [1, 2, 3], "leader_epoch": 0},
        {"type": "partition.state", "t": 1.0, "topic": "orders", "partition": 1, "leader": 2, "replicas": [2, 3, 4],
         "isr": [2, 3, 4], "leader_epoch": 0},
        *({"type": "fault.start", "t": 10.0, "fault_id": k, "kind": "power_loss", "target": f"broker:{k}",
           "effect": {"nodes": [{"role": "broker", "id": k}], "down": True, "lost": lost}} for k in (1, 2, 3)),
        *({"type": "fault.end", "t": 15.0 + k, "fault_id": k} for k in (1, 2, 3)),
    ]
    cut = power_loss_truncations(python_context(events))
    assert set(cut) == {("orders", 0)} and "power_loss broker 1" in cut[("orders", 0)]


def _expecting(*checks: CheckResult, fail: tuple[str, ...]) -> Verdict:
    run = RunInfo(experiment="exp", expect_fail=fail, expect_why="KAFKA-0, fixed in 9.9")
    results, expectation = apply_expect(list(checks), run)
    return Verdict(status=run_status(results, None, expectation), checks=tuple(results), run=run_metadata(run),
                   expectation=expectation)


def test_an_expected_failure_that_happens_passes_the_run_and_is_reported_as_expected() -> None:
    v = _expecting(passed("controller.unique", "ok"), failed("delivery.lost_write", "lost 3", [{"t": 1}]),
                   fail=("delivery.lost_write",))
    assert v.status == "pass" and v.by_id("delivery.lost_write").expected
    assert v.expectation is not None and v.expectation["met"] == ["delivery.lost_write"]
    assert v.counts()["expected"] == 1 and v.counts()["fail"] == 0
    assert "1 of 1 happened" in (expectation_note(v.expectation) or "")
    case = next(c for c in ET.fromstring(render_junit(v)).findall("testcase") if c.get("name") == "delivery.lost_write")
    assert case.find("skipped") is not None and "KAFKA-0" in str(case.find("skipped").get("message"))
    assert "fail (expected)" in render_html(v)
    assert Verdict.from_json(json.loads(json.dumps(v.to_json()))).expectation == v.expectation


def test_an_expected_failure_that_does_not_happen_fails_the_run() -> None:
    v = _expecting(passed("delivery.lost_write", "all acked writes read"), fail=("delivery.lost_write",))
    assert v.status == "fail" and v.expectation is not None and v.expectation["unmet"] == ["delivery.lost_write"]
    case = ET.fromstring(render_junit(v)).find("testcase")
    assert case is not None and case.find("failure") is not None


def test_an_expected_check_that_did_not_run_or_could_not_decide_never_passes() -> None:
    assert _expecting(passed("controller.unique", "ok"), fail=("delivery.lost_write",)).status == "unknown"
    assert _expecting(unknown("delivery.lost_write", "no acks"), fail=("delivery.lost_write",)).status == "unknown"


def test_other_checks_still_fail_a_run_with_its_expected_failure() -> None:
    v = _expecting(failed("delivery.duplicate", "twice", [{"v": 1}]), failed("delivery.lost_write", "lost", [{}]),
                   fail=("delivery.lost_write",))
    assert v.status == "fail"


def test_the_group_lane_names_a_generation_only_when_the_observer_saw_one() -> None:
    """The Admin API's group description has no generation (KRaft and ZooKeeper alike): the lane says "Stable
    (generation unknown)", not "Stable gNone"; a generation seen is shown."""
    from spark_analysis.report.svg import render_timeline_svg

    svg = render_timeline_svg({"end_t": 10.0, "groups": {"billing": [[1.0, "Stable", None], [5.0, "Stable", 3]]}})
    assert "gNone" not in svg and "Stable (generation unknown)" in svg and "Stable g3" in svg


def test_the_rate_plot_draws_coinciding_series_both_visible() -> None:
    """Acks and polls at the same rate: the acks line wide and solid, the polls line dashed over it."""
    from spark_analysis.report.svg import render_timeline_svg

    rates = {"t": [0.0, 1.0, 2.0], "acks_per_s": [100, 100, 100], "polls_per_s": [100, 100, 100],
             "lat_max": [None, None, None]}
    svg = render_timeline_svg({"end_t": 2.0, "rates": rates})
    lines = [part for part in svg.split("<polyline")[1:] if "acks/s" in part or "polls/s" in part]
    assert len(lines) == 2 and "stroke-dasharray" not in lines[0] and "stroke-dasharray" in lines[1]


def test_the_timeline_draws_kafkas_internal_partitions_only_where_something_changed() -> None:
    """__consumer_offsets' 50 partitions would crowd out the user's topics: only those whose leader or ISR changed
    get a row."""
    from spark_analysis.report.timeline import build_timeline
    from tests.fixtures.histories import python_context

    def state(t: float, topic: str, p: int, leader: int, isr: list[int]) -> dict[str, object]:
        return {"t": t, "wall": 0, "src": "zk", "type": "partition.state", "topic": topic, "partition": p,
                "leader": leader, "leader_epoch": 0, "isr": isr, "replicas": [1, 2, 3]}

    events = [state(1.0, "orders", 0, 1, [1, 2, 3])]
    events += [state(1.0, "__consumer_offsets", p, 1, [1, 2, 3]) for p in range(50)]
    events += [state(5.0, "__consumer_offsets", 7, 2, [2, 3])]
    drawn = build_timeline(python_context(events))["partitions"]
    assert sorted(drawn) == ["__consumer_offsets/7", "orders/0"]
