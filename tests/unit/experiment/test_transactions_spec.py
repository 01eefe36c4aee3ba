"""A transactional producer, consumer isolation and read-process-write pipelines in the experiment: defaults,
the resolved YAML, and the rules a pipeline must follow."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.dump import dump_experiment
from harness.experiment.schema import TransactionSpec

TXN = """name: t
duration: 30s
topics: [{name: t, partitions: 3}, {name: out}]
workload:
  producers:
    - {id: pay, topic: t, transactions: {}}
    - {id: plain, topic: t}
  consumers:
    - {group: g, topics: [t]}
    - {group: raw, topics: [t], isolation: read_uncommitted}
  pipelines:
    - {id: enrich, input: t, output: out}
"""


def test_a_transactional_producer_gets_kafkas_defaults_and_an_id_named_after_the_producer() -> None:
    exp = load_experiment_text(TXN, "mem.yaml")
    pay, plain = exp.workload.producers
    assert pay.transactions == TransactionSpec("kafka-chaos-pay", records=10, abort_rate=0.0, timeout=60.0)
    assert plain.transactions is None
    assert [c.isolation for c in exp.workload.consumers] == ["read_committed", "read_uncommitted"]
    (pipe,) = exp.workload.pipelines
    assert (pipe.group, pipe.transactions) == ("enrich", TransactionSpec("kafka-chaos-enrich"))


def test_the_resolved_yaml_keeps_transactions_and_isolation() -> None:
    exp = load_experiment_text(TXN, "mem.yaml")
    again = load_experiment_text(dump_experiment(exp), "resolved.yaml")
    assert again.workload == exp.workload


@pytest.mark.parametrize(("pipeline", "message"), [
    ("{id: pay, input: t, output: out}", "a producer has this id already"),
    ("{id: e, input: t, output: t}", "a pipeline writes to another topic than it reads"),
    ("{id: e, input: t, output: out, group: g}", "consumer group declared twice"),
    ("{id: e, input: t, output: out, transactions: {abort_rate: 0.5}}", "a pipeline aborts only what fails"),
    ("{id: e, input: t, output: out, transactions: {id: kafka-chaos-pay}}", "share a transactional id"),
    ("{id: e, input: t, output: nowhere}", "topic is not declared"),
])
def test_a_pipeline_that_clashes_with_the_rest_of_the_workload_is_refused(pipeline: str, message: str) -> None:
    text = TXN.replace("{id: enrich, input: t, output: out}", pipeline)
    with pytest.raises(ValidationError, match=message):
        load_experiment_text(text, "mem.yaml")


@pytest.mark.parametrize(("op", "message"), [
    ("{at: 5s, action: restart_producer, producer: plain, zombie: true}", "only a transactional producer"),
    ("{at: 5s, action: restart_producer, producer: pay, zombie: true, abrupt: true}", "choose one"),
])
def test_a_zombie_restart_needs_a_transactional_producer_and_excludes_abrupt(op: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load_experiment_text(TXN + f"schedule:\n  - {op}\n", "mem.yaml")


def test_a_zombie_restart_reads_back_from_the_resolved_yaml() -> None:
    exp = load_experiment_text(TXN + "schedule:\n  - {at: 5s, action: restart_producer, producer: pay, zombie: true}\n",
                               "mem.yaml")
    (op,) = exp.operations
    assert op.zombie and op.describe() == "#0 restart_producer pay (zombie)"
    assert load_experiment_text(dump_experiment(exp), "resolved.yaml").operations == exp.operations
