"""The schedule is pure and deterministic given the seed; the resolved YAML reads back equal."""

from __future__ import annotations

import dataclasses

from harness.experiment import load_experiment_text
from harness.experiment.dump import dump_experiment
from harness.faults.schedule import actions, plan

TEXT = """
name: sched
seed: 7
cluster: {brokers: 5}
topics: [{name: t, partitions: 2, replication_factor: 3}]
schedule:
  - {at: 10s, fault: kill, target: random-broker, duration: 5s, jitter: 3s}
  - {at: 20s, fault: latency, link: "client->random-broker", params: {latency_ms: 50}, duration: 5s}
  - {at: 30s, fault: kill, target: controller}
  - {at: 2s, fault: partition, groups: [[broker:1], [broker:2, zookeeper:1]], duration: 4s, jitter: 1s}
duration: 60s
"""


def test_same_seed_same_plan_and_different_seed_differs() -> None:
    exp = load_experiment_text(TEXT, "m.yaml")
    assert plan(exp) == plan(exp)
    others = [plan(dataclasses.replace(exp, seed=s)) for s in range(20)]
    assert any(o != others[0] for o in others)


def test_plan_orders_by_start_and_resolves_random_brokers_within_the_cluster() -> None:
    faults = plan(load_experiment_text(TEXT, "m.yaml"))
    assert [f.index for f in faults] == [3, 0, 1, 2]
    kill = next(f for f in faults if f.index == 0)
    assert kill.target is not None and kill.target.kind == "broker" and 1 <= (kill.target.id or 0) <= 5
    assert 10.0 <= kill.start <= 13.0 and kill.end == kill.start + 5.0
    latency = next(f for f in faults if f.index == 1)
    assert latency.link is not None and latency.link.dst.kind == "broker"
    controller_kill = next(f for f in faults if f.index == 2)
    assert controller_kill.target is not None and controller_kill.target.kind == "controller"
    assert controller_kill.end is None


def test_actions_put_heals_before_injections_at_the_same_time() -> None:
    exp = load_experiment_text("name: a\nduration: 60s\nschedule:\n"
                               "  - {at: 1s, fault: pause, target: broker:1, duration: 4s}\n"
                               "  - {at: 5s, fault: pause, target: broker:1, duration: 4s}\n", "m.yaml")
    acts = actions(plan(exp))
    assert [(a.at, a.what, a.fault.index) for a in acts] == [
        (1.0, "inject", 0), (5.0, "heal", 0), (5.0, "inject", 1), (9.0, "heal", 1)]


def test_resolved_yaml_reads_back_into_an_equal_experiment() -> None:
    exp = load_experiment_text(TEXT, "m.yaml")
    again = load_experiment_text(dump_experiment(exp), "m.yaml")
    assert again == exp


def test_faults_timed_during_a_step_wait_for_it_and_then_count_from_its_start() -> None:
    from harness.faults.schedule import StepTimed

    exp = load_experiment_text("""
name: mig
cluster: {kafka: "3.9.2", brokers: 3, zookeepers: 1, controllers: 1}
topics: [{name: t, partitions: 1, replication_factor: 3}]
schedule:
  - {at: 5s, action: migrate_to_kraft}
  - {during: copy, at: 2s, fault: kill, target: controller:101, duration: 10s}
  - {during: brokers_kraft, at: 1s, fault: isolate_zookeeper, target: broker:3, duration: 5s}
  - {at: 3s, fault: pause, target: broker:1, duration: 1s}
duration: 120s
""", "m.yaml")
    held = StepTimed(plan(exp))
    assert sorted(str(f.spec.during) for f in held.waiting) == ["brokers_kraft", "copy"]
    assert held.ready({"controllers": 6.0}) == ()
    ready = held.ready({"controllers": 6.0, "copy": 40.5})
    assert [(a.what, a.at, a.fault.spec.kind) for a in ready] == [("inject", 42.5, "kill"), ("heal", 52.5, "kill")]
    assert [f.spec.during for f in held.waiting] == ["brokers_kraft"]
