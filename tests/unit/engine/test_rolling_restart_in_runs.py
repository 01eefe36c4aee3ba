"""`rolling_restart` in a run, against a fake cluster and operator (no processes: these check the engine's
sequencing, not Kafka): each broker in the given order is waited for, stopped, started and waited for
again, each stop recorded as a `stop` fault `<op>.<k>`; a broker that does not come back ends it with a
timeout naming the broker; teardown stops it before the next broker; it may run on into the heal phase."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from harness.engine import runner
from harness.engine.runner import run_experiment
from harness.experiment import load_experiment_text
from harness.faults.operations import OperationRunner
from harness.faults.schedule import PlannedFault, plan_operations
from harness.history.jsonl import read_history, record_of
from tests.unit.engine.fakes import FakeBackend, fake_parts
from tests.unit.engine.test_operations_in_runs import FakeOperator

EXP = """
name: roll
cluster: {brokers: 3}
topics: [{name: t, partitions: 2, replication_factor: 3}]
workload:
  producers: [{topic: t}]
steady_timeout: 2s
schedule:
  - {at: 50ms, action: rolling_restart, brokers: [3, 1, 2], timeout: 5s}
duration: 300ms
drain: 100ms
"""


class Slow(FakeOperator):
    """Every ISR is full at once, except after the last broker's restart: only once the heal phase has begun
    (so the operation outlasts the chaos phase, whatever the machine's load)."""

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = runs_dir

    def await_in_sync(self, broker: int, timeout_s: float) -> str | None:
        if len(self.calls) == 5:
            while not any('"name":"heal"' in p.read_text() for p in self.runs_dir.glob("*/history.jsonl")):
                time.sleep(0.01)
        return super().await_in_sync(broker, timeout_s)


def test_each_broker_in_order_is_awaited_stopped_started_and_awaited_each_stop_a_fault_window_into_the_heal_phase(
    tmp_path: Path,
) -> None:
    runner.TICK_S = 0.02
    operator = Slow(tmp_path)
    parts = fake_parts([])
    parts = type(parts)(parts.observers, parts.producers, parts.consumers, parts.create_topics,
                        lambda cluster: operator)
    backend = FakeBackend(None)
    result = run_experiment(load_experiment_text(EXP, "roll.yaml"), backend, backend_reason="test",
                            runs_dir=tmp_path, parts=parts)
    assert result.status == "completed", result.error
    assert backend.cluster is not None
    assert [c for c in backend.cluster.calls if c.startswith(("stop", "start"))] == [
        "stop broker:3", "start broker:3", "stop broker:1", "start broker:1", "stop broker:2", "start broker:2"]
    assert operator.calls == ["in sync 3", "in sync 3", "in sync 1", "in sync 1", "in sync 2", "in sync 2"]
    events = read_history(result.run_dir / "history.jsonl").events
    windows = [(e["type"], e["fault_id"], e["kind"], e["target"]) for e in events if e["type"].startswith("fault.")]
    assert windows == [(f"fault.{w}", f"0.{k}", "stop", [f"broker:{b}"])
                       for k, b in enumerate((3, 1, 2), start=1) for w in ("start", "end")]
    start = next(e for e in events if e["type"] == "op.start")
    end = next(e for e in events if e["type"] == "op.end")
    assert (start["action"], start["brokers"], start["description"]) == (
        "rolling_restart", [3, 1, 2], "#0 rolling_restart brokers 3, 1, 2")
    assert end["outcome"] == "done" and end["detail"].startswith("broker 3 ")
    phases = {e["name"]: e["t"] for e in events if e["type"] == "phase"}
    assert phases["heal"] < end["t"] < phases["drain"]  # it went on after the chaos phase; the heal phase waited


class Cycler:
    """Records the stops and starts a rolling restart asks for."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def inject(self, fault: PlannedFault) -> bool:
        self.calls.append(f"stop {fault.target} as {fault.fault_id}")
        return True

    def heal(self, fault: PlannedFault) -> None:
        self.calls.append(f"start {fault.target}")


class SlowToReturn(FakeOperator):
    """Every ISR is full, except after broker 2's restart: it never comes back."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def await_in_sync(self, broker: int, timeout_s: float) -> str | None:
        self.calls.append(f"in sync {broker}")
        self.gate.wait(10)
        returned = self.calls.count(f"in sync {broker}") == 2
        return "broker 2 not registered" if broker == 2 and returned else None


def _plan(text: str) -> object:
    (op,) = plan_operations(load_experiment_text(text, "roll.yaml"))
    return op


@pytest.mark.parametrize("order", [[2, 3], None])
def test_a_broker_that_does_not_come_back_ends_it_as_a_timeout_naming_the_broker(order: list[int] | None) -> None:
    text = EXP if order is None else EXP.replace("brokers: [3, 1, 2]", f"brokers: {order}")
    written: list[dict[str, object]] = []
    operator, nodes = SlowToReturn(), Cycler()
    operator.gate.set()
    ops = OperationRunner(operator, lambda e: written.append(record_of(e)), nodes=nodes)
    ops.start(_plan(text))  # type: ignore[arg-type]
    assert ops.join(10) == []
    end = written[-1]
    assert end["outcome"] == "timeout"
    assert str(end["detail"]).startswith("broker 2 did not come back into every ISR within its 5s; "
                                         "last seen: broker 2 not registered")
    step = (order or [3, 1, 2]).index(2) + 1
    assert nodes.calls[-2:] == [f"stop broker:2 as 0.{step}", "start broker:2"]  # and no broker after it


def test_abandoning_it_at_teardown_stops_it_before_the_next_broker_as_an_error() -> None:
    written: list[dict[str, object]] = []
    operator, nodes = SlowToReturn(), Cycler()
    ops = OperationRunner(operator, lambda e: written.append(record_of(e)), nodes=nodes)
    ops.start(_plan(EXP))  # type: ignore[arg-type]
    while "in sync 3" not in operator.calls:  # past the check before broker 3, waiting for its ISRs
        time.sleep(0.01)
    ops.abandon("still running when the run was torn down")
    operator.gate.set()
    assert ops.join(10) == []
    assert nodes.calls == ["stop broker:3 as 0.1", "start broker:3"]  # the broker it was on, and no other
    (end,) = [e for e in written if e["type"] == "op.end"]
    assert (end["outcome"], end["detail"]) == ("error", "still running when the run was torn down")
