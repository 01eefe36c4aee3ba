"""`expect:`: which checks a variant is known to fail, selected by matrix axis and value, with errors at the line."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text, load_experiments_text
from harness.experiment.dump import dump_experiment

BASE = """\
name: e
duration: 10s
cluster: {brokers: 3}
topics: [{name: t, partitions: 1, replication_factor: 3}]
workload:
  producers: [{topic: t, acks: all}]
"""
MATRIX = BASE + """matrix:
  cluster.kafka: ["3.6.1", "3.7.0"]
  workload.producers[*].acks: [1, all]
"""


def test_a_selector_by_matrix_key_or_label_picks_its_variants() -> None:
    exps = load_experiments_text(MATRIX + """expect:
  "cluster.kafka=3.6.1": {fail: [delivery.lost_write], why: KAFKA-0}
  "kafka=3.7.0,acks=1": {fail: [duplicate]}
""")
    got = {e.variant: e.verify.expect for e in exps}
    assert got["kafka=3.6.1,acks=1"].fail == ("delivery.lost_write",)
    assert got["kafka=3.6.1,acks=1"].why == "KAFKA-0"
    assert got["kafka=3.6.1,acks=all"].fail == ("delivery.lost_write",)
    assert got["kafka=3.7.0,acks=1"].fail == ("delivery.duplicate",)  # the id's last part names the check
    assert got["kafka=3.7.0,acks=all"].fail == ()


def test_every_variant_and_the_shorthand_without_a_matrix() -> None:
    exps = load_experiments_text(MATRIX + 'expect: {"*": {fail: [slo.rebalance]}}\n')
    assert {e.verify.expect.fail for e in exps} == {("slo.rebalance",)}
    one = load_experiment_text(BASE + "expect: {fail: [delivery.lost_write], why: weak acks}\n")
    assert one.verify.expect.fail == ("delivery.lost_write",) and one.verify.expect.why == "weak acks"


def test_selectors_that_match_one_variant_add_up_without_repeats() -> None:
    exps = load_experiments_text(MATRIX + """expect:
  "*": {fail: [delivery.lost_write]}
  "acks=1": {fail: [delivery.lost_write, delivery.duplicate]}
""")
    got = {e.variant: e.verify.expect.fail for e in exps}
    assert got["kafka=3.6.1,acks=1"] == ("delivery.lost_write", "delivery.duplicate")
    assert got["kafka=3.6.1,acks=all"] == ("delivery.lost_write",)


@pytest.mark.parametrize(("block", "message"), [
    ('expect: {"kafka=3.6.2": {fail: [duplicate]}}', "values 3.6.1, 3.7.0, not '3.6.2'"),
    ('expect: {"brokers=3": {fail: [duplicate]}}', "no matrix axis is named 'brokers'"),
    ('expect: {"kafka=3.6.1": {fail: [no_such_check]}}', "not a valid choice"),
    ('expect: {"kafka=3.6.1": {fail: []}}', "name at least one check"),
    ('expect: {"kafka=3.6.1": {fial: [duplicate]}}', "unknown key in an expectation"),
    ("expect: [duplicate]", "expect must be a mapping"),
])
def test_a_bad_expectation_names_the_line_and_field(block: str, message: str) -> None:
    text = MATRIX + block + "\n"
    with pytest.raises(ValidationError) as err:
        load_experiments_text(text, "x.yaml")
    line = text.count("\n")  # the block is the file's last line
    assert any(message in p.message and p.line == line and p.field.startswith("expect")
               for p in err.value.problems), str(err.value)


def test_a_variant_selector_without_a_matrix_is_refused() -> None:
    with pytest.raises(ValidationError, match="a variant selector needs a matrix"):
        load_experiment_text(BASE + 'expect: {"kafka=3.6.1": {fail: [duplicate]}}\n')


def test_the_resolved_file_keeps_the_variant_expectation() -> None:
    exp = load_experiments_text(MATRIX + 'expect: {"kafka=3.6.1": {fail: [duplicate], why: a bug}}\n')[0]
    again = load_experiment_text(dump_experiment(exp))
    assert again.verify.expect == exp.verify.expect
