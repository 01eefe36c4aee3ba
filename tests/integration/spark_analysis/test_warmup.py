"""The verifier's warm-up (`spark_analysis.warmup`) in a process of its own, as `kafka-chaos run` uses it: the driver
JVM it launches runs at a lower CPU priority than the caller, the caller's own priority is unchanged, and the
verify after it reuses that driver (no second JVM) and reaches a verdict that is not a fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = """
import json, os, sys
from pathlib import Path
from pyspark import SparkContext
from spark_analysis.verify import verify_run
from spark_analysis.warmup import WARM_NICE, Warmup, training_history

before = os.getpriority(os.PRIO_PROCESS, 0)
with Warmup("local[1]") as warmup:
    result = warmup.wait()
gateway = SparkContext._gateway
verdict = verify_run(training_history(Path(sys.argv[1])), write=False)
print(json.dumps({"ok": result.ok, "error": result.error, "said": result.describe(), "before": before,
                  "after": os.getpriority(os.PRIO_PROCESS, 0), "jvm": os.getpriority(os.PRIO_PROCESS, gateway.proc.pid),
                  "want": min(19, before + WARM_NICE), "same_driver": SparkContext._gateway is gateway,
                  "verdict": verdict.status}))
"""


def test_the_warmup_runs_the_driver_at_low_priority_and_the_verify_after_it_reuses_that_driver(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "run")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["ok"], seen["error"]
    assert seen["said"].startswith("verifier warmed in the background in ")
    assert seen["jvm"] == seen["want"] and seen["after"] == seen["before"], seen
    assert seen["same_driver"] and seen["verdict"] != "fail", seen  # the tiny history leaves some checks unknown
