"""The checker's self-test (docs/kafka-behaviour.md §10): every check fails on its must-fail history and passes
on its must-pass history, on the Python rows (the checks that run on collected rows) and on the single-process
reference; and the docs' rule and self-test tables stay in step with the registry, the recorded histories of the
retired reference broker's bug flags (tests/data/recorded/reference-<flag>) and the fixture switches. (The Spark
path: tests/integration/spark_analysis/test_self_test_spark.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_analysis.checks import ALL_CHECKS, BY_ID, CHECK_IDS
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult, reads_frames, run_check
from tests.fixtures.histories import EXPECTED_FAILURES, python_context, write_run
from tests.fixtures.recorded import RECORDED
from tests.fixtures.self_test import SELF_TEST, Case

DOC = Path(__file__).resolve().parents[3] / "docs" / "kafka-behaviour.md"
SPARK_ONLY = {c.id for c in ALL_CHECKS if reads_frames(c)}
"""Checks that gather their facts from Spark frames (`frames = True`): no Python-rows path (the in-process
evaluator has its own)."""


def _section(number: int) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {number}.")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def _table_ids(section: str) -> list[str]:
    """The backticked id in the first cell of each table row."""
    return re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", section, flags=re.M)


def test_every_check_has_a_must_fail_and_a_must_pass_history() -> None:
    assert sorted(SELF_TEST) == sorted(CHECK_IDS)


def test_the_docs_self_test_table_lists_every_check_once_in_registry_order() -> None:
    assert _table_ids(_section(10)) == list(CHECK_IDS)


def test_the_docs_tables_name_every_recorded_bug_flag_history_and_every_fixture_switch() -> None:
    rules, self_test = _section(9), _section(10)
    flagged = [d.name for d in RECORDED.iterdir() if d.name.startswith("reference-")
               and not d.name.startswith("reference-clean-")]
    assert len(flagged) == 13
    for name in flagged:
        assert f"`{name}`" in rules and f"`{name}`" in self_test, name
    for switch in EXPECTED_FAILURES:
        assert f"fixture `{switch}`" in rules, switch


def test_every_rule_row_names_a_check_or_says_why_there_is_none() -> None:
    rows = [r for r in _section(9).splitlines() if re.match(r"^\| [A-Z]\d+ \|", r)]
    assert len(rows) >= 30
    for row in rows:
        check = row.split("|")[4]  # | # | Rule | Promised when | Check | ...
        assert re.search(r"`[a-z_]+\.[a-z_]+`", check) or "not observable" in check or "not checked" in check, row


def _reference(tmp_path: Path, case: Case, which: str, check_id: str) -> CheckResult:
    events = case.fail() if which == "fail" else case.passing()
    run_dir = write_run(tmp_path / which, events, run=case.run)
    return {r.check_id: r for r in inprocess_checks(run_dir)}[check_id]


@pytest.mark.parametrize("check_id", [c for c in CHECK_IDS if c not in SPARK_ONLY])
def test_row_check_fails_and_passes_on_its_self_test_histories(check_id: str) -> None:
    case = SELF_TEST[check_id]
    failing = run_check(BY_ID[check_id], python_context(case.fail(), case.run))
    assert failing.status == "fail", failing.summary
    passing = run_check(BY_ID[check_id], python_context(case.passing(), case.run))
    assert passing.status == "pass", passing.summary


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_reference_fails_and_passes_every_check_on_its_self_test_histories(tmp_path: Path, check_id: str) -> None:
    case = SELF_TEST[check_id]
    failing = _reference(tmp_path, case, "fail", check_id)
    assert failing.status == "fail", failing.summary
    passing = _reference(tmp_path, case, "pass", check_id)
    assert passing.status == "pass", passing.summary
