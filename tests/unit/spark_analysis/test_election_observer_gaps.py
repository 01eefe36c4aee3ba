"""`partition.election_conforms` when the observer missed a state: a broker that came back and rejoined the
ISR between two observed states may lead after the next election (seen on Apache Kafka 4 under load: the
KRaft metadata poll went from leader 2 / ISR [2, 3] straight to leader 1 / ISR [1, 3]), but a leader
written alone into the ISR stays judged against the observed one."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.partition.checks import ElectionConforms
from spark_analysis.result import CheckResult, run_check
from tests.fixtures.histories import python_context

Event = dict[str, Any]


def _ev(t: float, type_: str, src: str = "zk", **fields: Any) -> Event:
    return {"t": t, "src": src, "type": type_, **fields}


def _ps(t: float, leader: int, epoch: int, isr: list[int]) -> Event:
    return _ev(t, "partition.state", topic="t", partition=0, leader=leader, leader_epoch=epoch, isr=isr,
               replicas=[1, 2, 3])


def _history(*, back: bool, new_isr: list[int]) -> list[Event]:
    """Broker 1 dies (leader 2 elected, ISR [2, 3]); it comes back at 20 s when `back`; broker 2 is stopped
    at 30 s and broker 1 is seen leading with `new_isr`, the ISR [1, 2, 3] in between never observed."""
    events = [*(_ev(0.1, "broker.up", broker=b) for b in (1, 2, 3)), _ps(0.2, 1, 0, [1, 2, 3]),
              _ev(5.0, "broker.down", broker=1), _ps(5.1, 2, 1, [2, 3]),
              _ev(30.0, "fault.start", "engine", fault_id=1, kind="stop", target=["broker:2"], brokers=[2]),
              _ps(30.2, 1, 2, new_isr), _ev(30.5, "broker.down", broker=2),
              _ev(33.0, "fault.end", "engine", fault_id=1, kind="stop", target=["broker:2"], brokers=[2]),
              _ev(40.0, "run.end", "engine")]
    if back:
        events.append(_ev(20.0, "broker.up", broker=1))
    return sorted(events, key=lambda e: e["t"])


def _run(events: list[Event]) -> CheckResult:
    return run_check(ElectionConforms(), python_context(events))


def test_a_broker_that_came_back_may_lead_after_an_unobserved_isr_expansion() -> None:
    result = _run(_history(back=True, new_isr=[1, 3]))
    assert result.status == "pass", result.summary


def test_without_its_return_in_between_the_same_leader_is_off_the_model() -> None:
    result = _run(_history(back=False, new_isr=[1, 3]))
    assert result.status == "fail" and "picked 1, model prescribes 3" in result.summary, result.summary


def test_a_returned_broker_written_alone_into_the_isr_stays_judged_against_the_observed_isr() -> None:
    result = _run(_history(back=True, new_isr=[1]))
    assert result.status == "fail", result.summary
