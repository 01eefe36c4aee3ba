"""harness.waiting: the one poll loop (`wait_until`, `poll_until`) and `Deadline`."""

from __future__ import annotations

import threading
import time

import pytest

from harness.errors import HarnessTimeout
from harness.waiting import Deadline, WaitStopped, poll_until, wait_until


class Countdown:
    """A predicate that comes true (returning `value`) on its `n`-th call; records when it was called."""

    def __init__(self, n: int, value: object = "ready") -> None:
        self.n, self.value = n, value
        self.calls: list[float] = []

    def __call__(self) -> object:
        self.calls.append(time.monotonic())
        return self.value if len(self.calls) >= self.n else None


def test_wait_until_returns_the_predicates_truthy_value() -> None:
    probe = Countdown(3, value={"leader": 2})
    assert wait_until("a leader", probe, 5.0, poll_s=0.001) == {"leader": 2}
    assert len(probe.calls) == 3


def test_wait_until_calls_the_predicate_at_least_once_even_with_no_time_left() -> None:
    assert wait_until("x", lambda: 7, 0.0) == 7
    assert wait_until("x", lambda: 7, deadline=time.monotonic() - 1.0) == 7


def test_wait_until_times_out_naming_what_was_awaited_the_last_value_seen_and_the_hint() -> None:
    # Every answer is falsy and the last one is 0 however few calls a loaded machine fits into the 50 ms (a first
    # answer of "" and a second of None made this fail when only one or two calls fitted).
    with pytest.raises(HarnessTimeout) as caught:
        wait_until("zk:1 to serve", lambda: 0, 0.05, poll_s=0.001, hint="check the ports")
    err = caught.value
    assert (err.waiting_for, err.timeout_s, err.last_seen, err.hint) == ("zk:1 to serve", 0.05, 0, "check the ports")
    assert "waiting for zk:1 to serve; last seen: 0; hint: check the ports" in str(err)


def test_wait_until_last_seen_turns_what_was_seen_last_into_the_report() -> None:
    with pytest.raises(HarnessTimeout) as caught:
        wait_until("k1", lambda: False, 0.01, poll_s=0.001, last_seen=lambda seen: f"{seen}; log ends with: boom")
    assert caught.value.last_seen == "False; log ends with: boom"


def test_wait_until_retries_exceptions_of_retry_on_and_reports_the_last_one() -> None:
    def refuse() -> bool:
        raise ConnectionRefusedError("connection refused")

    with pytest.raises(HarnessTimeout) as caught:
        wait_until("a port", refuse, 0.02, poll_s=0.001, retry_on=(OSError,))
    assert isinstance(caught.value.last_seen, ConnectionRefusedError)


def test_wait_until_lets_any_other_exception_of_the_predicate_end_the_wait_at_once() -> None:
    def exited() -> bool:
        raise RuntimeError("the node exited")

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="the node exited"):
        wait_until("a node", exited, 30.0, retry_on=(OSError,))
    assert time.monotonic() - started < 1.0


def test_wait_until_reports_the_budget_of_a_deadline_passed_in() -> None:
    with pytest.raises(HarnessTimeout) as caught:
        wait_until("x", lambda: None, deadline=Deadline.after(0.02), poll_s=0.001)
    assert caught.value.timeout_s == pytest.approx(0.02)
    with pytest.raises(HarnessTimeout) as caught:
        wait_until("x", lambda: None, deadline=time.monotonic() + 0.02, poll_s=0.001)
    assert 0.0 < caught.value.timeout_s <= 0.02


def test_wait_until_wants_exactly_one_of_timeout_and_deadline() -> None:
    with pytest.raises(TypeError):
        wait_until("x", lambda: 1)
    with pytest.raises(TypeError):
        wait_until("x", lambda: 1, 1.0, deadline=time.monotonic() + 1.0)


def test_wait_until_never_sleeps_past_the_deadline_and_checks_once_more_at_it() -> None:
    probe = Countdown(10**9)
    started = time.monotonic()
    with pytest.raises(HarnessTimeout):
        wait_until("x", probe, 0.1, poll_s=30.0)
    ended = time.monotonic()
    assert ended - started < 1.0
    assert len(probe.calls) == 2  # at once, then at the deadline
    assert probe.calls[1] - started >= 0.1


def test_wait_until_respects_a_stop_event_by_waking_and_raising_wait_stopped() -> None:
    stop = threading.Event()
    threading.Timer(0.05, stop.set).start()
    started = time.monotonic()
    with pytest.raises(WaitStopped) as caught:
        wait_until("the drain", lambda: "", 30.0, poll_s=10.0, stop=stop)
    assert time.monotonic() - started < 5.0
    assert caught.value.waiting_for == "the drain"
    assert caught.value.last_seen == ""


def test_poll_until_returns_the_truthy_value_or_the_last_falsy_one_on_timeout() -> None:
    assert poll_until(Countdown(2, value=(1, 2)), 5.0, poll_s=0.001) == (1, 2)
    assert poll_until(lambda: (), 0.01, poll_s=0.001) == ()
    assert poll_until(lambda: False, 0.01, poll_s=0.001) is False


def test_poll_until_returns_none_when_the_last_call_raised_an_exception_of_retry_on() -> None:
    def refuse() -> bool:
        raise OSError("refused")

    assert poll_until(refuse, 0.01, poll_s=0.001, retry_on=(OSError,)) is None


def test_poll_until_respects_a_stop_event_and_returns_without_raising() -> None:
    stop = threading.Event()
    stop.set()
    probe = Countdown(10**9)
    assert poll_until(probe, 30.0, stop=stop) is None
    assert len(probe.calls) == 1


def test_poll_until_with_no_pause_keeps_calling_a_predicate_that_blocks_itself() -> None:
    probe = Countdown(50)
    assert poll_until(probe, 5.0, poll_s=0.0) == "ready"
    assert len(probe.calls) == 50


def test_deadline_counts_down_to_zero_and_then_is_expired() -> None:
    deadline = Deadline.after(0.05)
    assert deadline.budget_s == 0.05
    assert 0.0 < deadline.remaining() <= 0.05
    assert not deadline.expired()
    time.sleep(0.06)
    assert deadline.remaining() == 0.0
    assert deadline.expired()
    assert Deadline.of(time.monotonic() - 5.0).budget_s == 0.0
