"""controller.epoch_monotonic's per-broker rule over `controller.view` events (which controller each broker's
own Metadata answer names), on the hand-written fixture history plus small hand-written views."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.controller.checks import ControllerEpochMonotonic, stale_views
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import WALL0, python_context, scenario

Event = dict[str, Any]


def view(t: float, broker: int, controller: int, *, legacy: bool = False) -> Event:
    """A Metadata observer event; `legacy`: only `leader`, as histories written before `controller` existed."""
    named = {"leader": controller} if legacy else {"controller": controller}
    return {"t": t, "wall": WALL0 + int(t * 1000), "src": "metadata", "type": "controller.view", "broker": broker,
            **named}


def check(events: list[Event]) -> CheckResult:
    return run_check(ControllerEpochMonotonic(), python_context(sorted(events, key=lambda e: e["t"])))


HONEST = [view(1.0, 1, 1), view(1.0, 2, 1), view(1.0, 3, 1), view(9.4, 2, 2), view(9.5, 3, 2), view(11.5, 1, 2)]
"""Every broker names controller 1 (epoch 1), then controller 2 (epoch 2) after broker 1 is killed at 9 s."""


def test_views_following_the_epochs_in_order_pass() -> None:
    result = check(scenario() + HONEST)
    assert result.status == "pass", result.summary
    assert result.summary == ("epoch never decreased over 1 controller change; 6 broker views of the controller "
                              "never went back")
    assert result.metrics["stale_views"] == 0 and result.metrics["views_with_epoch"] == 6


def test_a_broker_naming_the_controller_of_an_older_epoch_again_fails_with_the_views_and_elections() -> None:
    """Broker 3 named controller 2 (epoch 2), then controller 1 (epoch 1) again: it obeys a zombie."""
    result = check(scenario() + HONEST + [view(10.0, 3, 1), view(10.3, 3, 2), view(10.6, 3, 1)])
    assert result.status == "fail"
    assert result.summary == ("2 stale controller views (a broker obeys a controller of an older epoch): broker 3 "
                              "named controller 1 (epoch 1) after controller 2 (epoch 2) during fault #2 kill broker 1")
    assert result.fault == "fault #2 kill broker 1"
    first = result.evidence[:4]
    assert [(r["type"], r["broker"]) for r in first] == [
        ("controller", 2), ("controller.view", 3), ("controller", 1), ("controller.view", 3)]
    assert (first[1]["controller"], first[1]["named_epoch"], first[1]["t"]) == (2, 2, 9.5)
    assert (first[3]["controller"], first[3]["named_epoch"], first[3]["t"]) == (1, 1, 10.0)
    assert (first[0]["epoch"], first[2]["epoch"]) == (2, 1)
    assert result.metrics["stale_views"] == 2


def test_views_of_older_histories_carrying_only_leader_are_judged_too() -> None:
    events = scenario() + [view(e["t"], e["broker"], e["controller"], legacy=True) for e in HONEST]
    result = check([*events, view(10.0, 3, 1, legacy=True)])
    assert result.status == "fail" and "broker 3 named controller 1 (epoch 1)" in result.summary


def test_a_legit_re_election_of_the_old_controller_seen_before_its_znode_event_is_not_stale() -> None:
    """Controller 1 is re-elected (epoch 3) at 12.0 s; broker 3 names it at 11.8 s, within the tolerance."""
    extra = [{"t": 12.0, "wall": WALL0 + 12000, "src": "zk", "type": "controller", "broker": 1, "epoch": 3}]
    result = check(scenario() + HONEST + extra + [view(11.8, 3, 1)])
    assert result.status == "pass", result.summary


def test_without_views_the_rule_is_not_applied_and_the_result_is_unchanged() -> None:
    result = check(scenario())
    assert result.status == "pass"
    assert result.summary == "epoch never decreased over 1 controller change"
    assert result.metrics["controller_views"] == 0


def test_views_of_controllers_no_epoch_event_names_are_skipped() -> None:
    rows, metrics = stale_views([], [view(1.0, 1, 1), view(2.0, 1, 2), view(3.0, 1, 1)])
    assert rows == [] and metrics == {"controller_views": 3, "views_with_epoch": 0, "stale_views": 0}


def _unique(events: list[Event]) -> CheckResult:
    from spark_analysis.checks.controller.checks import ControllerUnique

    return run_check(ControllerUnique(), python_context(sorted(events, key=lambda e: e["t"])))


def test_a_former_controller_naming_itself_with_nothing_cutting_it_off_is_a_zombie() -> None:
    """Broker 1 (controller of epoch 1) still names itself at 21.5 s, 12.2 s after ZooKeeper elected broker 2
    and 10.5 s after fault #2 (its kill) healed: two brokers act as controller."""
    result = _unique(scenario() + HONEST + [view(21.5, 1, 1)])
    assert result.status == "fail"
    assert "1 zombie controller view: broker 1 named itself controller 12.2s after ZooKeeper elected broker 2 " \
           "(epoch 2), and no fault cut it off" in result.summary
    assert result.metrics["self_named_after_failover"] == 1


def test_a_former_controller_naming_itself_while_cut_off_is_what_kafka_does() -> None:
    """While a fault on it is in force (or healed less than ZOMBIE_GRACE_S ago) a cut-off controller cannot
    know it was replaced (it learns of its session expiry only on reconnecting)."""
    result = _unique(scenario() + HONEST + [view(12.5, 1, 1)])
    assert result.status == "pass", result.summary
    assert result.metrics["zombie_views_allowed"] == 1


def test_a_new_controller_naming_itself_just_before_zookeepers_record_of_its_election_is_no_zombie() -> None:
    """The Metadata observer may be ahead of the ZooKeeper observer (seen: 1 ms): broker 2 names itself at
    9.25 s, ZooKeeper's `/controller` event for its election comes right after."""
    result = _unique(scenario() + HONEST + [view(9.25, 2, 2)])
    assert result.status == "pass", result.summary
    assert result.metrics["self_named_after_failover"] == 0


def test_a_controller_registered_in_zookeeper_is_live_though_an_admin_answer_from_a_stale_cache_missed_it() -> None:
    """Apache Kafka 3.9.2, weak-isr under explore (seed 5, a shrink run): brokers 1 and 2 were cut off from broker 3
    and ZooKeeper, registered again at 13.02 s and 13.11 s; an AdminClient answer from broker 3's metadata cache at
    13.36 s still lacked them; broker 3 was killed at 15 s and ZooKeeper elected broker 2 (epoch 13) at 19.71 s.
    Registrations are ZooKeeper's (as the election check reads them): broker 2 was live."""
    def ev(t: float, type_: str, src: str, **fields: Any) -> Event:
        return {"t": t, "wall": WALL0 + int(t * 1000), "src": src, "type": type_, **fields}

    events = [*(ev(0.1, "broker.up", "zk", broker=b) for b in (1, 2, 3)),
              ev(0.1, "controller", "zk", broker=1, epoch=11),
              *(ev(0.75, "broker.up", "admin", broker=b) for b in (1, 2, 3)),
              ev(12.17, "controller", "zk", broker=-1, epoch=11), ev(12.18, "broker.down", "zk", broker=1),
              ev(12.18, "broker.down", "zk", broker=2), ev(12.19, "controller", "zk", broker=3, epoch=12),
              ev(13.02, "broker.up", "zk", broker=2), ev(13.11, "broker.up", "zk", broker=1),
              ev(13.36, "broker.down", "admin", broker=1), ev(13.36, "broker.down", "admin", broker=2),
              ev(19.68, "controller", "zk", broker=-1, epoch=12), ev(19.71, "controller", "zk", broker=2, epoch=13),
              ev(19.71, "broker.down", "zk", broker=3), ev(44.7, "broker.up", "admin", broker=2),
              ev(50.0, "run.end", "engine")]
    result = _unique(events)
    assert result.status == "pass", result.summary
    assert result.metrics["controllers_not_live"] == 0
