"""`kafka-chaos run` stopped by a signal (issue 22): SIGTERM, SIGINT and SIGHUP all heal the
fault, stop the cluster, record `interrupted` and exit promptly without verifying; no process of
the run outlives the harness. The harness runs as a subprocess (its own session) and the signal is
sent once the history shows the fault started. `terminal-closed` runs it on a pseudo-terminal and
closes that: the kernel sends the SIGHUP, and every later write to the terminal fails. A SIGTERM while
the cluster is still coming up tears the started processes down before `kafka-chaos run` returns. The cluster
is one Apache Kafka 3.9 broker in ZooKeeper mode. Here: SIGINT and the closed terminal mid-chaos, and SIGTERM
in setup; SIGTERM and SIGHUP mid-chaos run nightly (tests/nightly/test_every_signal.py)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import psutil
import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.fixtures.processes import assert_gone, events_so_far, reap

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXPERIMENT = """
name: signal-test
cluster: {brokers: 1, broker: apache-kafka}
topics: [{name: t, partitions: 1, replication_factor: 1}]
workload:
  producers: [{topic: t, rate: 20}]
  consumers: [{group: g, topics: [t], members: 1}]
steady_state: [controller_present, all_partitions_led]
steady_timeout: 60s
schedule:
  - {at: 1s, fault: pause, target: broker:1, duration: 20s}
duration: 30s
drain: 5s
"""

START_TIMEOUT_S = 180.0  # until the fault starts (cluster up, steady state); generous on a busy 2-core box
EXIT_BOUND_S = 60.0      # signal -> exit


def _take_terminal() -> None:
    """In the child: a new session whose controlling terminal is stdin (the pty's slave side)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


IN_MAKE_TEST = ("SIGINT", "terminal-closed")
"""Ctrl-C, and a closed terminal (the kernel's SIGHUP). SIGTERM and an explicit SIGHUP take the same handler
(`harness.engine.interrupts`); they run nightly (tests/nightly/test_every_signal.py), and a SIGTERM during setup
below. Each case is a cluster and ~30 s."""


@pytest.mark.parametrize("how", IN_MAKE_TEST)
def test_a_signalled_run_heals_stops_records_interrupted_and_exits_without_verifying(
    tmp_path: Path, how: str,
) -> None:
    signalled_run(tmp_path, how)


def signalled_run(tmp_path: Path, how: str) -> None:
    """`kafka-chaos run` of a one-broker cluster, signalled (`how`: a signal's name, or `terminal-closed`) once
    its fault started: it heals, stops, records `interrupted`, exits 2 without verifying, and leaves nothing."""
    apache_kafka()
    signame = "SIGHUP" if how == "terminal-closed" else how
    exp = tmp_path / "signal-test.yaml"
    exp.write_text(EXPERIMENT)
    runs, leftovers = tmp_path / "runs", tmp_path / "leftovers"
    out = tmp_path / "harness.out"
    env = {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(leftovers), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "harness.cli", "run", str(exp), "--backend", "process", "--runs-dir", str(runs)]
    master = -1
    if how == "terminal-closed":
        master, slave = pty.openpty()
        harness = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                   preexec_fn=_take_terminal)
        os.close(slave)
        out.write_text("(on a pseudo-terminal: output not kept)\n")
    else:
        with open(out, "wb") as sink:
            harness = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, start_new_session=True)
    children: list[int] = []
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        run_dir: Path | None = None
        while time.monotonic() < deadline and harness.poll() is None:
            dirs = list(runs.iterdir()) if runs.exists() else []
            run_dir = dirs[0] if dirs else None
            if run_dir is not None and any(e["type"] == "fault.start" for e in events_so_far(run_dir)):
                break
            if master >= 0:  # keep the terminal's buffer drained so the harness never blocks writing
                while select.select([master], [], [], 0)[0] and os.read(master, 65536):
                    pass
            time.sleep(0.2)
        assert harness.poll() is None and run_dir is not None, (
            f"the fault never started:\n{out.read_text(errors='replace')[-4000:]}")
        assert any(e["type"] == "phase" and e["name"] == "chaos" for e in events_so_far(run_dir))
        children = [c.pid for c in psutil.Process(harness.pid).children(recursive=True)]
        recorded = [json.loads(p.read_text())["what"] for p in leftovers.glob("*.json")]
        assert any(w.startswith("observer:") for w in recorded), recorded  # the isolated observer has a record

        sent = time.monotonic()
        if master >= 0:
            os.close(master)  # hang up: the kernel sends SIGHUP to the harness
            master = -1
        else:
            harness.send_signal(getattr(signal, signame))
        code = harness.wait(EXIT_BOUND_S)
        latency = time.monotonic() - sent
        print(f"{how}: exit {code} {latency:.1f}s after the signal")
        text = out.read_text(errors="replace")

        assert code == 2, text[-4000:]
        if how != "terminal-closed":
            assert f"verify later with: kafka-chaos verify {run_dir}" in text
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "interrupted", info
        assert not (run_dir / "verdict.json").exists()
        events = events_so_far(run_dir)
        assert {"type": "signal", "src": "engine", "signal": signame}.items() <= next(
            e for e in events if e["type"] == "signal").items()
        starts = {e["fault_id"] for e in events if e["type"] == "fault.start"}
        ends = {e["fault_id"] for e in events if e["type"] == "fault.end"}
        assert starts and starts <= ends, (starts, ends)
        assert events[-1]["type"] == "run.end" and events[-1]["status"] == "interrupted"

        assert_gone(children, run_dir, within_s=10)
        assert list(leftovers.glob("*.json")) == []
    finally:
        if master >= 0:
            os.close(master)
        reap(harness, children)


HELD_IN_SETUP = "setup held: brokers started, not ready"
SETUP_HARNESS = f"""
import json, sys, time
import psutil
from harness.cli import main
from harness.cluster import readiness

def hold(self, broker_id, *args, **kwargs):
    # Inside backend.up(): every process started, the brokers' readiness never comes.
    print({HELD_IN_SETUP!r}, flush=True)
    while True:
        time.sleep(0.05)

readiness.BrokerReadiness.wait_ready = hold
code = main(sys.argv[1:])
# What is left once `kafka-chaos run` returned, before the interpreter's atexit fallbacks run (the lifeline
# reaper excepted: it lives as long as the harness, by design, harness/cluster/reaper.py):
alive = [p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE
         and "harness.cluster.reaper" not in p.cmdline()]
print("left before exit: " + json.dumps(alive), flush=True)
sys.exit(code)
"""
SETUP_EXIT_BOUND_S = 20.0
"""Signal -> exit while the cluster comes up (measured 0.2-0.8 s; generous for a loaded 2-core machine)."""


def test_a_sigterm_while_the_cluster_comes_up_tears_it_down_and_exits_2_leaving_nothing(tmp_path: Path) -> None:
    """SIGTERM inside `backend.up()` (ZooKeeper, Toxiproxy and the broker started; the broker never
    ready, held there on purpose): the bring-up is torn down before `kafka-chaos run` returns, not by
    the atexit fallback; exit 2, run.json `interrupted`, an empty leftover registry, no process left."""
    apache_kafka()
    exp = tmp_path / "signal-setup.yaml"
    exp.write_text(EXPERIMENT.replace("name: signal-test", "name: signal-setup-test"))
    runs, leftovers = tmp_path / "runs", tmp_path / "leftovers"
    out = tmp_path / "harness.out"
    env = {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(leftovers), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-c", SETUP_HARNESS, "run", str(exp), "--backend", "process", "--broker",
            "apache-kafka", "--runs-dir", str(runs)]
    with open(out, "wb") as sink:
        harness = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                   start_new_session=True)
    started: list[int] = []
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while (time.monotonic() < deadline and harness.poll() is None
               and HELD_IN_SETUP not in out.read_text(errors="replace")):
            time.sleep(0.1)
        text = out.read_text(errors="replace")
        assert harness.poll() is None and HELD_IN_SETUP in text, f"setup never got to the brokers:\n{text[-4000:]}"
        records = {r["what"]: r["pid"] for r in (json.loads(p.read_text()) for p in leftovers.glob("*.json"))}
        assert {"toxiproxy", "zookeeper:1", "broker:1"} <= set(records), records
        started = [c.pid for c in psutil.Process(harness.pid).children(recursive=True)]
        assert set(records.values()) <= set(started)

        sent = time.monotonic()
        harness.send_signal(signal.SIGTERM)
        code = harness.wait(SETUP_EXIT_BOUND_S)
        latency = time.monotonic() - sent
        print(f"SIGTERM during setup: exit {code} {latency:.2f}s after the signal")
        text = out.read_text(errors="replace")
        assert code == 2, text[-4000:]
        assert "left before exit: []" in text, text[-4000:]  # torn down by the run, not by atexit
        assert "cluster up" not in text and "not verified (interrupted)" in text
        run_dir = next(runs.iterdir())
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        events = events_so_far(run_dir)
        assert [e["name"] for e in events if e["type"] == "phase"] == ["setup", "teardown"]
        assert [e["signal"] for e in events if e["type"] == "signal"] == ["SIGTERM"]
        assert events[-1]["type"] == "run.end" and events[-1]["status"] == "interrupted"
        assert list(leftovers.glob("*.json")) == []
        assert_gone(started, run_dir, within_s=10)  # the lifeline reaper ends once it saw its owner gone
    finally:
        reap(harness, started)
