"""The explore block's narrowing of the fault space (`harness.faults.generator`, `explore:`): Jepsen's target
choices (`targets`), how often each kind is drawn (`rates`) and how many faults may be in effect at once
(`concurrent`); pure draws, no Kafka."""

from __future__ import annotations

import itertools
import random

import pytest

from harness.errors import HarnessError, ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.dump import dump_experiment
from harness.explore.session import Exploration
from harness.faults.generator import FaultSpace, at_most, draw_schedule, seconds
from tests.unit.explore.texts import HEAD


def _draws(space: FaultSpace, n: int = 300, kraft: bool = False) -> list[dict]:
    voters = (101, 102, 103) if kraft else ()
    return [e for i in range(n) for e in draw_schedule(random.Random(f"t{i}"), space, 3, voters, kraft)]


def _zookeeper_side(entry: dict) -> str:
    """Which brokers a partition cuts off from ZooKeeper: the `minority` or the `majority` of them."""
    with_zk = next(g for g in entry["groups"] if "zookeeper:1" in g)
    return "majority" if sum(m.startswith("broker:") for m in with_zk) < 2 else "minority"


def test_target_choices_narrow_each_fault_to_the_nodes_they_name() -> None:
    space = FaultSpace(kinds=("kill", "pause", "isolate"), faults=(1, 3), targets=("leaders",))
    assert {e["target"].split(":")[0] for e in _draws(space)} == {"leader"}
    space = FaultSpace(kinds=("kill",), faults=(1, 3), targets=("controller", "coordinator"))
    assert {e["target"].split(":")[0] for e in _draws(space)} == {"controller", "coordinator"}
    space = FaultSpace(kinds=("kill",), faults=(1, 3), targets=("one",))
    assert {e["target"] for e in _draws(space)} == {"broker:1", "broker:2", "broker:3"}


def test_a_partition_cuts_off_the_minority_or_the_majority_from_zookeeper_as_the_targets_say() -> None:
    every = FaultSpace(kinds=("partition",), faults=(1, 2))
    assert {_zookeeper_side(e) for e in _draws(every)} == {"minority", "majority"}
    for side in ("minority", "majority"):
        narrowed = FaultSpace(kinds=("partition",), faults=(1, 2), targets=(side,))
        assert {_zookeeper_side(e) for e in _draws(narrowed)} == {side}


def test_kraft_quorum_faults_aim_at_the_quorum_leader_or_one_voter_as_the_targets_say() -> None:
    leader = FaultSpace(kinds=("quorum_partition", "controller_kill"), faults=(1, 2), targets=("controller",))
    assert {(e["fault"], e["target"]) for e in _draws(leader, kraft=True)} == {
        ("isolate", "controller"), ("kill", "controller"), ("pause", "controller")}
    one = FaultSpace(kinds=("quorum_partition", "controller_kill"), faults=(1, 2), targets=("one",))
    drawn = _draws(one, kraft=True)
    assert {e.get("target") for e in drawn} == {None, "controller:any"}
    assert all(e["fault"] != "isolate" for e in drawn)


def test_rates_weigh_the_kinds_and_a_zero_rate_never_draws_its_kind() -> None:
    weighed = [e["fault"] for e in _draws(FaultSpace(kinds=("kill", "pause"), faults=(1, 1), rates=(3.0, 1.0)))]
    assert 0.65 <= weighed.count("kill") / len(weighed) <= 0.85
    never = _draws(FaultSpace(kinds=("kill", "pause"), faults=(1, 3), rates=(1.0, 0.0)))
    assert {e["fault"] for e in never} == {"kill"}


def test_concurrent_keeps_at_most_that_many_faults_in_effect_and_moves_a_later_one_to_when_it_fits() -> None:
    space = FaultSpace(kinds=("kill", "pause", "partition"), faults=(2, 4), durations=(8.0, 16.0), overlap=0.75,
                       concurrent=1)
    for i in range(200):
        schedule = draw_schedule(random.Random(f"c{i}"), space, 3)
        spans = sorted((seconds(e["at"]), seconds(e["at"]) + seconds(e["duration"])) for e in schedule)
        assert schedule and all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
        assert all(start <= space.window[1] for start, _ in spans)
    kill = {"fault": "kill", "target": "broker:1", "duration": "10s"}
    moved = at_most([{**kill, "at": "0s"}, {**kill, "at": "5s"}, {**kill, "at": "6s"}], 2, 40.0)
    assert [e["at"] for e in moved] == ["0s", "5s", "10s"]
    left_out = at_most([{**kill, "at": "0s"}, {**kill, "at": "5s"}, {"action": "elect_preferred", "at": "6s"}], 1, 8)
    assert [(e["at"], "action" in e) for e in left_out] == [("0s", False), ("6s", True)]


def test_the_explore_block_reads_targets_rates_and_concurrent_into_the_drawn_space() -> None:
    text = HEAD + "  faults: [kill, partition]\n  targets: [leaders, majority]\n  rates: {kill: 2}\n  concurrent: 1\n"
    exp = load_experiment_text(text, "narrowed.yaml")
    assert (exp.explore.targets, exp.explore.rates, exp.explore.concurrent) == (
        ("leaders", "majority"), (("kill", 2.0),), 1)
    assert load_experiment_text(dump_experiment(exp), "resolved.yaml").explore == exp.explore  # a run keeps it
    space = Exploration.of(exp, text, 3, None).space
    assert (space.targets, space.rates, space.concurrent) == (("leaders", "majority"), (2.0, 1.0), 1)
    for i in range(10):
        schedule, _ = Exploration.of(exp, text, 3, None).draw(i)
        for e in schedule:
            assert e.get("target", "leader:").startswith("leader:") and (
                e["fault"] == "kill" or _zookeeper_side(e) == "majority")


@pytest.mark.parametrize(("block", "message"), [
    ("  targets: [leader]\n", r"explore\.targets\[0\].*not a target choice.*leaders"),
    ("  faults: [kill, partition]\n  targets: [leaders]\n", r"explore\.targets.*partition nothing to aim at"),
    ("  rates: {kil: 2}\n", r"explore\.rates\.kil.*unknown key.*kill"),
    ("  faults: [kill]\n  rates: {kill: 0}\n", r"explore\.rates.*every kind drawn at 0"),
    ("  rates: {kill: -1}\n", r"explore\.rates\.kill.*at least 0"),
    ("  concurrent: 0\n", r"explore\.concurrent"),
])
def test_a_bad_target_rate_or_limit_in_the_explore_block_is_refused_naming_its_field(block: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load_experiment_text(HEAD + block, "narrowed.yaml")


def test_faults_given_on_the_command_line_that_the_files_targets_leave_nothing_to_aim_at_are_refused() -> None:
    text = HEAD + "  faults: [kill]\n  targets: [leaders]\n"
    exp = load_experiment_text(text, "narrowed.yaml")
    with pytest.raises(HarnessError, match="partition nothing to aim at"):
        Exploration.of(exp, text, 3, ("partition",))
    assert Exploration.of(exp, text, 3, ("pause",)).space.kinds == ("pause",)
