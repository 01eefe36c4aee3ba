"""The report's impact per fault (`spark_analysis.report.impact`): the stalls the stall SLOs tied to each fault,
the rebalances, elections and ISR changes of the timeline under it, the write-stall band of the timeline and the
worst stalls in the JUnit properties, all rendered from verdict.json alone."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from spark_analysis.report.html import render_html
from spark_analysis.report.impact import fault_impacts, stall_bands, worst_stalls
from spark_analysis.report.junit import render_junit
from spark_analysis.result import passed
from spark_analysis.verdict import Verdict

FAULTS = ({"id": "0", "kind": "kill", "target": "broker 2", "start": 10.0, "end": 20.0,
           "label": "fault #0 kill broker 2"},
          {"id": "1", "kind": "stop", "target": "broker 3", "start": 40.0, "end": 50.0,
           "label": "fault #1 stop broker 3"})
WRITE = {"key": "orders/0", "who": "p1", "start": 10.2, "end": 16.5, "duration": 6.3}
READ = {"key": "audit orders/0", "who": "audit", "start": 10.4, "end": 17.0, "duration": 6.6}


def _verdict() -> Verdict:
    timeline: dict[str, Any] = {
        "end_t": 60.0,
        "partitions": {"orders/0": [[0.5, 2, 3], [16.4, 1, 2], [30.0, 1, 3], [44.0, 1, 2]]},
        "groups": {"audit": [[1.0, "Stable", 1], [17.5, "PreparingRebalance", 1], [18.0, "Stable", 2]]},
    }
    checks = (
        passed("slo.write_unavailable", "max 6.3s", {"worst": [{**WRITE, "fault_id": "0", "fault": FAULTS[0]["label"]}],
                                                     "by_fault": {"0": [WRITE]}}),
        passed("slo.read_unavailable", "max 6.6s", {"worst": [{**READ, "fault_id": "0", "fault": FAULTS[0]["label"]}],
                                                    "by_fault": {"0": [READ]}}),
    )
    return Verdict(status="pass", checks=checks, run={"experiment": "x", "title": "Apache Kafka 3.9.2"},
                   faults=FAULTS, timeline=timeline)


def test_each_fault_gets_its_stalls_rebalances_elections_and_isr_changes() -> None:
    first, second = fault_impacts(_verdict())
    assert [s.key for s in first.write_stalls] == ["orders/0"] and first.write_stalls[0].duration == 6.3
    assert [s.key for s in first.read_stalls] == ["audit orders/0"]
    assert [(c.what, c.before, c.after) for c in first.elections] == [("orders/0", 2, 1)]
    assert [(c.t, c.before, c.after) for c in first.isr_changes] == [(16.4, 3, 2)]
    assert [(c.what, c.t) for c in first.rebalances] == [("audit", 17.5)]  # within the grace after the heal
    assert second.write_stalls == () and second.elections == ()
    assert [(c.t, c.after) for c in second.isr_changes] == [(44.0, 2)]  # the ISR regrowth at 30 s is no fault's


def test_the_report_shows_the_impact_and_a_write_stall_band_next_to_the_leader_lane() -> None:
    html = render_html(_verdict())
    assert "<h2>Impact per fault</h2>" in html
    assert 'id="impact-0"' in html and "orders/0 6.30s" in html and "audit orders/0 6.60s" in html
    assert "orders/0 leader 2→1 at 16.4s" in html
    assert "write stall 6.30s from 10.20s" in html  # the band's tooltip
    assert stall_bands(_verdict()) == {"orders/0": [(10.2, 16.5, 6.3)]}


def test_junit_properties_carry_the_worst_stalls() -> None:
    assert worst_stalls(_verdict()) == {"worst_write_stall_s": "6.300",
                                        "worst_write_stall": "orders/0 during fault #0 kill broker 2",
                                        "worst_read_stall_s": "6.600",
                                        "worst_read_stall": "audit orders/0 during fault #0 kill broker 2"}
    props = {p.get("name"): p.get("value") for p in ET.fromstring(render_junit(_verdict()).split("\n", 1)[1])
             .iter("property")}
    assert props["worst_write_stall_s"] == "6.300" and props["worst_read_stall"].startswith("audit orders/0")
