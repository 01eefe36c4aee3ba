"""The Spark driver JVM pyspark launches for a verify (the py4j gateway) has a leftover record
(issue 22): the next run's `clean_leftovers` kills it after a SIGKILLed verify and prints one line
for it, `stop_session` and a normal exit stop it and drop the record. Each case runs the verify side
in a subprocess (its own driver JVM), never the shared test session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from harness.cluster.leftovers import clean_leftovers
from spark_analysis.session.spark_session import DRIVER_WHAT
from tests.fixtures.processes import alive as _alive
from tests.fixtures.processes import leftover_records as _records

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

START_TIMEOUT_S = 300.0  # a driver JVM on a busy 2-core machine

VERIFY_THEN_HANG = textwrap.dedent("""
    import time
    from pyspark import SparkContext
    from spark_analysis.session.spark_session import get_session
    session = get_session("local[1]")
    assert session.range(3).count() == 3
    print(SparkContext._gateway.proc.pid, flush=True)
    time.sleep(600)
""")

SESSION_STOP_AND_EXIT = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    import psutil
    from pyspark import SparkContext
    from spark_analysis.session.spark_session import get_session, stop_session
    records = lambda: sorted(json.loads(p.read_text())["pid"] for p in Path(sys.argv[1]).glob("*.json"))
    session = get_session("local[1]")
    first = SparkContext._gateway.proc.pid
    print(json.dumps({"first": first, "records": records()}), flush=True)
    stop_session(session)
    print(json.dumps({"first_alive": psutil.pid_exists(first), "records": records()}), flush=True)
    again = get_session("local[1]")
    assert again.range(4).count() == 4
    print(json.dumps({"second": SparkContext._gateway.proc.pid, "records": records()}), flush=True)
""")


def _environ(tmp_path: Path) -> dict[str, str]:
    """The verify side's environment: its leftover records, and Spark's scratch directories (which a
    SIGKILLed driver cannot delete), under `tmp_path`."""
    scratch = tmp_path / "spark-scratch"
    scratch.mkdir()
    return {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(tmp_path / "leftovers"), "SPARK_LOCAL_DIRS": str(scratch),
            "TMPDIR": str(scratch), "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={scratch}"}


def test_the_driver_jvm_of_a_sigkilled_verify_is_killed_by_the_next_clean_leftovers(tmp_path: Path) -> None:
    leftovers, stderr, env = tmp_path / "leftovers", tmp_path / "verify.stderr", _environ(tmp_path)
    with open(stderr, "wb") as err:
        verify = subprocess.Popen([sys.executable, "-c", VERIFY_THEN_HANG], stdout=subprocess.PIPE, stderr=err,
                                  text=True, env=env)
    jvm = 0
    try:
        line = verify.stdout.readline() if verify.stdout else ""
        assert line, f"the verify subprocess failed:\n{stderr.read_text()[-3000:]}"
        jvm = int(line)
        (record,) = _records(leftovers)
        assert (record.pid, record.what, record.owner_pid) == (jvm, DRIVER_WHAT, verify.pid)
        assert record.cmdline == tuple(psutil.Process(jvm).cmdline()) and "java" in record.cmdline[0]
        assert record.pgid != jvm, "the driver shares its Python process's group (never killed as a group)"
        assert clean_leftovers(leftovers) == []  # owner alive: hands off

        # The driver exits by itself once its stdin closes; a stopped one (or a hung one) cannot.
        os.kill(jvm, signal.SIGSTOP)
        verify.send_signal(signal.SIGKILL)
        assert verify.wait(30) == -signal.SIGKILL
        assert _alive(jvm)
        cleaned = clean_leftovers(leftovers)
        assert [(c.pid, c.what) for c in cleaned] == [(jvm, DRIVER_WHAT)]
        text = str(cleaned[0])
        assert "\n" not in text and text.startswith(f"{DRIVER_WHAT} (pid {jvm}, left by harness {verify.pid}): ")
        assert not _alive(jvm)
        assert list(leftovers.glob("*.json")) == []
    finally:
        if verify.poll() is None:
            verify.kill()
            verify.wait(30)
        if jvm and _alive(jvm):
            os.kill(jvm, signal.SIGKILL)


def test_stop_session_stops_the_driver_jvm_and_drops_its_record_and_so_does_a_normal_exit(tmp_path: Path) -> None:
    leftovers, stderr, env = tmp_path / "leftovers", tmp_path / "verify.stderr", _environ(tmp_path)
    with open(stderr, "wb") as err:
        done = subprocess.run([sys.executable, "-c", SESSION_STOP_AND_EXIT, str(leftovers)], stdout=subprocess.PIPE,
                              stderr=err, text=True, env=env, timeout=3 * START_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{done.stdout}\n{stderr.read_text()[-3000:]}"
    started, stopped, again = (json.loads(line) for line in done.stdout.splitlines())
    assert started["records"] == [started["first"]]
    assert stopped == {"first_alive": False, "records": []}
    assert again["second"] != started["first"] and again["records"] == [again["second"]]
    assert not _alive(again["second"]), "the exit stopped the second driver"
    assert list(leftovers.glob("*.json")) == []
