"""A warm-up that fails (`spark_analysis.warmup.Warmup`) only says so: nothing raises into the run, and what it says
names the cause and that the verify starts Spark itself. Spark is replaced by a fake `get_session` that raises,
since the failure is the subject (the real warm-up: tests/integration/spark_analysis/test_warmup.py)."""

from __future__ import annotations

import pytest

import spark_analysis.session.spark_session
from spark_analysis.warmup import Warmup


def test_a_failed_warmup_is_reported_not_raised_with_a_fake_session_start(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_java(master: str | None = None, java_options: object = None) -> object:
        raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(spark_analysis.session.spark_session, "get_session", no_java)
    with Warmup("local[1]", nice=0) as warmup:
        result = warmup.wait()
    assert not result.ok and "Java gateway process exited" in result.error
    assert result.describe().endswith("; the verify starts Spark itself")
