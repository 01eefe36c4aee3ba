"""The warm-up (`spark_analysis.warmup.Warmup`) where it has nothing to do: one that fails only says so (nothing raises
into the run; what it says names the cause and that the verify starts Spark itself), and one in a process that
has a Spark session already warms nothing. Spark is replaced by fakes (a `get_session` that raises, an active
context), since those cases are the subject; the real warm-up is tests/integration/spark_analysis/test_warmup.py."""

from __future__ import annotations

import pytest

import spark_analysis.session.spark_session
from spark_analysis.warmup import Warmup


def test_a_failed_warmup_is_reported_not_raised_with_a_fake_session_start(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_java(master: str | None = None, java_options: object = None) -> object:
        raise RuntimeError("Java gateway process exited before sending its port number")

    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # a test worker may have a session already
    monkeypatch.setattr(spark_analysis.session.spark_session, "get_session", no_java)
    with Warmup("local[1]", nice=0) as warmup:
        warmup.hear_phase("steady")
        result = warmup.wait()
    assert not result.ok and "Java gateway process exited" in result.error
    assert result.describe().endswith("; the verify starts Spark itself")


def test_a_process_with_a_spark_context_already_warms_nothing_with_a_fake_context(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake stands for the active SparkContext (a pytest worker's shared session, spark-submit): no session is
    asked for, and the CLI's line says the verifier is running already."""
    from pyspark import SparkContext

    asked: list[str | None] = []
    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    monkeypatch.setattr(spark_analysis.session.spark_session, "get_session",
                        lambda master=None, java_options=None: asked.append(master))
    with Warmup("local[1]", nice=0) as warmup:
        warmup.hear_phase("steady")
        result = warmup.wait()
    assert result.ok and result.already and asked == []
    assert result.describe() == "verifier already running in this process"


def test_a_run_that_never_reached_its_steady_phase_started_no_warmup_and_abandoning_it_does_nothing() -> None:
    with Warmup("local[1]", nice=0) as warmup:
        warmup.hear_phase("setup")
        warmup.abandon(timeout_s=0.1)
        assert not warmup.started
        result = warmup.wait()
    assert not result.ok and result.error == "the run ended before its steady phase"


def test_an_abandoned_warmup_kills_a_driver_still_launching_and_nothing_else_with_fake_processes() -> None:
    """Two stand-in children (no JVM here): one whose command line names Spark's `SparkSubmit`, as the driver JVM
    pyspark is launching does, and one that does not (a broker, say)."""
    import subprocess
    import sys

    import psutil

    from spark_analysis.warmup import _kill_launching_driver

    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    driver = subprocess.Popen([*sleep, "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"])
    other = subprocess.Popen([*sleep, "kafka.Kafka"])
    try:  # only these two are looked at: this test process's own children include a real driver JVM
        _kill_launching_driver([psutil.Process(driver.pid), psutil.Process(other.pid)])
        assert driver.wait(10) == -9
        assert other.poll() is None
    finally:
        for proc in (driver, other):
            proc.kill()
            proc.wait()
