"""The verifiers on KRaft histories (Apache Kafka 4.x), on small hand-written histories: the quorum check
(one leader per epoch, a superseded leader commits nothing), the controller checks with quorum epochs and
voter liveness, ELR-aware elections, fencing as liveness, the controller failover SLO measured to the new
quorum leader, and which checks a run's cluster mode selects."""

from __future__ import annotations

from typing import Any

import pytest

from spark_analysis.checks import ALL_CHECKS, BY_ID, select
from spark_analysis.checks.slo.checks import ControllerFailover, PartitionUnavailable
from spark_analysis.facts.faults_legacy import legacy_effect
from spark_analysis.facts.liveness import build_liveness, build_voter_liveness, controller_events
from spark_analysis.ingest.runinfo import RunInfo, run_info_from_mapping
from spark_analysis.ingest.schema import HISTORY_SCHEMA
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import python_context, run_json, scenario
from tests.fixtures.kraft_histories import (
    KRAFT_RUN,
    NOT_LEADER,
    Event,
    answer,
    cut_off_leader_history,
    ev,
    failure,
    isolated_leader_history,
    quorum_history,
)


def check(check_id: str, events: list[Event], run: dict[str, Any] | None = None) -> CheckResult:
    return run_check(BY_ID[check_id], python_context(events, KRAFT_RUN if run is None else run))


# quorum.no_split_brain


def test_a_clean_quorum_failover_passes() -> None:
    result = check("quorum.no_split_brain", quorum_history())
    assert result.status == "pass", result.summary
    assert result.summary == "one leader per epoch across 2 epochs"
    assert result.metrics["epochs_with_two_leaders"] == 0 and result.metrics["max_epoch"] == 2


def test_two_voters_leading_the_same_epoch_fail_with_both_answers() -> None:
    result = check("quorum.no_split_brain", quorum_history(split_brain=True))
    assert result.status == "fail"
    assert result.summary == ("1 epoch with two leaders: voters 102 and 103 both answered as leader of epoch 2 "
                              "during fault #1 kill controller 101")
    first, second = result.evidence[:2]
    assert (first["voter"], first["epoch"], first["t"], first["role"]) == (102, 2, 7.0, "leader")
    assert (second["voter"], second["epoch"], second["t"]) == (103, 2, 7.5)


def test_a_superseded_leader_advancing_its_high_watermark_fails() -> None:
    result = check("quorum.no_split_brain", isolated_leader_history(late_advance=True))
    assert result.status == "fail"
    assert result.summary == ("1 superseded leader committed: voter 101, leader of epoch 1, advanced its high "
                              "watermark 55 -> 58 at 9.500s after voter 102 was seen leading epoch 2 at 7.000s "
                              "during fault #1 isolate controller 101")
    base, newer, advance = result.evidence[:3]
    assert (base["voter"], base["high_watermark"], base["t"]) == (101, 55, 8.0)
    assert (newer["voter"], newer["epoch"], newer["t"]) == (102, 2, 7.0)
    assert (advance["voter"], advance["epoch"], advance["high_watermark"], advance["t"]) == (101, 1, 58, 9.5)


def test_an_advance_first_reported_within_the_grace_is_not_a_commit_after_supersession() -> None:
    """55 at 8.0 s may have been committed before epoch 2 existed (reports come once a second)."""
    result = check("quorum.no_split_brain", isolated_leader_history(late_advance=False))
    assert result.status == "pass", result.summary
    assert result.metrics["superseded_leaders_judged"] == 0


def test_a_superseded_leader_repeating_its_high_watermark_passes() -> None:
    events = [*isolated_leader_history(late_advance=False), answer(9.6, 101, "leader", 101, 1, 55)]
    result = check("quorum.no_split_brain", sorted(events, key=lambda e: e["t"]))
    assert result.status == "pass", result.summary
    assert result.summary == ("one leader per epoch across 2 epochs; 1 superseded leader reporting on never "
                              "advanced its high watermark")


def test_a_kraft_run_without_quorum_events_is_unknown() -> None:
    events = [e for e in quorum_history() if e["type"] != "quorum.state"]
    assert check("quorum.no_split_brain", events).status == "unknown"


def test_quorum_events_without_any_leader_answer_are_unknown() -> None:
    events = [answer(1.0, 102, "follower", -1, 3), answer(1.0, 101, "unknown", -1, 3, error="timed out")]
    result = check("quorum.no_split_brain", events)
    assert result.status == "unknown" and "no voter answered as leader" in result.summary


def test_a_frozen_leader_advancing_its_high_watermark_as_it_thaws_is_no_commit_after_supersession() -> None:
    """Seen on Kafka 3.3.1: a leader frozen for 25 s reported 41 -> 42 just after it thawed, 22 s after the newer
    epoch: it handled the Fetch requests its voters had sent before they left it (acknowledging what a majority
    held in its epoch). What it reports beyond the grace after thawing is judged as before."""
    thaw = cut_off_leader_history(resigns=False, paused=True, thaw_hw=51)
    assert check("quorum.no_split_brain", thaw).status == "pass"
    late = sorted([*thaw, answer(23.0, 101, "leader", 101, 1, 52)], key=lambda e: e["t"])
    result = check("quorum.no_split_brain", late)
    assert result.status == "fail" and "51 -> 52 at 23.000s" in result.summary


# quorum.leader_resigns


def test_a_cut_off_leader_that_resigns_within_the_check_quorum_timeout_passes() -> None:
    result = check("quorum.leader_resigns", cut_off_leader_history(resigns=True))
    assert result.status == "pass", result.summary
    assert result.metrics["superseded_leaders_judged"] == 1 and result.metrics["deadline_s"] == 5.0


def test_a_cut_off_leader_that_keeps_answering_as_leader_fails_as_kafka_3_6_does() -> None:
    """KAFKA-15489: before 3.7.0 an isolated KRaft leader never resigned."""
    result = check("quorum.leader_resigns", cut_off_leader_history(resigns=False))
    assert result.status == "fail"
    assert result.summary.startswith("voter 101 still answered as leader of epoch 1 at 13.000s, 6.0s after voter "
                                     "102 was seen leading epoch 2")
    assert result.summary.endswith("during fault #1 isolate controller 101")
    assert result.metrics["longest_leader_after_superseded_s"] == 12.0


def test_a_frozen_leader_answering_as_leader_as_it_thaws_is_no_late_resignation() -> None:
    result = check("quorum.leader_resigns", cut_off_leader_history(resigns=False, paused=True))
    assert result.status == "pass", result.summary


def test_the_deadline_follows_the_runs_fetch_timeout() -> None:
    run = {**KRAFT_RUN, "cluster": {**KRAFT_RUN["cluster"],
                                    "broker_config": {"controller.quorum.fetch.timeout.ms": "10000"}}}
    result = check("quorum.leader_resigns", cut_off_leader_history(resigns=False), run)
    assert result.status == "pass" and result.metrics["deadline_s"] == 17.0  # 12 s as leader is within 17 s


def _leader_cut_from(cut_from: tuple[int, ...], *, newer_at: float, last_claim: float, took_ms: int = 0
                     ) -> list[Event]:
    """Voter 101 leads epoch 1; at 5 s the links from the voters `cut_from` to it are cut until 15 s (`isolate` with
    `from: voters` records each link, as on Apache Kafka), the action taking `took_ms`; 102 is seen leading epoch 2
    at `newer_at`; 101 answers as leader every second from 6 s to `last_claim`."""
    links = [{"src": f"controller:{v}", "dst": "controller:101", "proxy": f"{v}->101"} for v in cut_from]
    effect = {"nodes": [{"role": "controller", "id": 101}], "down": False, "graceful": False,
              "unreachable": [{"role": "controller", "id": 101, "from": ["controller"]}], "links": links,
              "toxics": []}
    target = ["controller:101"]
    events = [answer(0.2 + i, 101, "leader", 101, 1, 10 + i) for i in range(5)]
    events += [ev(5.0, "fault.start", "engine", fault_id=1, kind="isolate", target=target, effect=effect,
                  took_ms=took_ms),
               ev(15.0, "fault.end", "engine", fault_id=1, kind="isolate", target=target),
               answer(newer_at, 102, "leader", 102, 2, 60)]
    events += [answer(6.0 + i, 101, "leader", 101, 1, 15) for i in range(int(last_claim - 6.0) + 1)]
    events.append(answer(16.0, 101, "follower", -1, None, error=NOT_LEADER))
    return sorted(events, key=lambda e: e["t"])


def test_a_leader_cut_off_from_the_voters_is_judged_from_the_cut_when_the_newer_leader_is_seen_late() -> None:
    """KAFKA-15489 with a short cut: the newer leader seen 4.5 s into it, the old one answering as leader 8 s into it,
    only 3.5 s after the sighting. Its Fetches stopped at the cut, so its 3 s (+2 s grace) count from there."""
    result = check("quorum.leader_resigns", _leader_cut_from((102, 103), newer_at=9.5, last_claim=13.0))
    assert result.status == "fail", result.summary
    assert result.summary.startswith("voter 101 still answered as leader of epoch 1 at 11.000s, 6.0s after faults "
                                     "cut it off from a majority of the voters at 5.000s and 1.5s after voter 102 "
                                     "was seen leading epoch 2"), result.summary


def test_a_leader_cut_off_from_the_voters_resigning_within_the_check_quorum_timeout_passes_as_on_kafka_3_7() -> None:
    result = check("quorum.leader_resigns", _leader_cut_from((102, 103), newer_at=7.0, last_claim=8.0))
    assert result.status == "pass", result.summary


def test_a_cut_is_counted_from_when_its_action_returned() -> None:
    """`target: controller` asks who leads before it cuts: under load the cut of a run on 3.7.0 (fixed) was whole
    later than `fault.start`'s stamp, when its action began; `took_ms` says when the action returned."""
    result = check("quorum.leader_resigns", _leader_cut_from((102, 103), newer_at=9.5, last_claim=11.0, took_ms=1500))
    assert result.status == "pass", result.summary  # 11 s is 4.5 s after 6.5 s
    result = check("quorum.leader_resigns", _leader_cut_from((102, 103), newer_at=9.5, last_claim=12.0, took_ms=1500))
    assert result.status == "fail" and "after faults cut it off from a majority of the voters at 6.500s" in \
        result.summary, result.summary


def test_a_leader_that_still_hears_a_majority_is_judged_from_the_newer_leaders_sighting() -> None:
    """Only 102's link cut: 103's Fetches still reach 101, which with its own vote is a majority of three."""
    result = check("quorum.leader_resigns", _leader_cut_from((102,), newer_at=9.5, last_claim=13.0))
    assert result.status == "pass", result.summary


# Which checks a run selects


def test_the_cluster_mode_is_read_from_run_json_and_defaults_to_zookeeper() -> None:
    assert run_info_from_mapping(KRAFT_RUN).mode == "kraft"
    assert run_info_from_mapping(run_json(cluster={"mode": "KRaft"})).mode == "kraft"
    assert run_info_from_mapping(run_json()).mode == "zookeeper"
    assert run_info_from_mapping(run_json(cluster={"mode": 3})).mode == "zookeeper"
    assert run_info_from_mapping({"cluster": "not an object"}).mode == "zookeeper"


def test_the_quorum_check_is_not_applicable_in_zookeeper_runs_and_every_other_check_applies_to_both() -> None:
    zk, kraft = RunInfo(), RunInfo(mode="kraft")
    assert not zk.is_selected("quorum.no_split_brain") and kraft.is_selected("quorum.no_split_brain")
    assert not RunInfo(checks=("quorum",)).is_selected("quorum.no_split_brain")
    others = [c.id for c in ALL_CHECKS if c.family != "quorum"]
    assert all(zk.is_selected(c) and kraft.is_selected(c) for c in others)
    assert "quorum.no_split_brain" in [c.id for c in select(["all"])]
    assert "quorum.no_split_brain" not in [c.id for c in select(["all"], mode="zookeeper")]
    assert [c.id for c in select(["quorum"], mode="kraft")] == ["quorum.no_split_brain", "quorum.leader_resigns"]


def test_the_history_schema_keeps_the_kraft_fields() -> None:
    fields = {f.name: f.dataType.simpleString() for f in HISTORY_SCHEMA.fields}
    assert {k: fields.get(k) for k in ("voter", "role", "high_watermark", "voters", "observers", "elr",
                                        "last_known_elr")} == {
        "voter": "bigint", "role": "string", "high_watermark": "bigint", "voters": "string",
        "observers": "string", "elr": "array<bigint>", "last_known_elr": "array<bigint>"}


# Controller checks with quorum epochs


def test_controller_checks_carry_over_with_quorum_epochs_and_dedicated_controllers() -> None:
    """Controllers 101 and 102 are no brokers: they are judged as voters, not as registered brokers."""
    for check_id in ("controller.unique", "controller.epoch_monotonic"):
        result = check(check_id, quorum_history())
        assert result.status == "pass", (check_id, result.summary)
    unique = check("controller.unique", quorum_history())
    assert unique.metrics["quorum_controller_events"] == 2 and unique.metrics["controllers_not_live"] == 0


def test_a_controller_naming_a_killed_voter_that_does_not_answer_fails() -> None:
    """101 was killed at 5 s; at 9 s it is named controller without answering within the grace (3 s)."""
    events = [*quorum_history(), ev(9.0, "controller", "quorum", broker=101, epoch=3)]
    result = check("controller.unique", sorted(events, key=lambda e: e["t"]))
    assert result.status == "fail"
    assert "1 controller event naming a node not live" in result.summary
    assert result.evidence[0]["problem"] == ("controller 101 is not a live voter (fault #1 kill controller 101, "
                                             "no quorum answer from it)")


def test_two_quorum_leaders_in_one_epoch_fail_controller_unique_too() -> None:
    events = [*quorum_history(), ev(7.5, "controller", "quorum", broker=103, epoch=2)]
    result = check("controller.unique", sorted(events, key=lambda e: e["t"]))
    assert result.status == "fail" and "1 epoch held by two controllers" in result.summary


def test_a_quorum_epoch_going_back_fails_epoch_monotonic() -> None:
    events = [*quorum_history(), ev(9.0, "controller", "quorum", broker=101, epoch=1)]
    result = check("controller.epoch_monotonic", sorted(events, key=lambda e: e["t"]))
    assert result.status == "fail" and "epoch went back 2 -> 1" in result.summary


# The controller failover SLO in KRaft


def test_controller_failover_is_measured_from_the_fault_to_the_new_quorum_leader() -> None:
    intervals = ControllerFailover().intervals(python_context(quorum_history(), KRAFT_RUN))
    assert [(i.what, i.start, i.end) for i in intervals] == [("failover from 101 to 102", 5.0, 7.0)]
    strict = run_json(cluster={"mode": "kraft"}, verify={"slo": {"controller_failover": 1.0}})
    result = ControllerFailover().run(python_context(quorum_history(), strict))
    assert result.status == "fail"
    assert "worst failover from 101 to 102 2.000s during fault #1 kill controller 101" in result.summary


def test_a_voter_re_elected_in_a_higher_epoch_is_a_failover_too() -> None:
    events = [ev(0.2, "controller", "quorum", broker=101, epoch=1), *failure(),
              ev(8.0, "controller", "quorum", broker=101, epoch=2)]
    intervals = ControllerFailover().intervals(python_context(sorted(events, key=lambda e: e["t"]), KRAFT_RUN))
    assert [(i.start, i.end) for i in intervals] == [(5.0, 8.0)]


def test_failover_reads_the_sources_that_carry_epochs_with_their_no_controller_events() -> None:
    zk = [ev(1.0, "controller", "zk", broker=1, epoch=1), ev(2.0, "controller", "zk", broker=-1, epoch=1)]
    quorum = [ev(1.0, "controller", "quorum", broker=101, epoch=4)]
    admin = [ev(1.5, "controller", "admin", broker=2, epoch=None)]
    assert controller_events(zk + admin) == zk
    assert controller_events(quorum + admin) == quorum
    assert controller_events(admin) == admin


def test_a_follower_answering_not_leader_or_follower_is_a_live_voter_and_a_failed_call_is_not() -> None:
    voters = build_voter_liveness(quorum_history(), python_context(quorum_history(), KRAFT_RUN).faults)
    assert voters.live_near(103, 1.0) is True  # NOT_LEADER_OR_FOLLOWER at 0.2 s
    assert voters.live_near(101, 9.0) is False  # killed at 5 s; its 5.5 s event is a failed call
    assert voters.taken_down(101, 9.0) is not None and voters.live_near(101, 13.5) is True
    assert voters.live_near(103, 30.0) is None  # not heard from, not taken down


def test_legacy_fault_targets_name_brokers_and_controllers() -> None:
    assert legacy_effect("kill", "broker 1, controller 101").stopped() == {1, 101}
    assert legacy_effect("kill", "zookeeper 1").stopped() == set() and legacy_effect("cut", "1->2").nodes == ()


# Fencing as liveness


def test_a_fenced_broker_is_down_and_an_unfenced_one_up() -> None:
    live = build_liveness([ev(0.1, "broker.up", "kraft", broker=1), ev(3.0, "broker.fenced", "kraft", broker=1),
                           ev(6.0, "broker.unfenced", "kraft", broker=1)])
    assert [live.state_at(1, t) for t in (1.0, 4.0, 7.0)] == [True, False, True]


def test_a_fenced_leader_makes_its_partition_unavailable_until_a_new_leader() -> None:
    events = [ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2)] + [
        _state(0.3, 1, 0, [1, 2]), ev(3.0, "broker.fenced", "kraft", broker=1), _state(9.5, 2, 1, [2])]
    intervals = PartitionUnavailable().intervals(python_context(events, KRAFT_RUN))
    assert [(i.start, i.end) for i in intervals] == [(3.0, 9.5)]


# partition.election_conforms with eligible leader replicas (KIP-966)


def _state(t: float, leader: int, le: int, isr: list[int], elr: list[int] | None = None,
           last_known: list[int] | None = None, src: str = "kraft") -> Event:
    return ev(t, "partition.state", src, topic="t", partition=0, leader=leader, leader_epoch=le, isr=isr,
              replicas=[1, 2, 3], controller_epoch=None, elr=elr, last_known_elr=last_known)


def elr_history(new_leader: int, *, with_elr: bool = True) -> list[Event]:
    """AR [1, 2, 3], min ISR 2: broker 3 is fenced (ISR [1, 2]), then 2 (ISR [1], ELR [2]); 2 and 3 come
    back unfenced; then leader 1 is fenced with the ISR down to itself: the election at 8 s."""
    def elr(x: list[int]) -> list[int] | None:
        return x if with_elr else None

    fence = [ev(t, kind, "kraft", broker=b) for t, kind, b in (
        (3.0, "broker.fenced", 3), (4.0, "broker.fenced", 2), (5.0, "broker.unfenced", 2),
        (5.5, "broker.unfenced", 3), (8.0, "broker.fenced", 1))]
    states = [_state(0.3, 1, 0, [1, 2, 3], elr([]), elr([])), _state(3.0, 1, 0, [1, 2], elr([]), elr([])),
              _state(4.0, 1, 0, [1], elr([2]), elr([])),
              _state(8.0, new_leader, 1, [new_leader] if new_leader >= 0 else [1], elr([1]), elr([]))]
    events = [ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2, 3)] + fence + states
    return sorted(events, key=lambda e: e["t"])


def test_an_election_from_the_elr_when_no_isr_member_is_live_passes() -> None:
    result = check("partition.election_conforms", elr_history(2))
    assert result.status == "pass", result.summary
    assert result.metrics["by_eligibility"] == {"elr": 1} and result.metrics["by_strategy"] == {"offline": 1}


def test_a_leader_outside_the_isr_and_the_elr_fails() -> None:
    result = check("partition.election_conforms", elr_history(3))
    assert result.status == "fail"
    assert "t/0 offline election picked 3, model prescribes 2 (AR [1, 2, 3], ISR [1], ELR [2])" in result.summary
    assert result.evidence[-1]["eligibility"] == "outside" and result.evidence[-1]["expected"] == [2]


def test_without_an_elr_the_same_election_must_leave_the_partition_leaderless() -> None:
    assert check("partition.election_conforms", elr_history(-1, with_elr=False)).status == "pass"
    result = check("partition.election_conforms", elr_history(2, with_elr=False))
    assert result.status == "fail" and "model prescribes -1 (AR [1, 2, 3], ISR [1])" in result.summary


def test_an_unclean_election_outside_isr_and_elr_is_tolerated_only_when_enabled() -> None:
    """Unclean: the first live replica in AR order (2), as PartitionChangeBuilder.electAnyLeader does."""
    unclean = run_json(cluster={"mode": "kraft", "broker_config": {"unclean.leader.election.enable": "true"}})
    result = check("partition.election_conforms", elr_history(2, with_elr=False), unclean)
    assert result.status == "pass", result.summary
    assert result.metrics["by_eligibility"] == {"outside": 1}
    assert check("partition.election_conforms", elr_history(3, with_elr=False), unclean).status == "fail"


def test_the_last_known_leader_may_be_elected_when_isr_and_elr_are_empty() -> None:
    events = [ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2, 3)] + [
        _state(0.3, 1, 0, [1, 2, 3], [], []), _state(4.0, -1, 1, [], [], [1]), _state(9.0, 1, 2, [1], [], [])]
    result = check("partition.election_conforms", events)
    assert result.status == "pass", result.summary
    assert result.metrics["by_eligibility"] == {"last_known_leader": 1}


def test_the_kraft_metadata_observer_is_preferred_over_the_admin_observer() -> None:
    """The polling AdminClient observer missed the ISR shrink: judged alone it would look unclean."""
    admin = [_state(7.0, 1, 0, [1], src="admin"), _state(8.5, 2, 1, [2], src="admin")]
    result = check("partition.election_conforms", sorted(elr_history(2) + admin, key=lambda e: e["t"]))
    assert result.status == "pass", result.summary


@pytest.mark.parametrize("check_id", ["controller.unique", "controller.epoch_monotonic",
                                      "partition.election_conforms", "slo.controller_failover",
                                      "slo.partition_unavailable"])
def test_zookeeper_histories_keep_their_verdicts(check_id: str) -> None:
    assert run_check(BY_ID[check_id], python_context(scenario())).status == "pass"


def test_the_controller_events_observer_field_stays_a_string_column() -> None:
    """`controller` events name their observer in `source` (a string); a long column of that name (once the
    pipeline's input value) makes every controller event ill-typed, and the controller checks see none."""
    fields = {f.name: f.dataType.simpleString() for f in HISTORY_SCHEMA.fields}
    assert fields.get("source", "string") == "string" and fields["input_value"] == "bigint"


def test_a_check_about_what_a_release_does_not_do_is_not_selected_on_it() -> None:
    """Transaction verification came in Kafka 3.6 (KIP-890): on 3.5 its check has nothing to judge."""
    old = run_info_from_mapping(run_json(broker={"flavour": "apache-kafka", "version": "3.5.2"}))
    new = run_info_from_mapping(run_json(broker={"flavour": "apache-kafka", "version": "3.6.0"}))
    assert not old.is_selected("txn.verification_retriable") and new.is_selected("txn.verification_retriable")
    assert old.is_selected("txn.aborted_read") and RunInfo().is_selected("txn.verification_retriable")


def test_a_leader_elected_while_fenced_fails_even_as_the_last_known_leader() -> None:
    """KAFKA-19522 (Kafka 4.0): with ISR and ELR empty, the controller elected the last known leader while that broker
    was still fenced after its restart. The observer marks a state whose leader it saw fenced just before and just
    after it (`leader_fenced`)."""
    fence = [ev(t, kind, "kraft", broker=1) for t, kind in ((3.0, "broker.fenced"), (9.0, "broker.unfenced"))]
    states = [_state(0.3, 1, 0, [1], [], []), _state(3.0, -1, 1, [], [], [1]),
              {**_state(8.0, 1, 2, [1], [], []), "leader_fenced": True}]
    events = sorted([ev(0.1, "broker.up", "kraft", broker=1), *fence, *states], key=lambda e: e["t"])
    result = check("partition.election_conforms", events)
    assert result.status == "fail" and "picked broker 1 while it was fenced" in result.summary
    states[2] = {k: v for k, v in states[2].items() if k != "leader_fenced"}
    events = sorted([ev(0.1, "broker.up", "kraft", broker=1), *fence, *states], key=lambda e: e["t"])
    assert check("partition.election_conforms", events).status == "pass"


def test_a_reassignment_completing_between_two_polls_with_its_new_replica_leading_passes() -> None:
    """Seen on Apache Kafka 4.1.0: solo/0 moved from [1] to [2]; the observer saw leader 1 with ISR [1] and replicas
    [2, 1], then leader 2 with ISR [2] and replicas [2]: broker 2 joined the ISR between the two polls (KRaft bumps
    no leader epoch for it), as a reassignment must wait for before it completes."""
    states = [_state(0.3, 1, 0, [1]), {**_state(2.0, 1, 0, [1]), "replicas": [2, 1]},
              {**_state(2.8, 2, 1, [2]), "replicas": [2]}]
    events = sorted([*(ev(0.1, "broker.up", "kraft", broker=b) for b in (1, 2, 3)), *states], key=lambda e: e["t"])
    result = check("partition.election_conforms", events)
    assert result.status == "pass", result.summary
    assert result.metrics["by_strategy"] == {"reassign": 1}
