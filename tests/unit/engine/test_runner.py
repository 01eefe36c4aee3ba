"""The runner's phases, fault mapping and teardown, run against recording fakes (no processes):
these tests check the engine's orchestration, not Kafka."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.engine import runner
from harness.engine.runner import run_experiment
from harness.experiment import load_experiment_text
from harness.history.jsonl import read_history
from tests.unit.engine.fakes import FakeBackend, fake_parts

EXP = """
name: engine-test
cluster: {brokers: 3}
topics: [{name: t, partitions: 2, replication_factor: 3}]
workload:
  producers: [{topic: t}]
  consumers: [{group: g, topics: [t], members: 2}]
steady_state: [controller_present, all_partitions_led, group_stable]
steady_timeout: 2s
schedule:
  - {at: 100ms, fault: kill, target: controller, duration: 200ms}
  - {at: 150ms, fault: isolate_zookeeper, target: broker:2, duration: 100ms}
  - {at: 200ms, fault: latency, link: "client->leader:t/1", params: {latency_ms: 50}, duration: 100ms}
  - {at: 250ms, fault: pause, target: "consumer:g/1", duration: 100ms}
  - {at: 300ms, fault: kill, target: coordinator:g}
  - {at: 300ms, fault: partition, groups: [[broker:1], [broker:3, zookeeper:1]], duration: 100ms}
  - {at: 350ms, fault: pause, target: "producer:p0", duration: 100ms}
duration: 600ms
drain: 100ms
"""


def _run(
    tmp_path: Path, text: str = EXP, fail_on: str | None = None
) -> tuple[runner.RunResult, FakeBackend, list[str]]:
    runner.TICK_S = 0.02
    log: list[str] = []
    backend = FakeBackend(fail_on)
    exp = load_experiment_text(text, "engine.yaml")
    result = run_experiment(exp, backend, backend_reason="test", runs_dir=tmp_path, parts=fake_parts(log))
    return result, backend, log


def test_phases_run_in_order_and_every_fault_is_injected_then_healed_with_fake_cluster(tmp_path: Path) -> None:
    result, backend, log = _run(tmp_path)
    assert result.status == "completed", result.error
    events = read_history(result.run_dir / "history.jsonl").events
    phases = [e["name"] for e in events if e["type"] == "phase"]
    assert phases == ["setup", "steady", "chaos", "heal", "drain", "teardown"]
    starts = {e["fault_id"]: e for e in events if e["type"] == "fault.start"}
    ends = {e["fault_id"] for e in events if e["type"] == "fault.end"}
    assert set(starts) == ends == {0, 1, 2, 3, 4, 5, 6}
    assert starts[0]["target"] == ["broker:1"]            # controller resolved from observed state
    assert starts[4]["target"] == ["broker:2"]            # coordinator:g resolved from group.state
    assert starts[2]["target"] == ["client->1"]           # leader:t/1 is broker 1
    calls = backend.cluster.calls  # type: ignore[union-attr]
    assert calls[0] == "kill broker:1" and "start broker:1" in calls
    assert "disable 2->zk1" in calls and "enable 2->zk1" in calls
    assert "toxic client->1 latency {'latency': 50, 'jitter': 0} downstream" in calls
    assert {"disable 1->3", "disable 3->1", "disable 1->zk1"} <= set(calls)
    assert "pause_member group:g/1" in log and "resume_member group:g/1" in log
    assert log.index("pause producer:p0") < log.index("resume producer:p0") and starts[6]["target"] == ["producer:p0"]
    assert calls[-1] == "down"
    assert log.index("stop producer:p0") < log.index("stop group:g") < log.index("close producer:p0")


def test_run_bundle_holds_resolved_experiment_run_json_and_history(tmp_path: Path) -> None:
    result, _, _ = _run(tmp_path)
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["status"] == "completed" and info["seed"] == 1 and info["backend"] == "fake"
    assert info["broker"]["flavour"] == "apache-kafka" and info["verify"]["slo"]["controller_failover"] == 30.0
    assert info["versions"]["python"] and info["versions"]["librdkafka"]
    assert "steady_timeout: 2s" in (result.run_dir / "experiment.yaml").read_text()
    types = [e["type"] for e in read_history(result.run_dir / "history.jsonl").events]
    assert types[0] == "run.start" and types[-1] == "run.end"


def test_unresolvable_target_is_recorded_as_skipped_not_fatal(tmp_path: Path) -> None:
    text = EXP.replace("coordinator:g}", "leader:t/0}").replace("leader:t/1", "leader:t/0")
    text = text.replace("  - {at: 100ms, fault: kill, target: controller, duration: 200ms}\n",
                        "  - {at: 100ms, fault: kill, target: broker:1, duration: 200ms}\n")
    result, _, _ = _run(tmp_path, text)
    assert result.status == "completed"


def test_backend_failure_mid_chaos_is_recorded_and_teardown_still_runs(tmp_path: Path) -> None:
    result, backend, log = _run(tmp_path, fail_on="pause")
    events = read_history(result.run_dir / "history.jsonl").events
    assert result.status == "completed"
    assert backend.cluster is not None and backend.cluster.calls[-1] == "down"
    assert any(e["type"] == "fault.error" for e in events) or any(
        e["type"] == "fault.start" for e in events)
    assert "close producer:p0" in log


def test_steady_state_never_reached_aborts_without_injecting(tmp_path: Path) -> None:
    """With no observed controller the steady-state probes fail: no fault fires, teardown still runs."""
    import dataclasses

    runner.TICK_S = 0.02
    log: list[str] = []
    parts = dataclasses.replace(fake_parts(log), observers=lambda exp, cluster, sink: [])
    backend = FakeBackend()
    exp = load_experiment_text(EXP.replace("steady_timeout: 2s", "steady_timeout: 200ms"), "engine.yaml")
    result = run_experiment(exp, backend, backend_reason="test", runs_dir=tmp_path, parts=parts)
    assert result.status == "aborted" and "steady state was not reached" in (result.error or "")
    assert backend.cluster is not None and backend.cluster.calls == ["down"]
    probes = [e for e in read_history(result.run_dir / "history.jsonl").events if e["type"] == "probe"]
    assert probes and not any(p["ok"] for p in probes if p["name"] == "controller_present")
    assert "close producer:p0" in log


MIGRATING = """
name: engine-migration
cluster: {kafka: "3.9.2", brokers: 3, zookeepers: 1, controllers: 1}
topics: [{name: t, partitions: 2, replication_factor: 3}]
workload:
  producers: [{topic: t}]
steady_timeout: 2s
schedule:
  - {at: 100ms, action: migrate_to_kraft, timeout: 1s}
  - {during: copy, at: 100ms, fault: pause, target: broker:2, duration: 100ms}
duration: 600ms
drain: 100ms
"""


def test_a_fault_timed_during_a_migration_step_that_never_began_is_recorded_as_skipped(tmp_path: Path) -> None:
    """The fake backend cannot migrate (the migration ends as an error at its first step), so step `copy` never
    begins: the fault timed from it is not injected, and the history says why."""
    result, backend, _ = _run(tmp_path, MIGRATING)
    assert result.status == "completed", result.error
    events = read_history(result.run_dir / "history.jsonl").events
    (skipped,) = [e for e in events if e["type"] == "fault.skipped"]
    assert skipped["fault_id"] == 1 and "step copy of migrate_to_kraft did not begin" in skipped["error"]
    assert not any(c.startswith("pause") for c in backend.cluster.calls)  # type: ignore[union-attr]


def test_a_fault_timed_during_a_migration_step_is_injected_counting_from_the_steps_start(tmp_path: Path) -> None:
    """A cluster that migrates (stand-in: every step ends at once): the pause timed 100 ms into step `copy` fires
    after the migration's op.start of that step (to the millisecond its stamp carries), however late the step began."""
    from harness.cluster.base import ClusterSpec
    from harness.cluster.render_migration import BrokerPhase
    from harness.history.nodes import NodeId
    from tests.unit.engine.fakes import FakeCluster
    from tests.unit.engine.test_operations_in_runs import FakeOperator

    class Migrating(FakeCluster):
        def migrate(self, node: NodeId, phase: BrokerPhase = "migrating") -> str:
            self.calls.append(f"migrate {node}")
            return phase

        def migration_copied(self) -> str | None:
            return None

    class Backend(FakeBackend):
        def up(self, spec: ClusterSpec, workdir: Path) -> FakeCluster:
            self.cluster = Migrating(spec, self.fail_on)
            return self.cluster

    runner.TICK_S = 0.02
    exp = load_experiment_text(MIGRATING.replace("duration: 600ms", "duration: 3s"), "engine.yaml")
    backend = Backend()
    parts = dataclasses.replace(fake_parts([]), operator=lambda cluster: FakeOperator())
    result = run_experiment(exp, backend, backend_reason="test", runs_dir=tmp_path, parts=parts)
    assert result.status == "completed", result.error
    events = read_history(result.run_dir / "history.jsonl").events
    copy = next(e["t"] for e in events if e["type"] == "op.start" and e.get("step") == "copy")
    (paused,) = [e for e in events if e["type"] == "fault.start" and e["fault_id"] == 1]
    # fault.start carries the wall clock in whole milliseconds (the injector stamps when its action began), so its
    # `t` may read up to 1 ms before the monotonic instant the pause was started at (CI saw 0.099918 for 0.1)
    assert paused["t"] >= copy + 0.1 - 0.001, (paused["t"], copy)
