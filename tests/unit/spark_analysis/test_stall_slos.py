"""`slo.write_unavailable` and `slo.read_unavailable` on tiny hand-written histories, without Spark: the
in-process evaluator (`inprocess_checks` on a written run) and the checks themselves on in-memory rows
(`python_context`) give the same answers. tests/integration/spark_analysis/test_stall_slos_spark.py holds
the Spark path to the same histories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import BY_ID
from spark_analysis.checks.slo.stalls import stall_fault
from spark_analysis.facts.faults import FaultWindow
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import (
    ClientHistory,
    python_context,
    read_idle_history,
    read_trailing_history,
    read_waiting_history,
    scenario,
    stall_slo_run,
    write_errors_history,
    write_latency_history,
    write_open_history,
    write_run,
    write_two_producers_history,
    write_without_latency_history,
)

WRITE, READ = "slo.write_unavailable", "slo.read_unavailable"


def results(tmp_path: Path, events: list[dict[str, Any]], run: dict[str, Any]) -> dict[str, CheckResult]:
    """Both stall checks by the reference; asserts the checks on in-memory rows agree (status, summary, metrics)."""
    ref = {r.check_id: r for r in inprocess_checks(write_run(tmp_path / "run", events, run=run))}
    for check_id in (WRITE, READ):
        rows = run_check(BY_ID[check_id], python_context(events, run))
        assert (rows.status, rows.summary, dict(rows.metrics)) == (
            ref[check_id].status, ref[check_id].summary, dict(ref[check_id].metrics)), check_id
        assert list(rows.evidence) == list(ref[check_id].evidence), check_id
    return ref


def worst(result: CheckResult) -> list[tuple[str, str, float, float | None, float, str | None]]:
    return [(w["key"], w["who"], w["start"], w["end"], w["duration"], w["fault_id"]) for w in result.metrics["worst"]]


def test_a_write_stall_covers_ack_latency_one_ack_taking_4s_fails_a_3s_slo(tmp_path: Path) -> None:
    write = results(tmp_path, write_latency_history(), stall_slo_run(write="3s"))[WRITE]
    assert write.status == "fail", write.summary
    assert "1 partition over the 3s SLO, worst orders/0 without an acknowledged write for 4.000s (producer p1)" \
        in write.summary
    assert worst(write) == [("orders/0", "p1", 2.0, 6.0, 4.0, None)]
    assert write.fault is None
    assert [e["type"] for e in write.evidence] == ["ack"] and write.evidence[0]["value"] == 2
    assert "sent at 2.000s" in write.evidence[0]["problem"] and "acknowledged after 4.000s" in \
        write.evidence[0]["problem"]
    assert write.metrics["distribution"]["max"] == 4.0 and write.metrics["over_slo"] == 1
    assert write.metrics["samples"] == [4.0] and write.metrics["slo_s"] == 3.0


def test_a_write_stall_of_4s_passes_a_5s_slo(tmp_path: Path) -> None:
    write = results(tmp_path, write_latency_history(), stall_slo_run(write="5s"))[WRITE]
    assert write.status == "pass", write.summary
    assert "within the 5s SLO" in write.summary and write.metrics["over_slo"] == 0


def test_without_a_declared_slo_the_write_stall_is_reported_and_passes(tmp_path: Path) -> None:
    write = results(tmp_path, write_latency_history(), stall_slo_run())[WRITE]
    assert write.status == "pass"
    assert write.summary.startswith("no SLO declared; 1 partition, worst orders/0") and "4.000s" in write.summary
    assert write.metrics["slo_s"] is None and "over_slo" not in write.metrics


def test_sends_erroring_until_an_ack_make_one_stall_from_the_first_failed_send_tied_to_the_fault(
        tmp_path: Path) -> None:
    write = results(tmp_path, write_errors_history(), stall_slo_run(write="5s"))[WRITE]
    assert write.status == "fail", write.summary
    assert worst(write) == [("orders/0", "p1", 2.0, 8.0, 6.0, "1")]
    assert write.summary.endswith("for 6.000s (producer p1) during fault #1 kill broker 1")
    assert write.fault == "fault #1 kill broker 1"
    assert write.metrics["worst"][0]["fault"] == "fault #1 kill broker 1"
    assert write.metrics["by_fault"] == {"1": [{"key": "orders/0", "who": "p1", "start": 2.0, "end": 8.0,
                                                "duration": 6.0}]}
    assert write.metrics["errors_with_partition"] == 3 and write.metrics["acks"] == 3
    assert [(e["type"], e["value"]) for e in write.evidence] == [("send.error", 2), ("ack", 5)]


def test_without_latency_ms_the_send_times_come_from_the_sends(tmp_path: Path) -> None:
    """A history written before send.error/ack carried latency_ms: the same stall, from the send events."""
    write = results(tmp_path, write_without_latency_history(), stall_slo_run(write="5s"))[WRITE]
    assert write.status == "fail" and worst(write) == [("orders/0", "p1", 2.0, 8.0, 6.0, "1")]


def test_errors_after_the_last_ack_are_an_open_stall_that_fails_only_past_the_slo(tmp_path: Path) -> None:
    events = write_open_history()
    over = results(tmp_path, events, stall_slo_run(write="5s"))[WRITE]
    assert over.status == "fail", over.summary
    assert worst(over) == [("orders/0", "p1", 10.0, None, 10.0, None)]
    assert "(still open at the end)" in over.summary
    assert over.metrics["open_at_end"] == 1
    assert over.metrics["distribution"]["max"] == 0.01, "the open stall is censored: not a closed sample"
    assert over.metrics["pending_without_partition"] == 1, "the send without an outcome is counted, not placed"
    assert "still open at 20.000s" in over.evidence[0]["problem"]
    within = results(tmp_path / "b", events, stall_slo_run(write="15s"))[WRITE]
    assert within.status == "pass", within.summary


def test_one_producers_acks_do_not_hide_another_producers_stall_on_the_same_partition(tmp_path: Path) -> None:
    write = results(tmp_path, write_two_producers_history(), stall_slo_run(write="5s"))[WRITE]
    assert write.status == "fail", write.summary
    assert worst(write) == [("orders/0", "p1", 2.0, 8.0, 6.0, "1")]


def test_a_stall_that_began_before_a_fault_is_tied_to_the_fault_in_force_during_it(tmp_path: Path) -> None:
    """p1's stall starts at 2.0; fault #1 (pause broker 1) starts at 4.0, during it."""
    write = results(tmp_path, write_two_producers_history(), stall_slo_run(write="5s"))[WRITE]
    assert write.fault == "fault #1 pause broker 1"
    assert write.metrics["by_fault"]["1"][0] == {"key": "orders/0", "who": "p1", "start": 2.0, "end": 8.0,
                                                 "duration": 6.0}


def test_fault_rule_prefers_the_fault_in_force_at_the_start_then_the_nearest_then_any_overlapping_one() -> None:
    windows = [FaultWindow("1", "kill", "broker 1", 1.0, 2.0), FaultWindow("2", "pause", "broker 2", 10.0, 11.0),
               FaultWindow("3", "kill", "broker 3", 12.0, None)]
    assert stall_fault(windows[1:], 4.0, 20.0) == 0, "none at the start or within 5 s of it: the first overlapping"
    assert stall_fault(windows, 7.5, 8.0) is None, "#2 begins after the stall ended"
    assert stall_fault(windows, 3.0, 50.0) == 0, "1 s after #1's end, 7 s before #2's start"
    assert stall_fault(windows, 7.5, 20.0) == 1, "#2 begins 2.5 s into it; #1 ended 5.5 s before"
    assert stall_fault(windows, 13.0, 14.0) == 2, "the latest in force at the start"


def test_a_stall_that_starts_just_before_a_kill_is_tied_to_the_kill_not_to_the_stop_that_ended_before() -> None:
    """upgrade-rolling.yaml on Apache Kafka 3.8.1 (2026-11-30): the roll's stop of broker 1 ended at 41.43 s, every
    partition's last ack before the stall came at 42.18 s, broker 3 was killed at 42.20 s and acks resumed at 57.8 s.
    The report named the stop; the kill is what stalled the writes."""
    windows = [FaultWindow("0.1", "stop", "broker 1", 22.28, 41.43), FaultWindow("2", "kill", "broker 3", 42.20, 69.3)]
    assert stall_fault(windows, 42.18, 57.76) == 1


def test_records_waiting_unpolled_make_a_read_stall_from_the_ack_that_made_them_wait(tmp_path: Path) -> None:
    read = results(tmp_path, read_waiting_history(), stall_slo_run(read="5s"))[READ]
    assert read.status == "fail", read.summary
    assert worst(read) == [("g1 orders/0", "g1", 2.01, 8.0, 5.99, "1")]
    assert read.summary.endswith(
        "worst g1 orders/0 received nothing while records waited for 5.990s during fault #1 kill broker 1")
    assert [(e["type"], e["value"]) for e in read.evidence] == [("ack", 2), ("poll", 2)]
    assert read.evidence[1]["group"] == "g1"


def test_a_read_stall_of_6s_passes_a_10s_slo(tmp_path: Path) -> None:
    read = results(tmp_path, read_waiting_history(), stall_slo_run(read="10s"))[READ]
    assert read.status == "pass" and "within the 10s SLO" in read.summary


def test_no_read_stall_while_the_producer_is_idle_and_nothing_waits(tmp_path: Path) -> None:
    """14 s without polls, but also without writes: the group is not stalled."""
    read = results(tmp_path, read_idle_history(), stall_slo_run(read="1s"))[READ]
    assert read.status == "pass", read.summary
    assert read.metrics["distribution"]["max"] == 0.04


def test_a_trailing_read_stall_is_open_until_the_groups_last_poll_not_the_end_of_the_history(
        tmp_path: Path) -> None:
    events = read_trailing_history()
    read = results(tmp_path, events, stall_slo_run(read="3s"))[READ]
    assert read.status == "fail", read.summary
    assert worst(read)[0] == ("g1 orders/1", "g1", 5.01, None, 4.04, None)
    assert "(still waiting at the group's last poll, or at a drain it ended behind)" in read.summary
    assert read.metrics["open_at_end"] == 1
    assert read.metrics["distribution"]["max"] == 0.04, "open: censored, not a closed sample"
    within = results(tmp_path / "b", events, stall_slo_run(read="5s"))[READ]
    assert within.status == "pass", "4.04 s open at the last poll, not 15 s to the end"


def test_a_trailing_read_stall_of_a_group_behind_at_its_drains_end_is_open_until_that_end(tmp_path: Path) -> None:
    """A client that stopped fetching (librdkafka 2.2.0 after repeated leader moves): its group's drain ended
    behind (`group.drain` not ok, at 15 s), so the records left waiting stall until then, not only until the
    group's last poll (5.05 s here)."""
    events = read_trailing_history()
    end = next(e for e in events if e["type"] == "run.end")
    drain = {"t": 15.0, "wall": end["wall"] - 5000, "src": "group:g1", "type": "group.drain", "group": "g1",
             "ok": False, "detail": "member 0: orders/1: read up to 3, the leader's end 5"}
    read = results(tmp_path, sorted([*events, drain], key=lambda e: e["t"]), stall_slo_run(read="5s"))[READ]
    assert read.status == "fail", read.summary
    assert worst(read)[0][:4] == ("g1 orders/1", "g1", 5.01, None) and worst(read)[0][4] == pytest.approx(9.99)


def test_a_group_stops_counting_when_it_polls_nothing_of_a_topic(tmp_path: Path) -> None:
    """Writes to a topic the group never polls are no read stall."""
    h = ClientHistory()
    for t in (1.0, 2.0):
        h.poll(t + 0.05, h.write(t, t + 0.01))
    h.write(3.0, 3.01, topic="audit")
    read = results(tmp_path, h.events(), stall_slo_run(read="1s"))[READ]
    assert read.status == "pass" and [w["key"] for w in read.metrics["worst"]] == ["g1 orders/0"]


@pytest.mark.parametrize("history", [write_latency_history, write_errors_history, write_open_history])
def test_the_read_check_is_unknown_without_polls(tmp_path: Path, history: Any) -> None:
    assert results(tmp_path, history(), stall_slo_run(read="1s"))[READ].status == "unknown"


def test_the_write_check_is_unknown_without_acks() -> None:
    events = [{"t": 0.0, "src": "engine", "type": "run.start"},
              {"t": 1.0, "src": "producer:p1", "type": "send", "producer": "p1", "value": 1, "topic": "orders"}]
    assert run_check(BY_ID[WRITE], python_context(events)).status == "unknown"


def test_the_healthy_fixture_passes_both_stall_checks_with_small_stalls(tmp_path: Path) -> None:
    by_id = results(tmp_path, scenario(), stall_slo_run(write="1s", read="1s"))
    write, read = by_id[WRITE], by_id[READ]
    assert (write.status, read.status) == ("pass", "pass"), (write.summary, read.summary)
    assert [w["key"] for w in write.metrics["worst"]] == ["orders/0", "orders/1"]
    assert [w["key"] for w in read.metrics["worst"]] == ["billing orders/0", "billing orders/1"]
    assert write.metrics["distribution"]["max"] <= 0.011 and read.metrics["distribution"]["max"] <= 0.041
    assert set(write.metrics["by_fault"]) == {"1", "2"}
