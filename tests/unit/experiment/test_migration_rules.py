"""`migrate_to_kraft` and the cluster it needs (rows M1-M3 of docs/kafka-behaviour.md): what loads, what is
refused with file:line:field and the rule, the plan's nodes (the brokers, the brokers again, the controllers), and
the resolved YAML reading back into the same spec."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text, load_experiments_text
from harness.experiment.dump import dump_experiment
from harness.faults.schedule import plan_operations
from harness.faults.targets import Target

CLUSTER = '{kafka: "3.9.2", brokers: 3, zookeepers: 1, controllers: 3}'
OP = "{at: 5s, action: migrate_to_kraft}"


def text(cluster: str = CLUSTER, op: str = OP, extra: str = "") -> str:
    return (f"name: mig\nduration: 60s\ncluster: {cluster}\n"
            "topics: [{name: t, partitions: 3, replication_factor: 3}]\n"
            f"workload: {{producers: [{{topic: t}}]}}\nschedule:\n  - {op}\n{extra}")


def refused(source: str, line: int, field: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_experiments_text(source, "m.yaml")
    rendered = [p.render() for p in info.value.problems]
    assert any(r.startswith(f"m.yaml:{line}:") and f": {field}: " in r and fragment in r for r in rendered), rendered


def test_a_migration_of_a_39_zookeeper_cluster_with_controllers_loads_and_plans_its_nodes_in_kafkas_order() -> None:
    exp = load_experiment_text(text(), "m.yaml")
    assert exp.cluster.migrating and exp.cluster.voter_ids() == (101, 102, 103)
    (op,) = plan_operations(exp)
    brokers = [Target("broker", b) for b in (1, 2, 3)]
    assert list(op.nodes) == [*brokers, *brokers, *(Target("controller", c) for c in (101, 102, 103))]
    assert op.restart_step(4).fault_id == "0.4" and op.restart_step(4).target == Target("broker", 1)
    assert load_experiment_text(dump_experiment(exp), "again.yaml").cluster == exp.cluster
    staying = load_experiment_text(text(op="{at: 5s, action: migrate_to_kraft, steps: [controllers, brokers, copy]}"),
                                   "m.yaml")
    assert load_experiment_text(dump_experiment(staying), "again.yaml").operations == staying.operations


@pytest.mark.parametrize(("source", "line", "field", "fragment"), [
    (text(cluster='{kafka: "3.8.1", brokers: 3, zookeepers: 1, controllers: 3}'), 3, "cluster.kafka",
     "runs on Apache Kafka 3.9, the bridge release"),
    (text(cluster='{kafka: "3.9", brokers: 3, zookeepers: 1, controllers: 3}'), 3, "cluster.kafka",
     "from an exact release"),
    (text(cluster='{kafka: "3.9.2", brokers: 3, zookeepers: 1}'), 3, "cluster.controllers",
     "starts a KRaft controller quorum"),
    (text(op="{at: 5s, fault: kill, target: broker:1, duration: 5s}"), 3, "cluster.controllers",
     "the KRaft quorum a `migrate_to_kraft` starts"),
    (text(cluster='{kafka: "3.9.2", brokers: 3, mode: kraft, controllers: 3}'), 7, "schedule[0].action",
     "runs KRaft already"),
    (text(op="{at: 5s, action: migrate_to_kraft, steps: [controllers, copy]}"), 7, "schedule[0].steps",
     "a prefix of the migration's order"),
    (text(extra="  - {at: 9s, action: migrate_to_kraft}\n"), 8, "schedule[1].action", "one migration per experiment"),
    (text(extra='  - {at: 9s, action: upgrade, to: "3.9.3"}\n'), 8, "schedule[1].action", "beside a migration"),
    (text(cluster='{kafka: "3.9.2", brokers: 3, zookeepers: 1, controllers: 2}'), 3, "cluster.controllers",
     "1, 3 or 5 voters"),
    (text(extra="  - {during: coppy, at: 1s, fault: kill, target: controller:101, duration: 5s}\n"), 8,
     "schedule[1].during", "did you mean 'copy'"),
    (text(op="{at: 5s, action: migrate_to_kraft, steps: [controllers, brokers, copy]}",
          extra="  - {during: brokers_kraft, at: 1s, fault: kill, target: controller:101, duration: 5s}\n"), 8,
     "schedule[1].during", "its steps are controllers, brokers, copy"),
    (text(op="{at: 5s, fault: kill, target: broker:1, duration: 5s, during: copy}", cluster=CLUSTER.replace(
        ", controllers: 3", "")), 7, "schedule[0].during", "this schedule has none"),
])
def test_a_migration_the_procedure_does_not_allow_is_refused_naming_the_rule(source: str, line: int, field: str,
                                                                            fragment: str) -> None:
    refused(source, line, field, fragment)


def test_a_fault_timed_during_a_step_loads_reads_back_and_is_not_compared_with_faults_timed_otherwise() -> None:
    """`during: copy` with `at: 1s`: one second after the copy step began, whenever that is; a kill of the same
    controller at 40 s from the chaos phase's start may or may not overlap it, so the two are not compared."""
    exp = load_experiment_text(text(extra="  - {during: copy, at: 1s, fault: kill, target: controller:101, "
                                          "duration: 10s}\n  - {at: 40s, fault: kill, target: controller:101, "
                                          "duration: 10s}\n"), "m.yaml")
    assert [f.during for f in exp.schedule] == ["copy", None]
    assert load_experiment_text(dump_experiment(exp), "again.yaml").schedule == exp.schedule
