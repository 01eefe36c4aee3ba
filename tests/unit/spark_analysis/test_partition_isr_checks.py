"""The ISR and controlled-shutdown checks (`spark_analysis.checks.partition.isr`) on tiny hand-written
histories: each rule's must-pass and must-fail cases and the exceptions Apache Kafka makes."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.partition.isr import OFFLINE_GRACE_S, OfflineReplicaLeavesIsr, UncleanOnlyWhenEnabled
from spark_analysis.checks.partition.shutdown import ControlledShutdownMovesLeaders
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import RUN_JSON, python_context, run_json

Event = dict[str, Any]


def _ev(t: float, type_: str, src: str = "zk", **fields: Any) -> Event:
    return {"t": t, "src": src, "type": type_, **fields}


def _ps(t: float, p: int, leader: int, epoch: int, isr: list[int], src: str = "zk", **extra: Any) -> Event:
    return _ev(t, "partition.state", src, topic="t", partition=p, leader=leader, leader_epoch=epoch, isr=isr,
               replicas=[1, 2, 3], **extra)


def _start() -> list[Event]:
    return [*(_ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)),
            _ps(0.2, 0, 1, 0, [1, 2, 3]), _ps(0.2, 1, 2, 0, [2, 3, 1])]


def _run(check: Any, events: list[Event], run: dict[str, Any] | None = None) -> CheckResult:
    return run_check(check, python_context(sorted(events, key=lambda e: e["t"]), run))


def test_dead_follower_leaving_every_isr_passes() -> None:
    events = [*_start(), _ev(5.0, "broker.down", broker=3),
              _ps(5.1, 0, 1, 1, [1, 2]), _ps(5.1, 1, 2, 1, [2, 1]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "pass", result.summary
    assert result.metrics["replicas_judged"] == 2


def test_dead_follower_kept_in_a_controller_write_fails() -> None:
    events = [*_start(), _ev(5.0, "broker.down", broker=3),
              _ps(5.1, 0, 1, 1, [1, 2]), _ps(5.1, 1, 2, 1, [2, 3, 1]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "fail"
    assert "t/1: broker 3 (which followed it) is still in the ISR [2, 3, 1]" in result.summary


def test_no_write_at_all_for_a_followed_partition_fails_after_the_grace() -> None:
    """keep_dead_in_isr: the controller elects for what the broker led and never touches what it followed."""
    events = [*_start(), _ev(5.0, "broker.down", broker=3), _ps(5.1, 0, 1, 1, [1, 2]),
              _ev(5.0 + OFFLINE_GRACE_S + 1, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "fail"
    assert "the controller wrote nothing for the partition" in result.summary


def test_a_broker_back_before_the_grace_is_not_judged() -> None:
    events = [*_start(), _ev(5.0, "broker.down", broker=3), _ev(6.0, "broker.up", broker=3),
              _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "unknown"
    assert result.metrics["not_judged_short"] == 2


def test_the_last_isr_member_stays_in_the_isr() -> None:
    """Kafka never empties an ISR: the last member stays, with leader -1."""
    events = [*_ev_list_single_isr(), _ev(5.0, "broker.down", broker=1), _ps(5.1, 0, -1, 1, [1]),
              _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.metrics["last_isr_member"] == 1
    assert result.metrics["violations"] == 0


def _ev_list_single_isr() -> list[Event]:
    return [*(_ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)), _ps(0.2, 0, 1, 0, [1])]


def test_kraft_fencing_counts_as_the_registration_going() -> None:
    events = [*(_ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2, 3)),
              _ps(0.2, 0, 1, 0, [1, 2, 3], "kraft", elr=[]), _ev(5.0, "broker.fenced", "kraft", broker=3),
              _ev(5.5, "broker.down", "kraft", broker=3),
              _ps(5.2, 0, 1, 0, [1, 2, 3], "kraft", elr=[]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "fail", result.summary
    assert result.metrics["brokers_gone"] == 1


def test_unclean_election_fails_when_disabled_and_is_recorded_when_enabled() -> None:
    events = [*_start(), _ps(3.0, 0, 1, 0, [1]), _ev(4.0, "broker.down", broker=1), _ps(4.1, 0, 2, 1, [2])]
    disabled = _run(UncleanOnlyWhenEnabled(), events)
    assert disabled.status == "fail"
    assert "t/0: unclean election of broker 2, outside the ISR [1]" in disabled.summary
    enabled_run = run_json(cluster={**RUN_JSON["cluster"], "broker_config": {"unclean.leader.election.enable": "true"}})
    enabled = _run(UncleanOnlyWhenEnabled(), events, enabled_run)
    assert enabled.status == "pass"
    assert enabled.metrics["unclean_elections"] == 1
    assert any(e.get("unclean") for e in enabled.evidence)


def test_kraft_election_from_the_elr_is_clean() -> None:
    events = [_ps(0.2, 0, 1, 3, [1], "kraft", elr=[2]), _ps(4.1, 0, 2, 4, [2], "kraft", elr=[])]
    assert _run(UncleanOnlyWhenEnabled(), events).status == "pass"


def _stop(t0: float, broker: int, t1: float) -> list[Event]:
    return [_ev(t0, "fault.start", "engine", fault_id=1, kind="stop", target=[f"broker:{broker}"]),
            _ev(t1, "fault.end", "engine", fault_id=1, kind="stop", target=[f"broker:{broker}"])]


def test_controlled_shutdown_that_moves_leaders_first_passes() -> None:
    events = [*_start(), *_stop(5.0, 1, 9.0), _ps(5.5, 0, 2, 1, [2, 3, 1]), _ps(5.6, 0, 2, 2, [2, 3]),
              _ev(6.0, "broker.down", broker=1), _ev(9.5, "broker.up", broker=1)]
    result = _run(ControlledShutdownMovesLeaders(), events)
    assert result.status == "pass", result.summary
    assert result.metrics["leaders_moved"] == 1


def test_deregistering_while_still_leading_fails() -> None:
    events = [*_start(), *_stop(5.0, 1, 9.0), _ev(6.0, "broker.down", broker=1), _ps(6.1, 0, 2, 1, [2, 3])]
    result = _run(ControlledShutdownMovesLeaders(), events)
    assert result.status == "fail"
    assert "t/0: broker 2" not in result.summary and "t/0: broker 1 still led it" in result.summary


def test_a_leader_without_a_live_alternative_leaves_nothing_to_judge() -> None:
    """Kafka moves a leadership only to a live ISR member: a stopped broker leading only partitions without one
    leaves the rule nothing to judge (pass, counted), as does one that led nothing."""
    events = [*_ev_list_single_isr(), *_stop(5.0, 1, 9.0), _ev(6.0, "broker.down", broker=1)]
    result = _run(ControlledShutdownMovesLeaders(), events)
    assert result.status == "pass", result.summary
    assert result.metrics["no_live_alternative"] == 1 and result.metrics["violations"] == 0


def test_a_stop_with_partition_states_unobserved_is_unknown_not_pass() -> None:
    """Without the partitions' states at the stop the check cannot tell what the broker led: unknown."""
    events = [*_ev_list_single_isr(), *_stop(5.0, 1, 9.0), _ev(6.0, "broker.down", broker=1)]
    late = [{**e, "t": 7.0} if e.get("type") == "partition.state" else e for e in events]
    result = _run(ControlledShutdownMovesLeaders(), late)
    assert result.status == "unknown", result.summary
    assert result.metrics["partitions_unobserved_at_a_stop"] >= 1


def test_without_a_graceful_stop_there_is_nothing_to_move() -> None:
    assert _run(ControlledShutdownMovesLeaders(), _start()).status == "pass"


def test_brokers_lost_together_leave_the_isr_one_write_per_replica_as_kafka_writes_them() -> None:
    """Apache Kafka 3.9.2 (recorded: tests/data/recorded/zk-3.9.2-weak-correlated-expiry): brokers 2 and 3 expire
    in one ZooKeeper event; the new controller writes `leader -1, isr [3, 1]` (2, the leader, out), then `isr [1]`
    52 ms later (3 out), then elects 1. The first write is a step of its answer, not a broker kept in the ISR."""
    events = [*_start(), _ev(5.0, "broker.down", broker=2), _ev(5.0, "broker.down", broker=3),
              _ps(5.1, 1, -1, 1, [3, 1]), _ps(5.15, 1, -1, 2, [1]), _ps(5.2, 1, 1, 3, [1]),
              _ps(5.1, 0, 1, 1, [1, 3]), _ps(5.15, 0, 1, 2, [1]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "pass", result.summary


def test_a_write_keeping_a_gone_broker_that_no_removal_follows_still_fails() -> None:
    """The step must be followed at once by a write taking the broker out; an election keeping it is its answer."""
    events = [*_start(), _ev(5.0, "broker.down", broker=2), _ev(5.0, "broker.down", broker=3),
              _ps(5.1, 1, -1, 1, [3, 1]), _ps(5.15, 1, 1, 2, [3, 1]), _ps(9.0, 1, 1, 3, [1]),
              _ps(5.1, 0, 1, 1, [1]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "fail" and "broker 3 (which followed it) is still in the ISR [3, 1]" in result.summary


def test_a_member_left_alone_by_the_others_going_first_stays_as_the_last_one() -> None:
    """Apache Kafka 3.9.2 (recorded: zk-3.9.2-last-isr-member-stays): brokers 1 and 2 go; the controller writes
    `leader 2, isr [2]` (1 out), then `leader -1, isr [2]`: 2 stays, the last member."""
    events = [*(_ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)), _ps(0.2, 0, 2, 0, [2, 1]),
              _ev(5.0, "broker.down", broker=1), _ev(5.0, "broker.down", broker=2),
              _ps(5.1, 0, 2, 1, [2]), _ps(5.15, 0, -1, 2, [2]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "pass", result.summary
    assert result.metrics["last_isr_member"] == 1 and result.metrics["violations"] == 0


def test_no_write_is_due_while_no_controller_holds_office() -> None:
    """Recorded: zk-3.9.2-no-controller-in-office. With the controller gone (-1) from before the broker went until
    the end, nobody can write; once a controller holds office longer than the grace, the rule holds again."""
    gone = [*_start(), _ev(0.1, "controller", broker=3, epoch=1), _ev(4.0, "controller", broker=-1, epoch=1),
            _ev(5.0, "broker.down", broker=2), _ps(5.1, 0, 1, 1, [1, 3])]
    quiet = _run(OfflineReplicaLeavesIsr(), [*gone, _ev(5.0 + 3 * OFFLINE_GRACE_S, "run.end", "engine")])
    assert quiet.status != "fail" and quiet.metrics["not_judged_no_controller"] == 1, quiet.summary
    back = [*gone, _ev(6.0, "controller", broker=1, epoch=2), _ev(5.0 + 3 * OFFLINE_GRACE_S, "run.end", "engine")]
    assert _run(OfflineReplicaLeavesIsr(), back).status == "fail"


def test_a_graceful_stop_cut_off_from_its_controller_is_not_judged() -> None:
    """Kafka's controlled shutdown needs the controller; cut off from it, the broker gives up after its retries and
    shuts down uncleanly (recorded on 3.9.2: hunt zookeeper schedule 13)."""
    cut = {"links": [{"src": "broker:1", "dst": "broker:3", "proxy": "1->3"}]}
    events = [*_start(), _ev(0.1, "controller", broker=3, epoch=1),
              _ev(4.0, "fault.start", "engine", fault_id=0, kind="partition", target=["broker:1", "broker:3"],
                  effect=cut),
              *_stop(5.0, 1, 9.0), _ev(6.0, "broker.down", broker=1), _ps(6.1, 0, 2, 1, [2, 3]),
              _ev(9.5, "fault.end", "engine", fault_id=0, kind="partition", target=["broker:1", "broker:3"])]
    result = _run(ControlledShutdownMovesLeaders(), events)
    assert result.status == "pass" and result.metrics["controller_unreachable"] == 1, result.summary


def test_a_graceful_stop_of_a_controller_cut_off_from_zookeeper_is_not_judged() -> None:
    """The controller stopping itself while a partition cuts it off from ZooKeeper cannot write a new leader; its
    registration vanishes when its session expires (recorded on 3.9.2: hunt zookeeper schedule 8, rerun)."""
    cut = {"unreachable": [{"role": "broker", "id": 1, "from": ["broker", "zookeeper"]}],
           "links": [{"src": "broker:1", "dst": "zookeeper:1", "proxy": "1->zk1"}]}
    events = [*_start(), _ev(0.1, "controller", broker=1, epoch=1),
              _ev(4.0, "fault.start", "engine", fault_id=0, kind="partition", target=["broker:1", "zookeeper:1"],
                  effect=cut),
              *_stop(5.0, 1, 9.0), _ev(8.0, "broker.down", broker=1), _ps(8.1, 0, 2, 1, [2, 3]),
              _ev(9.5, "fault.end", "engine", fault_id=0, kind="partition", target=["broker:1", "zookeeper:1"])]
    result = _run(ControlledShutdownMovesLeaders(), events)
    assert result.status == "pass" and result.metrics["controller_unreachable"] == 1, result.summary


def test_a_zookeeper_controller_answering_an_earlier_expiry_may_list_the_next_gone_broker_until_it_gets_there() -> None:
    """Weak-durability on 3.9.2: broker 3 (leader, controller) expired, broker 1 took office, broker 2 expired
    0.3 s later; the new controller's failover still wrote broker 2 into the ISR and elected it, then took it out
    when it reached broker 2's BrokerChange event. Its single event thread makes that lag Kafka's own."""
    events = [*(_ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)), _ev(0.1, "controller", broker=3, epoch=1),
              _ps(0.2, 0, 3, 0, [3, 2, 1]), _ev(22.751, "controller", broker=-1, epoch=1),
              _ev(22.752, "broker.down", broker=3), _ev(22.914, "controller", broker=1, epoch=2),
              _ev(23.241, "broker.down", broker=2), _ps(23.796, 0, -1, 1, [2, 1]), _ps(24.358, 0, 2, 2, [2, 1]),
              _ps(24.673, 0, 1, 3, [1]), _ev(60.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "pass", result.summary
    assert result.metrics["left_after_backlog"] == 1


def _slow_failover(first_write: float) -> list[Event]:
    """Broker 3 (controller) expired at 15.9 s and broker 1 took office at 16.0 s; its failover, reading ZooKeeper
    on a loaded machine, first wrote at `first_write`; broker 2 went at 22.0 s, 6 s after the take-over, and the
    controller still listed it at 22.3 s before taking it out at 25.0 s."""
    return [*(_ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)), _ev(0.1, "controller", broker=3, epoch=1),
            _ps(0.2, 0, 3, 0, [3, 2, 1], controller_epoch=1), _ev(15.9, "controller", broker=-1, epoch=1),
            _ev(15.9, "broker.down", broker=3), _ev(16.0, "controller", broker=1, epoch=2),
            _ps(first_write, 0, 2, 1, [2, 1], controller_epoch=2), _ev(22.0, "broker.down", broker=2),
            _ps(22.3, 0, 1, 2, [1, 2], controller_epoch=2), _ps(25.0, 0, 1, 3, [1], controller_epoch=2),
            _ev(60.0, "run.end", "engine")]


def test_a_failover_still_answered_when_a_broker_goes_counts_its_backlog_from_its_first_write() -> None:
    """The election check's rule (`liveness.took_office_before`), one definition for both: a controller whose
    failover first wrote 0.5 s before broker 2 went is still answering it, though it took office 6 s before."""
    result = _run(OfflineReplicaLeavesIsr(), _slow_failover(first_write=21.5))
    assert result.status == "pass", result.summary
    assert result.metrics["left_after_backlog"] == 1


def test_a_failover_that_wrote_long_before_the_broker_went_gets_no_backlog_allowance() -> None:
    result = _run(OfflineReplicaLeavesIsr(), _slow_failover(first_write=16.5))
    assert result.status == "fail", result.summary


def test_a_gone_broker_listed_with_no_earlier_controller_event_still_fails_even_if_it_leaves_later() -> None:
    events = [*_start(), _ev(5.0, "broker.down", broker=3), _ps(5.4, 0, 1, 1, [1, 2, 3]), _ps(8.0, 0, 1, 2, [1, 2]),
              _ps(5.1, 1, 2, 1, [2, 1]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "fail", result.summary


def _bounced_follower(registered_zxid: int | None) -> list[Event]:
    """Every-fault on 3.9.2: broker 3 paused, its session expired (23.090 s), it registered again; the controller,
    knowing it back, let leader 2 put it in the ISR again (KIP-841 refuses a broker it does not know live). The
    observer read that write under a watch stamped 23.326 s, before the registration's watch (23.697 s)."""
    zxid = {} if registered_zxid is None else {"zxid": registered_zxid}
    return [*_start(), _ev(23.090, "broker.down", broker=3), _ps(23.090, 0, 1, 1, [1, 2], zxid=0x400),
            _ps(23.326, 1, 2, 1, [2, 1, 3], zxid=0x420), _ev(23.697, "broker.up", broker=3, **zxid),
            _ev(60.0, "run.end", "engine")]


def test_a_broker_listed_again_by_a_write_zookeeper_ordered_after_its_new_registration_is_not_judged() -> None:
    result = _run(OfflineReplicaLeavesIsr(), _bounced_follower(registered_zxid=0x410))
    assert result.status == "pass", result.summary
    assert result.metrics["replicas_judged"] == 1 and result.metrics["not_judged_short"] == 1


def test_a_broker_listed_by_a_write_before_its_new_registration_still_fails() -> None:
    """The same stamps with the registration created after the write (zxid), or with no zxid to tell (histories
    recorded before the observer kept them): the stamps decide, and the write listed a gone broker."""
    for registered in (0x430, None):
        result = _run(OfflineReplicaLeavesIsr(), _bounced_follower(registered_zxid=registered))
        assert result.status == "fail", (registered, result.summary)
        assert "t/1: broker 3 (which followed it) is still in the ISR [2, 1, 3]" in result.summary


def test_a_kraft_write_listing_a_fenced_broker_gets_no_backlog_allowance() -> None:
    events = [*(_ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2, 3)),
              _ps(0.2, 0, 1, 0, [1, 2, 3], "kraft", elr=[]), _ev(4.0, "broker.fenced", "kraft", broker=2),
              _ev(5.0, "broker.fenced", "kraft", broker=3), _ps(5.2, 0, 1, 1, [1, 3], "kraft", elr=[]),
              _ps(8.0, 0, 1, 2, [1], "kraft", elr=[]), _ev(30.0, "run.end", "engine")]
    result = _run(OfflineReplicaLeavesIsr(), events)
    assert result.status == "fail", result.summary


def _power_loss_of_all_three(elr_member_up: bool) -> list[Event]:
    """4.4.0, power loss of brokers 1-3 (recorded: kraft-4.4.0-last-known-leader-after-unclean-registration): the ISR
    is empty, broker 3 is in the ELR, broker 2 the last known leader; broker 3 registers again after its unclean
    shutdown (unobserved: the controller drops it from the ELR) and the same record elects broker 2."""
    return [*(_ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2, 3)),
            _ps(0.2, 0, 1, 0, [1, 2, 3], "kraft", elr=[], last_known_elr=[]),
            *(_ev(62.5, "broker.fenced", "kraft", broker=b) for b in (2, 3)),
            _ps(69.6, 0, -1, 2, [], "kraft", elr=[3], last_known_elr=[2]),
            _ev(71.1, "broker.unfenced", "kraft", broker=2),
            *([_ev(71.5, "broker.unfenced", "kraft", broker=3)] if elr_member_up else []),
            _ps(72.4, 0, 2, 3, [2], "kraft", elr=[], last_known_elr=[]), _ev(90.0, "run.end", "engine")]


def test_the_last_known_leader_elected_in_the_change_that_empties_the_elr_is_clean() -> None:
    result = _run(UncleanOnlyWhenEnabled(), _power_loss_of_all_three(elr_member_up=False))
    assert result.status == "pass", result.summary


def test_the_last_known_leader_elected_over_a_live_elr_member_is_unclean() -> None:
    """KRaft elects an unfenced ELR member before the last known leader (`PartitionChangeBuilder.electLeader`)."""
    result = _run(UncleanOnlyWhenEnabled(), _power_loss_of_all_three(elr_member_up=True))
    assert result.status == "fail", result.summary
