"""A replica that a reassignment added may catch up and join the ISR between two observed states: when the
leader epoch skipped a value, `partition.election_conforms` and `partition.unclean_only_when_enabled` judge
the election with it in the ISR too (seen on the reference broker: epoch 1 with ISR [3, 2], then epoch 3
with leader 1, ISR [1, 2], for a move of [3, 2] to [1, 2]); with no skipped epoch it stays outside."""

from __future__ import annotations

from spark_analysis.checks.partition.isr import UncleanOnlyWhenEnabled
from spark_analysis.facts.partitions import caught_up
from tests.fixtures.histories import Event, python_context, scenario

BEFORE = {"leader": 3, "leader_epoch": 1, "isr": [3, 2], "replicas": [1, 2, 3]}


def test_a_replica_in_the_new_isr_may_have_caught_up_only_when_states_were_missed() -> None:
    assert caught_up(BEFORE, {"leader": 1, "leader_epoch": 3, "isr": [1, 2], "replicas": [1, 2]}) == [1]
    assert caught_up(BEFORE, {"leader": 1, "leader_epoch": 2, "isr": [1, 2], "replicas": [1, 2]}) == []
    assert caught_up(BEFORE, {"leader": 1, "leader_epoch": 3, "isr": [1], "replicas": [1, 2]}) == []


def _moved(epoch: int) -> list[Event]:
    states = [{"t": 3.0 + i * 0.1, "wall": 0, "src": "zk", "type": "partition.state", "topic": "mv", "partition": 2,
               "controller_epoch": 1, **s}
              for i, s in enumerate([BEFORE, {"leader": 1, "leader_epoch": epoch, "isr": [1, 2], "replicas": [1, 2]}])]
    return sorted([*scenario(), *states], key=lambda e: e["t"])


def test_the_unclean_check_takes_a_caught_up_replica_as_clean_and_a_plain_jump_as_unclean() -> None:
    assert UncleanOnlyWhenEnabled().run(python_context(_moved(3))).status == "pass"
    result = UncleanOnlyWhenEnabled().run(python_context(_moved(2)))
    assert result.status == "fail" and "mv/2: unclean election of broker 1, outside the ISR [3, 2]" in result.summary


def test_one_epoch_up_with_the_whole_old_isr_and_the_new_leader_in_the_new_one_is_an_unseen_expansion() -> None:
    """An ISR expansion keeps the leader epoch, so leader 2, ISR [2, 1], then leader 3, ISR [2, 1, 3] one epoch
    later (Apache Kafka, broker 3 back from a kill) is clean; an unclean election writes the ISR [3] alone."""
    before = {"leader": 2, "leader_epoch": 3, "isr": [2, 1], "replicas": [3, 1, 2]}
    assert caught_up(before, {"leader": 3, "leader_epoch": 4, "isr": [2, 1, 3], "replicas": [3, 1, 2]}) == [3]
    assert caught_up(before, {"leader": 3, "leader_epoch": 4, "isr": [3], "replicas": [3, 1, 2]}) == []
    assert caught_up(before, {"leader": 3, "leader_epoch": 4, "isr": [2, 3], "replicas": [3, 1, 2]}) == []


def _restarted(comes_back: bool) -> list[Event]:
    """mv/2 led by 2 with ISR [2, 3] while broker 1 restarts; then leader 1, ISR [3, 1], one epoch later (broker 2's
    controlled shutdown), with broker 1's return observed in between or not."""
    base = {"wall": 0, "src": "zk", "topic": "mv", "partition": 2, "controller_epoch": 1, "replicas": [2, 1, 3]}
    events: list[Event] = [
        {**base, "t": 3.0, "type": "partition.state", "leader": 2, "leader_epoch": 1, "isr": [2, 3]},
        {"t": 3.1, "wall": 0, "src": "zk", "type": "broker.down", "broker": 1},
        {**base, "t": 4.0, "type": "partition.state", "leader": 1, "leader_epoch": 2, "isr": [3, 1]},
    ]
    if comes_back:
        events.append({"t": 3.5, "wall": 0, "src": "zk", "type": "broker.up", "broker": 1})
    return sorted([*scenario(), *events], key=lambda e: e["t"])


def test_a_leader_whose_broker_came_back_between_two_states_joined_the_isr_unseen_not_uncleanly() -> None:
    """Apache Kafka 3.7.0 -> 3.9.2 rolling upgrade (make test, 2026-11-30): the ZooKeeper watch saw
    __consumer_offsets/1 led by 2 with ISR [2, 3] while broker 1 restarted, then led by 1 with ISR [3, 1] one epoch
    later, never the [2, 3, 1] the admin client saw 0.4 s before. Broker 1's return in between makes it a join
    unobserved (`joined_unobserved`, the rule `partition.election_conforms` already read); without it, unclean."""
    assert UncleanOnlyWhenEnabled().run(python_context(_restarted(comes_back=True))).status == "pass"
    result = UncleanOnlyWhenEnabled().run(python_context(_restarted(comes_back=False)))
    assert result.status == "fail" and "mv/2: unclean election of broker 1, outside the ISR [2, 3]" in result.summary
