"""The driver JVM's console output (Spark's start-up lines) goes to its log in the cache, not the user's terminal:
a real SparkSession started in a child process, its stderr read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
START = ("from spark_analysis.session.spark_session import get_session, stop_session; "
         "s = get_session('local[1]'); s.range(3).count(); stop_session(s); print('done')")


def test_spark_start_up_lines_go_to_the_driver_log_not_the_terminal(tmp_path: Path) -> None:
    env = {**os.environ, "KAFKA_CHAOS_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", START], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr[-2000:]
    assert "Setting default log level" not in proc.stderr and "incubator" not in proc.stderr, proc.stderr
    log = (tmp_path / "cache" / "spark-driver.log").read_text(encoding="utf-8")
    assert "Setting default log level" in log
