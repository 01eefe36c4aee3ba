"""Shipped experiments end to end on the process backend: reference brokers in their own processes,
real ZooKeeper, the embedded Toxiproxy, real librdkafka clients, and the Spark verifiers, through the
`kafka-chaos run` command. (controller-failover runs through the pytest plugin:
tests/integration/plugin/test_pytest_plugin_runs.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.engine.history import read_history

pytestmark = [pytest.mark.integration, pytest.mark.spark]
ROOT = Path(__file__).resolve().parents[3]


def _run(experiment: str, runs_dir: Path) -> tuple[int, Path]:
    code = main(["run", str(ROOT / "experiments" / experiment), "--backend", "process", "--runs-dir", str(runs_dir)])
    (run_dir,) = list(runs_dir.iterdir())
    return code, run_dir


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return read_history(run_dir / "history.jsonl").events


def test_zookeeper_partition_expires_the_session_and_moves_the_controller(tmp_path: Path) -> None:
    """The controller's links to ZooKeeper are cut: its registration vanishes after the session timeout
    and another broker becomes controller with a higher epoch while the cut lasts."""
    _, run_dir = _run("zookeeper-partition.yaml", tmp_path)
    events = _events(run_dir)
    cut = next(e for e in events if e["type"] == "fault.start" and e["kind"] == "isolate_zookeeper")
    healed = next(e for e in events if e["type"] == "fault.end" and e["fault_id"] == cut["fault_id"])
    victim = cut["brokers"][0]
    during = [e for e in events if e["src"] == "zk" and cut["t"] <= e["t"] <= healed["t"]]
    down = next(e for e in during if e["type"] == "broker.down" and e["broker"] == victim)
    expiry = down["t"] - cut["t"]
    print(f"session of broker {victim} expired {expiry:.2f}s after its ZooKeeper links were cut")
    assert 3.0 <= expiry <= 15.0
    before = max((e["epoch"] for e in events if e["type"] == "controller" and e["src"] == "zk"
                  and e["t"] < cut["t"] and e.get("epoch") is not None), default=0)
    new = [e for e in during if e["type"] == "controller" and e["broker"] not in (-1, victim)]
    assert new and new[0]["epoch"] > before
    verdict = json.loads((run_dir / "verdict.json").read_text())
    failing = {c["id"]: c["summary"] for c in verdict["checks"] if c["status"] == "fail"}
    assert not failing, failing
