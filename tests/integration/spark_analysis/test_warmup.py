"""The verifier's warm-up (`spark_analysis.warmup`) in a process of its own, as `kafka-chaos run` uses it: the driver
JVM starts at the caller's priority (the cluster is coming up, nothing is measured), `lower_priority()` (at chaos)
lowers every thread of it by `WARM_NICE` while the caller's own priority stays, `wait()` gives them their priority
back (as root), the verify after the warm-up reuses that driver (no second JVM) and reaches a verdict that is not a
fail, and `abandon()` (a run that ends unverified) stops that driver and its session."""

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

def nices(pid):
    seen = set()
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            seen.add(os.getpriority(os.PRIO_PROCESS, int(t)))
        except ProcessLookupError:  # a thread that ended meanwhile
            pass
    return sorted(seen)

before = os.getpriority(os.PRIO_PROCESS, 0)
with Warmup("local[1]") as warmup:
    warmup.hear_phase("steady")
    result = warmup.wait()
    gateway = SparkContext._gateway
    started = nices(gateway.proc.pid)
    warmup.lower_priority()
    lowered = nices(gateway.proc.pid)
    warmup.wait()
    restored = nices(gateway.proc.pid)
verdict = verify_run(training_history(Path(sys.argv[1])), write=False)
same_driver = SparkContext._gateway is gateway
warmup.abandon()  # as for a run that ends unverified: the driver it launched goes now
driver_gone = gateway.proc.poll() is not None
print(json.dumps({"driver_gone": driver_gone, "context_left": SparkContext._active_spark_context is not None,
                  "ok": result.ok, "error": result.error, "said": result.describe(), "before": before,
                  "after": os.getpriority(os.PRIO_PROCESS, 0), "started": started, "lowered": lowered,
                  "restored": restored, "root": os.geteuid() == 0,
                  "want": min(19, before + WARM_NICE), "same_driver": same_driver,
                  "verdict": verdict.status}))
"""


def test_the_warmup_driver_yields_the_cpu_when_lowered_and_the_verify_after_it_reuses_that_driver(
        tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "run")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["ok"], seen["error"]
    assert seen["said"].startswith("verifier warmed in the background in ")
    # threads the JVM starts while they are being lowered may keep the old priority: the lowered one is there
    assert seen["started"] == [seen["before"]] and seen["want"] in seen["lowered"], seen
    assert seen["after"] == seen["before"], seen
    if seen["root"]:  # only root may raise a priority again (without a nice limit that allows it)
        assert seen["restored"] == [seen["before"]], seen
    assert seen["same_driver"] and seen["verdict"] != "fail", seen  # the tiny history leaves some checks unknown
    assert seen["driver_gone"] and not seen["context_left"], seen
