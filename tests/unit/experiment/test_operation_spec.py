"""Schedule operations (`action:` entries): what loads, what is refused with file:line:field, the plan
(shuffles drawn from the seed without touching the faults' draws), and the resolved YAML reading back
into the same spec (KRaft clusters too)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import Problem, ValidationError
from harness.experiment import load_experiment_text, load_experiments_text
from harness.experiment.dump import dump_experiment
from harness.experiment.schema import OperationSpec
from harness.faults.schedule import plan, plan_operations

ROOT = Path(__file__).resolve().parents[3]
HEAD = """name: ops
duration: 60s
seed: 3
cluster: {brokers: 4}
topics: [{name: t, partitions: 3, replication_factor: 2}]
workload: {consumers: [{group: g, topics: [t], members: 2}]}
schedule:
  - {at: 5s, fault: kill, target: random-broker, duration: 5s}
"""


def problems_of(text: str) -> list[Problem]:
    with pytest.raises(ValidationError) as info:
        load_experiments_text(text, "m.yaml")
    return info.value.problems


def only(text: str, line: int, field: str, fragment: str) -> None:
    """Loading `text` fails with a problem at m.yaml:`line` on `field` that says `fragment`."""
    rendered = [p.render() for p in problems_of(text)]
    assert any(r.startswith(f"m.yaml:{line}:") and f": {field}: " in r and fragment in r for r in rendered), rendered


def test_reassign_and_elect_preferred_load_as_typed_operations_numbered_with_the_faults() -> None:
    exp = load_experiment_text(HEAD + """  - {at: 10s, action: reassign, topic: t, replicas: {0: [3, 4], "2": [4, 1]}}
  - {at: 20s, action: elect_preferred}
  - {at: 30s, action: elect_preferred, topic: t, partitions: [2, 0], timeout: 5s}
""", "m.yaml")
    assert [f.index for f in exp.schedule] == [0]
    assert exp.operations == (
        OperationSpec(1, 10.0, "reassign", "t", (), ((0, (3, 4)), (2, (4, 1))), False, 60.0),
        OperationSpec(2, 20.0, "elect_preferred", None, (), (), False, 30.0),
        OperationSpec(3, 30.0, "elect_preferred", "t", (0, 2), (), False, 5.0))


@pytest.mark.parametrize(("entry", "field", "fragment"), [
    ("{at: 1s, action: reasign, topic: t, shuffle: true}", "schedule[1].action", "did you mean 'reassign'"),
    ("{at: 1s, action: reassign, topic: t}", "schedule[1].replicas", "either `replicas`"),
    ("{at: 1s, action: reassign, topic: t, shuffle: true, replicas: {0: [1]}}", "schedule[1].replicas", "not both"),
    ("{at: 1s, action: reassign, shuffle: true}", "schedule[1].topic", "required field is missing"),
    ("{at: 1s, action: reassign, topic: nope, shuffle: true}", "schedule[1].topic", "not declared under `topics`"),
    ("{at: 1s, action: reassign, topic: t, replicas: {0: [1, 1]}}", "schedule[1].replicas.0", "distinct broker"),
    ("{at: 1s, action: reassign, topic: t, replicas: {0: []}}", "schedule[1].replicas.0", "non-empty list"),
    ("{at: 1s, action: reassign, topic: t, replicas: {0: [1, 5]}}", "schedule[1].replicas.0",
     "broker 5 does not exist (brokers 1..4)"),
    ("{at: 1s, action: reassign, topic: t, replicas: {3: [1]}}", "schedule[1].replicas.3", "has 3 partitions"),
    ("{at: 1s, action: reassign, topic: t, replicas: {x: [1]}}", "schedule[1].replicas.x", "a partition number"),
    ("{at: 1s, action: reassign, topic: t, replicas: [1, 2]}", "schedule[1].replicas", "map partition numbers"),
    ("{at: 1s, action: elect_preferred, topic: t, partitions: [0, 0]}", "schedule[1].partitions", "distinct"),
    ("{at: 1s, action: elect_preferred, topic: t, partitions: [7]}", "schedule[1].partitions", "has 3 partitions"),
    ("{at: 1s, action: elect_preferred, target: broker:1}", "schedule[1].target", "unknown"),
    ("{at: 70s, action: elect_preferred}", "schedule[1].at", "at or after the experiment's duration"),
    ("{at: 1s, action: elect_preferred, fault: kill}", "schedule[1]", "either a `fault:` or an `action:`"),
    ("{at: 1s, action: add_partitions, topic: t}", "schedule[1].count", "required field is missing"),
    ("{at: 1s, action: add_partitions, topic: t, count: 3}", "schedule[1].count", "already has 3 partitions"),
    ("{at: 1s, action: add_partitions, topic: t, count: 5000}", "schedule[1].count", "at most 1000"),
    ("{at: 1s, action: add_partitions, topic: t, count: 4, partitions: [0]}", "schedule[1].partitions", "unknown"),
    ("{at: 1s, action: scale_consumers, group: nope, members: 2}", "schedule[1].group",
     "not declared under `workload.consumers` (got 'nope'); declared groups: g"),
    ("{at: 1s, action: scale_consumers, group: g, members: -1}", "schedule[1].members", "must be >= 0"),
    ("{at: 1s, action: scale_consumers, group: g, members: 33}", "schedule[1].members", "at most 32"),
    ("{at: 1s, action: scale_consumers, members: 2}", "schedule[1].group", "required field is missing"),
    ("{at: 1s, action: scale_consumers, group: g, members: 2, topic: t}", "schedule[1].topic", "unknown"),
    ("{at: 1s, action: scale_consumers, group: g, members: 2, timeout: 5s}", "schedule[1].timeout", "unknown"),
    ("{at: 1s, action: rolling_restart, brokers: [1, 1]}", "schedule[1].brokers", "distinct broker ids"),
    ("{at: 1s, action: rolling_restart, brokers: 2}", "schedule[1].brokers", "non-empty list"),
    ("{at: 1s, action: rolling_restart, brokers: [2, 5]}", "schedule[1].brokers[1]", "broker 5 does not exist"),
    ("{at: 1s, action: rolling_restart, topic: t}", "schedule[1].topic", "valid: action, at, brokers, timeout"),
])
def test_a_bad_operation_is_refused_naming_its_line_and_field(entry: str, field: str, fragment: str) -> None:
    only(HEAD + f"  - {entry}\n", 9, field, fragment)


def test_shuffle_is_drawn_from_the_seed_and_leaves_the_faults_draws_alone() -> None:
    base = load_experiment_text(HEAD, "m.yaml")
    text = HEAD + "  - {at: 10s, action: reassign, topic: t, shuffle: true}\n"
    first, again = load_experiment_text(text, "m.yaml"), load_experiment_text(text, "m.yaml")
    (op,) = plan_operations(first)
    assert op == plan_operations(again)[0]
    assert [p for p, _ in op.replicas] == [0, 1, 2] and op.partitions == (0, 1, 2)
    assert all(len(r) == 2 and len(set(r)) == 2 and set(r) <= {1, 2, 3, 4} for _, r in op.replicas)
    assert plan(first) == plan(base)
    other = load_experiment_text(text.replace("seed: 3", "seed: 4"), "m.yaml")
    draws = {plan_operations(load_experiment_text(text.replace("seed: 3", f"seed: {s}"), "m.yaml"))[0].replicas
             for s in range(8)}
    assert len(draws) > 1 and plan_operations(other)[0].start == 10.0


def test_operations_start_in_time_order_with_every_partition_when_none_is_named() -> None:
    exp = load_experiment_text(HEAD + """  - {at: 30s, action: elect_preferred, topic: t}
  - {at: 10s, action: reassign, topic: t, replicas: {1: [2, 3]}}
""", "m.yaml")
    ops = plan_operations(exp)
    assert [(o.index, o.start, o.partitions) for o in ops] == [(2, 10.0, (1,)), (1, 30.0, (0, 1, 2))]


def test_add_partitions_plans_the_partitions_it_creates_from_the_count_the_topic_has_by_then() -> None:
    """A second add_partitions of a topic starts from the first one's count; partitions named later may be new."""
    exp = load_experiment_text(HEAD + """  - {at: 20s, action: add_partitions, topic: t, count: 6, timeout: 10s}
  - {at: 10s, action: add_partitions, topic: t, count: 4}
""", "m.yaml")
    assert exp.operations[1] == OperationSpec(2, 10.0, "add_partitions", "t", timeout=30.0, count=4)
    ops = plan_operations(exp)
    assert [(o.index, o.partitions) for o in ops] == [(2, (3,)), (1, (4, 5))]
    assert ops[1].describe() == "#1 add_partitions t -> 6 partitions"
    later = load_experiment_text(HEAD + """  - {at: 10s, action: add_partitions, topic: t, count: 5}
  - {at: 20s, action: elect_preferred, topic: t}
  - {at: 30s, action: reassign, topic: t, replicas: {4: [1, 2]}}
""", "m.yaml")
    assert [o.partitions for o in plan_operations(later)] == [(3, 4), (0, 1, 2, 3, 4), (4,)]
    only(HEAD + """  - {at: 10s, action: add_partitions, topic: t, count: 5}
  - {at: 20s, action: add_partitions, topic: t, count: 5}
  - {at: 5s, action: elect_preferred, topic: t, partitions: [4]}
""", 10, "schedule[2].count", "already has 5 partitions by then")
    only(HEAD + """  - {at: 10s, action: add_partitions, topic: t, count: 5}
  - {at: 5s, action: elect_preferred, topic: t, partitions: [4]}
""", 10, "schedule[2].partitions", "has 3 partitions (0..2)")


def test_scale_consumers_loads_with_its_group_count_and_manner() -> None:
    exp = load_experiment_text(HEAD + """  - {at: 10s, action: scale_consumers, group: g, members: 4}
  - {at: 20s, action: scale_consumers, group: g, members: 1, abrupt: true}
""", "m.yaml")
    assert exp.operations == (
        OperationSpec(1, 10.0, "scale_consumers", timeout=30.0, group="g", members=4),
        OperationSpec(2, 20.0, "scale_consumers", timeout=30.0, group="g", members=1, abrupt=True))
    assert [o.describe() for o in plan_operations(exp)] == ["#1 scale_consumers g -> 4 members",
                                                            "#2 scale_consumers g -> 1 members (abrupt)"]


def test_rolling_restart_loads_with_its_broker_order_or_every_broker_and_a_per_broker_timeout() -> None:
    exp = load_experiment_text(HEAD + """  - {at: 10s, action: rolling_restart}
  - {at: 20s, action: rolling_restart, brokers: [4, 2], timeout: 90s}
""", "m.yaml")
    assert exp.operations == (OperationSpec(1, 10.0, "rolling_restart", timeout=120.0),
                              OperationSpec(2, 20.0, "rolling_restart", timeout=90.0, brokers=(4, 2)))
    planned = plan_operations(exp)
    assert [(o.describe(), o.brokers) for o in planned] == [("#1 rolling_restart every broker", (1, 2, 3, 4)),
                                                            ("#2 rolling_restart brokers 4, 2", (4, 2))]
    step = planned[1].restart_step(2)
    assert (step.fault_id, step.spec.kind, str(step.target), step.describe()) == ("2.2", "stop", "broker:2",
                                                                                  "#2.2 stop broker:2")


def test_restart_producer_loads_naming_a_declared_producer_and_an_unknown_one_is_refused() -> None:
    head = HEAD.replace("workload: {", "workload: {producers: [{id: ingest, topic: t}], ")
    exp = load_experiment_text(head + """  - {at: 10s, action: restart_producer, producer: ingest, abrupt: true}
""", "m.yaml")
    assert exp.operations == (OperationSpec(1, 10.0, "restart_producer", timeout=30.0, abrupt=True,
                                            producer="ingest"),)
    assert [o.describe() for o in plan_operations(exp)] == ["#1 restart_producer ingest (abrupt)"]
    only(head + "  - {at: 10s, action: restart_producer, producer: p0}\n", 9, "schedule[1].producer",
         "declared producers: ingest")


def test_the_resolved_yaml_reads_back_into_the_same_spec_for_operations_and_every_shipped_variant() -> None:
    exp = load_experiment_text((HEAD + """  - {at: 10s, action: reassign, topic: t, replicas: {0: [3, 4]}, timeout: 20s}
  - {at: 20s, action: elect_preferred, topic: t, partitions: [1]}
  - {at: 30s, action: add_partitions, topic: t, count: 5}
  - {at: 40s, action: scale_consumers, group: g, members: 1, abrupt: true}
  - {at: 50s, action: rolling_restart, brokers: [2, 1], timeout: 45s}
  - {at: 55s, action: restart_producer, producer: ingest, abrupt: true}
""").replace("workload: {", "workload: {producers: [{id: ingest, topic: t}], "), "m.yaml")
    assert dataclasses.replace(load_experiment_text(dump_experiment(exp), "m.yaml")) == exp
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        for variant in load_experiments_text(path.read_text(), str(path)):
            again = load_experiment_text(dump_experiment(variant), str(path))
            assert dataclasses.replace(again, variant=variant.variant) == variant, (path, variant.variant)


def test_actions_lists_the_operations_after_the_faults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["actions"]) == 0
    out = capsys.readouterr().out
    assert out.index("Faults (`fault:`") < out.index("Operations (`action:`") < out.index("reassign: ")
    assert "elect_preferred: " in out and "AlterPartitionReassignments" in out
