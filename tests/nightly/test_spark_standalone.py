"""`kafka-chaos verify RUN --spark-master spark://…` and `kafka-chaos report --trend … --spark-master …` on a real
Spark standalone cluster (a master and one worker started from the venv's pyspark; the checks run in the
worker's executor) reach the same verdicts, summaries and trend numbers as local mode. The cluster verifies
the fixture run whose delivery and consumer checks fail (the checks that run as Spark jobs; the others pass
in it); the trend adds the healthy run, verified locally (a second cluster verify costs ~35 s and reaches
no code path the first does not).
Nightly since stop 53 (make test ran 25 min 22 s in a fresh clone on 2 cores with it, over its 25 minutes; 112 s
here). make test verifies on Spark in local mode; the master URL is the only difference the CLI sees."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.trend import build_trend
from spark_analysis.verify import verify_run
from tests.fixtures.histories import scenario, write_run
from tests.fixtures.spark_standalone import Standalone, standalone_cluster

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]

RUNS = {"healthy": {}, "broken": {"lost": True, "duplicate": True, "nonmonotonic": True, "skip": True}}
CLI_TIMEOUT_S = 480.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-standalone")) as c:
        yield c


def _runs(root: Path) -> Path:
    for name, bugs in RUNS.items():
        write_run(root / name, scenario(**bugs))
    return root


CLI_SCRIPT = """
import sys, time
from harness.cli import main
master, *runs, runs_dir = sys.argv[1:]
for run in runs:
    t0 = time.monotonic()
    code = main(["verify", run, "--spark-master", master])
    print(f"verify {run}: exit {code} in {time.monotonic() - t0:.1f}s", flush=True)
    if code not in (0, 1):
        raise SystemExit(f"verify {run} exited {code}")
t0 = time.monotonic()
code = main(["report", "--trend", runs_dir, "--spark-master", master])
print(f"trend: exit {code} in {time.monotonic() - t0:.1f}s", flush=True)
raise SystemExit(code)
"""
"""The CLI's own `verify` and `report --trend` commands, called in one process of their own (one SparkContext
per process, and this one holds the local session): the commands share one application, so the worker
starts one executor for all of them."""


def _checks(run_dir: Path) -> dict[str, tuple[str, str, bool]]:
    verdict = json.loads((run_dir / "verdict.json").read_text())
    return {c["id"]: (c["status"], c["summary"], c["allowed"]) for c in verdict["checks"]}


def _trend(runs_dir: Path) -> Any:
    """trend.json with the runs directory's own path made neutral; its Spark figures apart."""
    trend = json.loads((runs_dir / "trend.json").read_text().replace(str(runs_dir), "RUNS_DIR"))
    trend.pop("generated", None)
    return trend.pop("spark"), trend


def test_verify_and_trend_on_a_standalone_cluster_match_local_mode(
        spark: Any, cluster: Standalone, tmp_path: Path) -> None:
    local = _runs(tmp_path / "local")
    remote = _runs(tmp_path / "remote")
    verify_run(local / "healthy", spark=spark)
    shutil.copy(local / "healthy" / "verdict.json", remote / "healthy" / "verdict.json")
    proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT, cluster.master_url, str(remote / "broken"),
                           str(remote)],
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=cluster.env)
    print(proc.stdout)
    assert proc.returncode == 0, f"the CLI on {cluster.master_url} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    verify_run(local / "broken", spark=spark)
    verdict = json.loads((remote / "broken" / "verdict.json").read_text())
    assert verdict["analysis"]["spark_master"] == cluster.master_url
    assert _checks(remote / "broken") == _checks(local / "broken")
    assert {c for c, (s, _, _) in _checks(remote / "broken").items() if s != "pass"} >= {
        "delivery.lost_write", "delivery.duplicate", "consumer.nonmonotonic_poll", "consumer.poll_skip"}
    build_trend(local, spark=spark)
    (theirs_spark, theirs), (_, mine) = _trend(remote), _trend(local)
    assert theirs_spark["master"] == cluster.master_url
    assert theirs == mine
    shutil.rmtree(tmp_path, ignore_errors=True)
