"""A slow fault action delays no other fault's (harness/engine/lanes.py): each fault's inject and heal run in order
on a lane of their own, the schedule waits for an action only up to `INLINE_S`, and heal and teardown wait for
what is under way. Fakes only (the cluster is `tests/unit/engine/fakes.py`'s)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness.cluster.base import NodeId
from harness.engine import runner
from harness.engine.bundle import RunBundle
from harness.engine.lanes import FaultLanes
from harness.engine.runner import Run
from harness.experiment import load_experiment_text
from harness.history.jsonl import read_history
from tests.unit.engine.fakes import FakeBackend, FakeCluster, fake_parts

EXP = """
name: lanes-test
cluster: {brokers: 3}
topics: [{name: t, partitions: 2, replication_factor: 3}]
workload:
  producers: [{topic: t}]
steady_state: [controller_present]
steady_timeout: 2s
schedule:
  - {at: 100ms, fault: stop, target: broker:1, duration: 300ms}
  - {at: 150ms, fault: isolate_zookeeper, target: broker:2, duration: 100ms}
duration: 1s
drain: 100ms
"""


def test_a_stop_waiting_out_a_controlled_shutdown_holds_back_no_other_faults_heal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stop of broker 1 returns only once the isolation of broker 2 was healed: run one after another, the
    heal would wait for the stop (here: forever, bounded by the fake's 10 s)."""
    healed = threading.Event()
    enable = FakeCluster.link

    def stop(self: FakeCluster, node: NodeId) -> None:
        self.calls.append(f"stop {node}")
        healed.wait(10.0)
        self.calls.append(f"stopped {node}")

    def link(self: FakeCluster, src: object, dst: NodeId) -> object:
        fake = enable(self, src, dst)  # type: ignore[arg-type]
        original = fake.enable

        def on_enable() -> None:
            original()
            healed.set()

        fake.enable = on_enable  # type: ignore[method-assign]
        return fake

    monkeypatch.setattr(FakeCluster, "stop", stop)
    monkeypatch.setattr(FakeCluster, "link", link)
    runner.TICK_S = 0.02
    exp = load_experiment_text(EXP, "lanes.yaml")
    backend = FakeBackend()
    bundle = RunBundle.create(tmp_path, exp, backend="fake", backend_reason="test")
    result = Run(exp, backend, bundle, parts=fake_parts([])).execute()
    assert result.status == "completed", result.error
    assert backend.cluster is not None
    calls = backend.cluster.calls
    first_enable = next(i for i, c in enumerate(calls) if c.startswith("enable"))
    assert calls.index("stop broker:1") < first_enable < calls.index("stopped broker:1"), calls
    assert calls.index("stopped broker:1") < calls.index("start broker:1"), calls  # its own heal waits for it
    events = read_history(result.run_dir / "history.jsonl").events
    iso_end = next(e["t"] for e in events if e["type"] == "fault.end" and e["kind"] == "isolate_zookeeper")
    stop_start = next(e for e in events if e["type"] == "fault.start" and e["kind"] == "stop")
    assert iso_end < stop_start["t"] + 10.0 and stop_start["t"] < iso_end  # recorded from when the stop began


def test_a_lane_keeps_its_faults_order_and_close_waits_for_what_is_under_way_and_drops_the_rest() -> None:
    """`close` (heal phase, teardown) lets the inject under way end and drops the heal queued behind it: the
    injector's `heal_all` heals whatever is injected next."""
    lanes = FaultLanes(inline_s=0.01)
    seen: list[str] = []
    gate = threading.Event()
    def slow_inject() -> None:
        gate.wait(5.0)
        seen.append("inject 1")

    lanes.run(1, slow_inject)
    lanes.run(2, lambda: seen.append("inject 2"))
    lanes.run(1, lambda: seen.append("heal 1"))
    deadline = time.monotonic() + 5.0
    while "inject 2" not in seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == ["inject 2"] and lanes.busy() == 2
    gate.set()
    lanes.close()
    assert seen == ["inject 2", "inject 1"] and lanes.busy() == 0


def test_an_action_that_raises_surfaces_in_the_schedule() -> None:
    lanes = FaultLanes(inline_s=1.0)

    def boom() -> None:
        raise RuntimeError("an injector bug")

    with pytest.raises(RuntimeError, match="an injector bug"):
        lanes.run(1, boom)
    lanes.close()
