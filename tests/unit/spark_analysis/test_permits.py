"""Permitted anomalies: what a check found is a violation only where the configuration asked for the guarantee it
breaks; the rest is reported as permitted, naming the setting, and never fails the run by itself."""

from __future__ import annotations

from spark_analysis.checks.shared.permits import settle
from spark_analysis.ingest.runinfo import run_info_from_mapping
from spark_analysis.result import CheckResult, failed
from spark_analysis.verdict import Verdict, run_status

FOUND = failed("delivery.duplicate", "3 values appear at more than one offset", [{"t": 1.0, "value": 7}], {"n": 3})
NOUN = ("value at two offsets", "values at two offsets")


def _violations(n: int) -> CheckResult:
    return failed("delivery.duplicate", f"{n} values appear at more than one offset", [{"t": 2.0}], {"n": n})


def test_anomalies_all_permitted_pass_naming_the_setting() -> None:
    result = settle(FOUND, [("enable.idempotence=false (producer p0)", 3)], NOUN, _violations)
    assert result.status == "pass" and result.permitted == ("enable.idempotence=false (producer p0)",)
    assert result.summary == "3 values at two offsets: permitted by enable.idempotence=false (producer p0)"
    assert result.metrics["permitted"] == 3 and result.evidence[0]["permitted"] is True
    assert run_status([result]) == "pass"
    assert Verdict("pass", (result,), {}).counts()["permitted"] == 1


def test_violations_still_fail_with_the_permitted_ones_counted_beside_them() -> None:
    result = settle(FOUND, [("enable.idempotence=false (producer p0)", 2), (None, 1)], NOUN, _violations)
    assert result.status == "fail"
    assert result.summary == ("1 values appear at more than one offset (2 more permitted by enable.idempotence=false "
                              "(producer p0))")
    assert result.metrics["permitted_by"] == {"enable.idempotence=false (producer p0)": 2}


def test_nothing_permitted_leaves_the_failure_as_it_was() -> None:
    assert settle(FOUND, [(None, 3)], NOUN, _violations) is FOUND


def test_run_json_gives_each_writer_its_settings_and_each_topic_its_own_unclean_setting() -> None:
    info = run_info_from_mapping({
        "cluster": {"broker_config": {"unclean.leader.election.enable": "false"}},
        "topics": [{"name": "risky", "config": {"unclean.leader.election.enable": "true"}}, {"name": "safe"}],
        "workload": {"producers": [{"id": "p0", "topic": "safe", "acks": "1", "idempotence": False,
                                    "value_base": 1_000_000_000},
                                   {"id": "p1", "topic": "risky", "value_base": 2_000_000_000}]}})
    assert info.unclean_for("risky") and not info.unclean_for("safe")
    w = info.writer_of(1_000_000_005)
    assert w is not None and w.id == "p0" and w.acks == "1" and not w.idempotence
    assert info.writer_of(2_000_000_000).id == "p1" and info.writer_of(5) is None  # type: ignore[union-attr]
