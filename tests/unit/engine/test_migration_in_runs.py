"""`migrate_to_kraft` in the operation runner, against stand-ins for the cluster and operator (no processes: these check
the sequencing, not Kafka; `tests/nightly/test_migration_on_apache_kafka.py` runs it on Apache Kafka 3.9.2):
the controllers start and catch up, the brokers roll into the migrating phase, the copy is awaited, the brokers roll
into KRaft, the controllers roll out of the migration, each restart a stop fault numbered along the operation's nodes
and each step an op.start/op.end pair with its name; `steps:` stops after a prefix; a step that does not end `done`
ends the migration there, naming the step; a backend without a migration switch ends it as an error."""

from __future__ import annotations

from harness.cluster.render_migration import BrokerPhase
from harness.errors import BackendError
from harness.experiment import load_experiment_text
from harness.faults.operations import OperationRunner
from harness.faults.schedule import PlannedOperation, plan_operations
from harness.history.jsonl import record_of
from harness.history.nodes import NodeId
from harness.waiting import wait_until
from tests.unit.engine.test_operations_in_runs import FakeOperator
from tests.unit.engine.test_rolling_restart_in_runs import Cycler

EXP = """
name: mig
cluster: {kafka: "3.9.2", brokers: 2, controllers: 1, zookeepers: 1}
topics: [{name: t, partitions: 2, replication_factor: 2}]
workload: {producers: [{topic: t}]}
schedule:
  - {at: 50ms, action: migrate_to_kraft%s}
duration: 300ms
"""


class StandInCluster(Cycler):
    """Stands in for the process cluster: records the stops, starts and phase switches, in order; the copy ends at
    the second look."""

    def __init__(self, copied_after: int = 2) -> None:
        super().__init__()
        self.looks = 0
        self.copied_after = copied_after

    def start(self, node: NodeId) -> None:
        self.calls.append(f"start {node}")

    def migrate(self, node: NodeId, phase: BrokerPhase = "migrating") -> str:
        self.calls.append(f"{node} -> {phase if node.role == 'broker' else 'no migration'}")
        return phase

    def migration_copied(self) -> str | None:
        self.looks += 1
        return None if self.looks >= self.copied_after else "/migration {\"kraft_metadata_offset\": -1}"


def _op(extra: str = ", timeout: 5s") -> PlannedOperation:
    (op,) = plan_operations(load_experiment_text(EXP % extra, "mig.yaml"))
    return op


def _run(op: PlannedOperation, cluster: StandInCluster | None) -> list[dict[str, object]]:
    written: list[dict[str, object]] = []
    runner = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), nodes=cluster or Cycler(),
                             migration=cluster)
    runner.start(op)
    assert runner.join(30) == []
    ended = [e["step"] for e in written if e["type"] == "op.end" and e.get("step")]
    assert [s["step"] for s in runner.steps] == ended  # run.json's `migration`
    began = list(runner.step_began.items())  # the moments the faults timed `during` a step count from
    assert [step for step, _t in began] == ended and [t for _s, t in began] == sorted(t for _s, t in began)
    return written


def test_every_step_runs_in_kafkas_order_each_restart_a_numbered_stop_and_each_step_recorded() -> None:
    cluster = StandInCluster()
    written = _run(_op(), cluster)
    assert cluster.calls == [
        "start controller:101",
        "stop broker:1 as 0.1", "broker:1 -> migrating", "start broker:1",
        "stop broker:2 as 0.2", "broker:2 -> migrating", "start broker:2",
        "stop broker:1 as 0.3", "broker:1 -> kraft", "start broker:1",
        "stop broker:2 as 0.4", "broker:2 -> kraft", "start broker:2",
        "stop controller:101 as 0.5", "controller:101 -> no migration", "start controller:101"]
    steps = [(e["type"], e.get("step")) for e in written if e.get("step")]
    names = ["controllers", "brokers", "copy", "brokers_kraft", "controllers_kraft"]
    assert steps == [(t, n) for n in names for t in ("op.start", "op.end")]
    (end,) = [e for e in written if e["type"] == "op.end" and not e.get("step")]
    assert end["outcome"] == "done" and str(end["detail"]).startswith("controllers ")


def test_the_copy_step_ends_once_the_copy_ended_and_every_broker_follows_the_kraft_controller() -> None:
    written = _run(_op(", timeout: 5s, steps: [controllers, brokers, copy]"), StandInCluster())
    (copy,) = [e for e in written if e["type"] == "op.end" and e.get("step") == "copy"]
    assert copy["outcome"] == "done"
    assert copy["detail"] == "the metadata copy ended (dual-write); every broker follows the KRaft controller"


def test_steps_stop_the_migration_after_the_prefix_asked_for_here_in_dual_write() -> None:
    cluster = StandInCluster()
    written = _run(_op(", timeout: 5s, steps: [controllers, brokers, copy]"), cluster)
    assert not any("kraft" in c or "no migration" in c for c in cluster.calls)
    assert [e["step"] for e in written if e["type"] == "op.end" and e.get("step")] == ["controllers", "brokers", "copy"]


def test_a_copy_that_never_ends_ends_the_migration_at_that_step_naming_what_it_saw() -> None:
    cluster = StandInCluster(copied_after=10**9)
    written = _run(_op(", timeout: 1s"), cluster)
    (end,) = [e for e in written if e["type"] == "op.end" and not e.get("step")]
    assert end["outcome"] == "timeout"
    assert str(end["detail"]).startswith("step copy: awaited the metadata copy's end")
    assert "kraft_metadata_offset\": -1" in str(end["detail"])
    assert not any("kraft" in c for c in cluster.calls if "->" in c)


def test_a_backend_without_a_migration_switch_ends_the_migration_as_an_error_saying_so() -> None:
    written = _run(_op(), None)
    (end,) = [e for e in written if e["type"] == "op.end"]
    assert end["outcome"] == "error" and "cannot migrate a cluster to KRaft" in str(end["detail"])


class ZooKeeperAwayAtFirst(StandInCluster):
    """`/migration` cannot be read at the first look (ZooKeeper cut off), then the copy has ended."""

    def migration_copied(self) -> str | None:
        self.looks += 1
        if self.looks == 1:
            raise BackendError("cannot read /migration in ZooKeeper at 127.0.0.1:1: ConnectionLoss()")
        return None


def test_the_copy_step_asks_again_while_zookeeper_cannot_be_read() -> None:
    cluster = ZooKeeperAwayAtFirst()
    written = _run(_op(", timeout: 5s, steps: [controllers, brokers, copy]"), cluster)
    assert cluster.looks == 2
    assert [e["outcome"] for e in written if e["type"] == "op.end" and e.get("step") == "copy"] == ["done"]


def test_a_teardown_mid_step_ends_that_step_then_the_migration_as_errors_and_records_nothing_after() -> None:
    written: list[dict[str, object]] = []
    cluster = StandInCluster(copied_after=10**9)
    runner = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), nodes=cluster, migration=cluster)
    runner.start(_op(", timeout: 30s"))
    assert wait_until("the copy step to start", lambda: any(e.get("step") == "copy" for e in written), 10.0)
    runner.abandon("still running when the run was torn down")
    assert runner.join(10) == []
    ends = [(e.get("step"), e["outcome"], e["detail"]) for e in written if e["type"] == "op.end"]
    assert ends[-2:] == [("copy", "error", "still running when the run was torn down"),
                         (None, "error", "still running when the run was torn down")]
    assert [s["step"] for s in runner.steps] == ["controllers", "brokers", "copy"]


class ObservedCluster:
    """Stands in for the process cluster where the observers are built (nothing is started or connected)."""

    zookeeper_connect = "127.0.0.1:2181"
    bootstrap_servers = "127.0.0.1:9092,127.0.0.1:9093"
    nodes = (NodeId.broker(1), NodeId.broker(2))
    quorum_voters = {101: "127.0.0.1:9101"}


def test_a_migration_run_observes_the_kraft_quorum_beside_zookeeper_and_a_zookeeper_run_does_not() -> None:
    from harness.engine.parts import real_observers
    from harness.observe.quorum import QuorumObserver
    from harness.observe.zookeeper import ZooKeeperObserver

    def kinds(text: str) -> list[type]:
        observers = real_observers(load_experiment_text(text, "mig.yaml"), ObservedCluster(), lambda e: None)
        return [type(o) for o in observers]

    migrating = kinds(EXP % "")
    assert ZooKeeperObserver in migrating and QuorumObserver in migrating
    plain = EXP.replace(", controllers: 1", "").replace("  - {at: 50ms, action: migrate_to_kraft%s}\n", "")
    assert QuorumObserver not in kinds(plain.replace("schedule:\n", "schedule: []\n"))
