"""A migration to KRaft interrupted by SIGTERM in each of its five steps (issue 41): `kafka-chaos run
experiments/zk-to-kraft-migration.yaml` on Apache Kafka 3.9.2 (process backend) gets a SIGTERM once the history
shows the step's `op.start`. The run heals, tears the cluster down (brokers, ZooKeeper, KRaft controllers, clients)
and exits 2 without verifying, its run.json `interrupted`; every step begun has its `op.end` (the one under way
ends as an error, or done when it ended first; the copy takes well under a second, so its case usually signals
at the start of `brokers_kraft`), the operation has its own, and no process of the run is left. `kafka-chaos
verify` of the run then answers unknown, never pass. Measured alone on 2 cores (2026-11-30): the five cases passed
in 280 s, each run exiting 3.7-5.4 s after its signal; the steps took 10.2 s, 22.8 s, 0.06 s and 26.9 s.

Nightly: each case is a cluster of 8 JVMs for up to 2 min alone (up to 4 min on a loaded machine)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.cli import main
from harness.experiment.schema import MIGRATION_STEPS
from tests.fixtures.process_cluster import apache_kafka
from tests.fixtures.processes import assert_gone, events_so_far, reap
from tests.integration.e2e.support import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

EXPERIMENT = ROOT / "experiments" / "zk-to-kraft-migration.yaml"
STEP_TIMEOUT_S = 480.0
"""Until the step's op.start: the cluster's setup and steady state, then up to the last step (~3 min, 2 cores)."""
EXIT_BOUND_S = 90.0
"""Signal -> exit: the heal, then 7 JVMs and the clients stopped (about 3 s measured in the `brokers` step)."""


@pytest.mark.parametrize("step", MIGRATION_STEPS)
def test_a_migration_sigtermed_in_each_step_tears_down_leaves_nothing_and_verifies_unknown(
    tmp_path: Path, step: str,
) -> None:
    apache_kafka("3.9.2")
    runs, leftovers, out = tmp_path / "runs", tmp_path / "leftovers", tmp_path / "harness.out"
    env = {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(leftovers), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "harness.cli", "run", str(EXPERIMENT), "--backend", "process", "--runs-dir",
            str(runs)]
    with open(out, "wb") as sink:
        harness = subprocess.Popen(argv, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
    children: list[int] = []
    try:
        run_dir: Path | None = None
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while time.monotonic() < deadline and harness.poll() is None:
            run_dir = next(iter(runs.iterdir()), None) if runs.exists() else None
            if any(e["type"] == "op.start" and e.get("step") == step for e in events_so_far(run_dir)):
                break
            time.sleep(0.2)
        assert harness.poll() is None and run_dir is not None, (
            f"step {step} never started:\n{out.read_text(errors='replace')[-4000:]}")
        children = [c.pid for c in psutil.Process(harness.pid).children(recursive=True)]

        sent = time.monotonic()
        harness.send_signal(signal.SIGTERM)
        code = harness.wait(EXIT_BOUND_S)
        print(f"SIGTERM in {step}: exit {code} {time.monotonic() - sent:.1f} s after the signal")
        text = out.read_text(errors="replace")
        assert code == 2, text[-4000:]
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        events = events_so_far(run_dir)
        begun = [e["step"] for e in events if e["type"] == "op.start" and e.get("step")]
        ended = {e["step"]: e["outcome"] for e in events if e["type"] == "op.end" and e.get("step")}
        # the signal goes once the step's op.start is read (every 0.2 s): the copy (0.06 s alone on 2 cores) has
        # usually ended and the next step begun by then
        assert begun == list(MIGRATION_STEPS[:len(begun)]) and step in begun[-2:], begun
        assert set(ended) == set(begun), (begun, ended)
        assert ended[begun[-1]] in ("error", "done") and all(ended[s] == "done" for s in begun[:-1]), ended
        assert [e["outcome"] for e in events if e["type"] == "op.end" and not e.get("step")], "no op.end"
        assert events[-1]["type"] == "run.end" and events[-1]["status"] == "interrupted"

        assert_gone(children, run_dir, within_s=15)
        assert list(leftovers.glob("*.json")) == []

        assert main(["verify", str(run_dir)]) != 0
        assert json.loads((run_dir / "verdict.json").read_text())["status"] == "unknown"
    finally:
        reap(harness, children)
