"""`upgrade` and `finalize_upgrade` in the operation runner, against stand-ins for the cluster and operator (no
processes: these check the sequencing, not Kafka; `tests/integration/e2e/test_upgrade_on_apache_kafka.py` and
the nightly `tests/nightly/test_zk_rolling_upgrade_on_apache_kafka.py` run them on Apache Kafka): each broker is
stopped, switched to the new release while it is down, and started; the finalize waits for the upgrade to end, then
rolls the brokers with the protocol bumped; a finalize with no finished upgrade, and a backend that cannot switch
releases, end as errors saying why."""

from __future__ import annotations

from collections.abc import Mapping

from harness.experiment import load_experiment_text
from harness.faults.operations import OperationRunner
from harness.faults.schedule import PlannedOperation, plan_operations
from harness.history.jsonl import record_of
from harness.history.nodes import NodeId
from tests.unit.engine.test_operations_in_runs import FakeOperator
from tests.unit.engine.test_rolling_restart_in_runs import Cycler

EXP = """
name: up
cluster: {kafka: "3.7.0", brokers: 2, broker_config: {inter.broker.protocol.version: "3.7"}}
topics: [{name: t, partitions: 2, replication_factor: 2}]
workload: {producers: [{topic: t}]}
schedule:
  - {at: 50ms, action: upgrade, to: "3.9.2", timeout: 5s}
  - {at: 60ms, action: finalize_upgrade, timeout: 5s}
duration: 300ms
"""


class StandInCluster(Cycler):
    """Stands in for the process cluster: records the stops, starts and release switches, in order."""

    def reconfigure(self, node: NodeId, *, kafka: str | None = None, config: Mapping[str, str] | None = None) -> str:
        self.calls.append(f"{node} -> {kafka or 'same release'} {dict(config or {})}")
        return f"Apache Kafka {kafka or '3.9.2'}"


def _ops() -> tuple[PlannedOperation, ...]:
    return plan_operations(load_experiment_text(EXP, "up.yaml"))


def test_each_broker_switches_release_while_stopped_and_the_finalize_bumps_the_protocol_after_the_upgrade() -> None:
    written: list[dict[str, object]] = []
    cluster = StandInCluster()
    runner = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), nodes=cluster, releases=cluster)
    upgrade, finalize = _ops()
    runner.start(upgrade)
    runner.start(finalize)
    assert runner.join(20) == []
    ibp = {"inter.broker.protocol.version": "3.9"}
    assert cluster.calls == [
        "stop broker:1 as 0.1", "broker:1 -> 3.9.2 {}", "start broker:1", "stop broker:2 as 0.2",
        "broker:2 -> 3.9.2 {}", "start broker:2",
        "stop broker:1 as 1.1", f"broker:1 -> same release {ibp}", "start broker:1",
        "stop broker:2 as 1.2", f"broker:2 -> same release {ibp}", "start broker:2"]
    ends = {e["action"]: e for e in written if e["type"] == "op.end"}
    assert ends["upgrade"]["outcome"] == ends["finalize_upgrade"]["outcome"] == "done"
    assert str(ends["upgrade"]["detail"]).startswith("broker 1 as Apache Kafka 3.9.2 ")
    assert ends["finalize_upgrade"]["via"] == ("inter.broker.protocol.version=3.9, graceful stop and start, one "
                                              "broker at a time")


def test_a_finalize_without_a_finished_upgrade_ends_as_an_error_and_restarts_nothing() -> None:
    written: list[dict[str, object]] = []
    cluster = StandInCluster()
    runner = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), nodes=cluster, releases=cluster)
    runner.start(_ops()[1])
    assert runner.join(10) == []
    (end,) = [e for e in written if e["type"] == "op.end"]
    assert (end["outcome"], end["detail"]) == ("error", "no upgrade finished before it: nothing to finalize")
    assert cluster.calls == []


def test_a_backend_that_cannot_switch_releases_ends_the_upgrade_as_an_error_saying_so() -> None:
    written: list[dict[str, object]] = []
    cluster = StandInCluster()
    runner = OperationRunner(FakeOperator(), lambda e: written.append(record_of(e)), nodes=cluster)
    runner.start(_ops()[0])
    assert runner.join(10) == []
    (end,) = [e for e in written if e["type"] == "op.end"]
    assert end["outcome"] == "error" and "the process backend can" in str(end["detail"])
    assert cluster.calls == []


KRAFT = EXP.replace('cluster: {kafka: "3.7.0", brokers: 2, broker_config: {inter.broker.protocol.version: "3.7"}}',
                    'cluster: {mode: kraft, kafka: "3.9.2", brokers: 2, controllers: 1}').replace('to: "3.9.2"',
                                                                                                 'to: "4.4.0"')


def test_a_kraft_upgrade_rolls_the_controllers_first_each_caught_up_and_the_finalize_bumps_metadata_version() -> None:
    written: list[dict[str, object]] = []
    cluster, operator = StandInCluster(), FakeOperator()
    runner = OperationRunner(operator, lambda e: written.append(record_of(e)), nodes=cluster, releases=cluster)
    upgrade, finalize = plan_operations(load_experiment_text(KRAFT, "up.yaml"))
    runner.start(upgrade)
    runner.start(finalize)
    assert runner.join(20) == []
    assert cluster.calls == [
        "stop controller:101 as 0.1", "controller:101 -> 4.4.0 {}", "start controller:101",
        "stop broker:1 as 0.2", "broker:1 -> 4.4.0 {}", "start broker:1",
        "stop broker:2 as 0.3", "broker:2 -> 4.4.0 {}", "start broker:2"]  # the finalize restarts nothing
    assert operator.calls == ["caught up 101", "caught up 101", "in sync 1", "in sync 1", "in sync 2", "in sync 2",
                              "finalize metadata.version"]
    starts = {e["action"]: e for e in written if e["type"] == "op.start"}
    assert starts["upgrade"]["brokers"] == [101, 1, 2] and "brokers" not in starts["finalize_upgrade"]
    ends = {e["action"]: e for e in written if e["type"] == "op.end"}
    assert ends["finalize_upgrade"]["detail"] == "metadata.version level 21 -> 27"
