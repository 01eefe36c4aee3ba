"""Operations in a run, against a recording fake operator (no processes: these tests check the engine's
orchestration of operations, not Kafka): `op.start` at the scheduled time, faults firing while an operation
runs, `op.end` with the outcome once, the heal phase waiting for operations, teardown ending the ones still
running as errors, and the verifiers' reading of it (`operation.completes`, the election strategy)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.engine import runner
from harness.engine.runner import run_experiment
from harness.experiment import load_experiment_text
from harness.faults.operations import OperationRunner
from harness.faults.outcomes import OperationOutcome, PartitionOutcome
from harness.faults.schedule import plan_operations
from harness.history.jsonl import read_history, record_of
from spark_analysis.checks.operation.checks import OperationCompletes
from spark_analysis.facts.operations import build_operation_index
from tests.unit.engine.fakes import FakeBackend, fake_parts

EXP = """
name: ops-engine
cluster: {brokers: 3}
topics: [{name: t, partitions: 2, replication_factor: 2}]
workload:
  producers: [{topic: t}]
steady_timeout: 2s
schedule:
  - {at: 50ms, action: reassign, topic: t, replicas: {0: [3, 1]}, timeout: 5s}
  - {at: 100ms, fault: kill, target: broker:3, duration: 100ms}
  - {at: 150ms, action: elect_preferred, topic: t}
duration: 400ms
drain: 100ms
"""


class FakeOperator:
    """Records the calls. The reassignment ends when `until()` holds (polled), or times out when it has none;
    the preferred election fails as an operator bug would."""

    def __init__(self, until: Callable[[], bool] | None = None) -> None:
        self.calls: list[str] = []
        self.until = until

    def reassign(self, topic: str, replicas: Mapping[int, Sequence[int]], timeout_s: float) -> OperationOutcome:
        self.calls.append(f"reassign {topic} {dict(replicas)}")
        deadline = time.monotonic() + timeout_s
        while self.until is None or not self.until():
            if time.monotonic() > deadline:
                return OperationOutcome("timeout", "fake", f"awaited the fake move within {timeout_s:g}s")
            time.sleep(0.01)
        return OperationOutcome("done", "fake", "", (PartitionOutcome(topic, 0, None, (3, 1)),))

    def elect_preferred(self, topic: str | None, partitions: Sequence[int], timeout_s: float) -> OperationOutcome:
        self.calls.append(f"elect_preferred {topic} {list(partitions)}")
        raise RuntimeError("fake operator: no controller")

    def add_partitions(self, topic: str, count: int, timeout_s: float) -> OperationOutcome:
        self.calls.append(f"add_partitions {topic} {count}")
        return OperationOutcome("done", "fake", "", tuple(PartitionOutcome(topic, p, None, (1, 2))
                                                          for p in range(2, count)))

    def await_in_sync(self, broker: int, timeout_s: float) -> str | None:
        self.calls.append(f"in sync {broker}")
        return None

    def await_voter(self, voter: int, timeout_s: float) -> str | None:
        self.calls.append(f"caught up {voter}")
        return None

    def await_brokers_follow_kraft(self, timeout_s: float, stop: threading.Event) -> str | None:
        self.calls.append("brokers follow the KRaft controller")
        return None

    def finalize_metadata(self, timeout_s: float) -> OperationOutcome:
        self.calls.append("finalize metadata.version")
        return OperationOutcome("done", "fake", "metadata.version level 21 -> 27")


def _run(tmp_path: Path, operator: FakeOperator, text: str = EXP) -> runner.RunResult:
    runner.TICK_S = 0.02
    parts = fake_parts([])
    parts = type(parts)(parts.observers, parts.producers, parts.consumers, parts.create_topics,
                        lambda cluster: operator)
    exp = load_experiment_text(text, "ops.yaml")
    return run_experiment(exp, FakeBackend(None), backend_reason="test", runs_dir=tmp_path, parts=parts)


def test_operations_start_on_time_faults_fire_meanwhile_and_each_ends_once_with_its_outcome(tmp_path: Path) -> None:
    def heal_begun() -> bool:
        """The run reached its heal phase: the fault fired, and the chaos phase is over."""
        return any('"name":"heal"' in p.read_text() for p in tmp_path.glob("*/history.jsonl"))

    operator = FakeOperator(until=heal_begun)
    result = _run(tmp_path, operator)
    assert result.status == "completed", result.error
    events = read_history(result.run_dir / "history.jsonl").events
    kinds = [(e["type"], e.get("op_id", e.get("fault_id"))) for e in events
             if e["type"] in ("op.start", "op.end", "fault.start", "fault.end")]
    assert kinds.index(("op.start", 0)) < kinds.index(("fault.start", 1)) < kinds.index(("op.end", 0))
    assert kinds.index(("fault.end", 1)) < kinds.index(("op.end", 0))
    ends = {e["op_id"]: e for e in events if e["type"] == "op.end"}
    assert sorted(ends) == [0, 2] and [e["op_id"] for e in events if e["type"] == "op.start"] == [0, 2]
    assert (ends[0]["outcome"], ends[0]["via"]) == ("done", "fake")
    assert ends[0]["results"] == [{"topic": "t", "partition": 0, "error": None, "replicas": [3, 1]}]
    assert ends[2]["outcome"] == "error" and "RuntimeError: fake operator: no controller" in ends[2]["detail"]
    start = next(e for e in events if e["type"] == "op.start" and e["op_id"] == 0)
    assert start["partitions"] == [["t", "0"]] and start["reassignment"] == [{"partition": 0, "replicas": [3, 1]}]
    assert operator.calls == ["reassign t {0: (3, 1)}", "elect_preferred t [0, 1]"]
    drain = next(e["t"] for e in events if e["type"] == "phase" and e["name"] == "drain")
    assert all(e["t"] <= drain for e in ends.values())  # the heal phase waited for them


def test_a_timeout_is_recorded_and_fails_operation_completes_naming_what_was_awaited(tmp_path: Path) -> None:
    text = EXP.replace("timeout: 5s", "timeout: 300ms")
    result = _run(tmp_path, FakeOperator(), text)
    events = read_history(result.run_dir / "history.jsonl").events
    (end,) = [e for e in events if e["type"] == "op.end" and e["op_id"] == 0]
    assert end["outcome"] == "timeout" and "awaited the fake move within 0.3s" in end["detail"]
    index = build_operation_index([e for e in events if e["type"] in ("op.start", "op.end")])
    assert [w.outcome for w in index.windows] == ["timeout", "error"]
    assert index.covering("t", 0, index.windows[0].start + 0.1, "reassign") is index.windows[0]
    assert index.covering("t", 1, index.windows[0].start + 0.1, "reassign") is None


def test_teardown_ends_an_operation_still_running_as_an_error_and_nothing_is_recorded_after(tmp_path: Path) -> None:
    exp = load_experiment_text(EXP, "ops.yaml")
    written: list[dict[str, object]] = []
    released = False
    operator = FakeOperator(until=lambda: released)
    ops = OperationRunner(operator, lambda e: written.append(record_of(e)))
    (reassign, _) = plan_operations(exp)
    ops.start(reassign)
    ops.abandon("still running when the run was torn down")
    released = True
    assert ops.join(10.0) == []
    ends = [e for e in written if e["type"] == "op.end"]
    assert len(ends) == 1 and ends[0]["outcome"] == "error" and "torn down" in str(ends[0]["detail"])


def test_operation_completes_passes_with_no_operations_and_is_unknown_for_an_error() -> None:
    from tests.fixtures.histories import python_context

    empty = OperationCompletes().run(python_context([]))
    assert (empty.status, empty.summary) == ("pass", "no operation in the run (nothing to judge)")
    rows = [{"type": "op.start", "t": 1.0, "op_id": 0, "action": "elect_preferred", "topic": None,
             "partitions": [], "reassignment": [], "description": "#0 elect_preferred every topic"},
            {"type": "op.end", "t": 2.0, "op_id": 0, "action": "elect_preferred", "outcome": "error",
             "detail": "ElectLeaders failed: CLUSTER_AUTHORIZATION_FAILED", "results": []}]
    broken = OperationCompletes().run(python_context(rows))
    assert broken.status == "unknown" and "CLUSTER_AUTHORIZATION_FAILED" in broken.summary


class FakeScaler:
    """A consumer group that records the member counts it is asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, bool]] = []

    def scale_to(self, members: int, *, abrupt: bool = False) -> str:
        self.asked.append((members, abrupt))
        return f"2 -> {members} members"


def test_scale_consumers_goes_to_the_named_groups_workload_and_an_unknown_group_is_an_error() -> None:
    exp = load_experiment_text("""name: scale
topics: [{name: t}]
workload: {consumers: [{group: g, topics: [t]}]}
schedule:
  - {at: 0s, action: scale_consumers, group: g, members: 3, abrupt: true}
duration: 1s
""", "scale.yaml")
    written: list[dict[str, object]] = []
    scaler = FakeScaler()
    (op,) = plan_operations(exp)
    ops = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), {"g": scaler})
    ops.start(op)
    assert ops.join(5) == []
    start, end = written
    assert (start["type"], start["group"], end["outcome"], end["detail"]) == ("op.start", "g", "done", "2 -> 3 members")
    assert scaler.asked == [(3, True)]
    lonely = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)))
    lonely.start(op)
    lonely.join(5)
    assert written[-1]["outcome"] == "error" and "no consumer group 'g'" in str(written[-1]["detail"])


RESTART = """name: restart
topics: [{name: t}]
workload: {producers: [{id: p0, topic: t}]}
schedule:
  - {at: 0s, action: restart_producer, producer: p0, timeout: 5s}
duration: 1s
"""


class FakeRestarter:
    """A producer that records the restarts it is asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[bool, float]] = []

    def restart(self, *, abrupt: bool = False, timeout_s: float = 30.0, zombie: bool = False) -> str:
        self.asked.append((abrupt, timeout_s))
        return "session 2: 3 outstanding at the restart, all delivered"


def test_restart_producer_goes_to_the_named_producer_and_an_unknown_one_is_an_error() -> None:
    exp = load_experiment_text(RESTART, "restart.yaml")
    written: list[dict[str, object]] = []
    restarter = FakeRestarter()
    (op,) = plan_operations(exp)
    ops = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), producers={"p0": restarter})
    ops.start(op)
    assert ops.join(5) == []
    start, end = written
    assert (start["producer"], end["outcome"], end["detail"]) == (
        "p0", "done", "session 2: 3 outstanding at the restart, all delivered")
    assert restarter.asked == [(False, 5.0)]
    lonely = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)))
    lonely.start(op)
    lonely.join(5)
    assert written[-1]["outcome"] == "error" and "no producer 'p0'" in str(written[-1]["detail"])


def test_an_operation_ended_by_a_raised_kafka_error_still_ends_as_an_error() -> None:
    """confluent-kafka raises a fatal KafkaError object itself, which is no Exception subclass: the operation's
    thread must still record op.end (seen on a loaded make test: a zombie's flush raised _FENCED and the
    operation stayed "running" until teardown). Real librdkafka: the KafkaError type is confluent-kafka's own."""
    import confluent_kafka

    class Raising(FakeRestarter):
        def restart(self, *, abrupt: bool = False, timeout_s: float = 30.0, zombie: bool = False) -> str:
            raise confluent_kafka.KafkaError(confluent_kafka.KafkaError._FENCED, "fenced", fatal=True)

    exp = load_experiment_text(RESTART, "restart.yaml")
    written: list[dict[str, object]] = []
    (op,) = plan_operations(exp)
    ops = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), producers={"p0": Raising()})
    seen: list[object] = []
    import threading

    hook, threading.excepthook = threading.excepthook, lambda args: seen.append(args.exc_value)
    try:
        ops.start(op)
        assert ops.join(5) == []
    finally:
        threading.excepthook = hook
    assert written[-1]["type"] == "op.end" and written[-1]["outcome"] == "error", written[-1]
    assert "no Exception" in str(written[-1]["detail"]) and len(seen) == 1
