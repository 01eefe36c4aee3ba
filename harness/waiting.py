"""Waiting for something with a time limit: the harness's one poll loop and its one notion of a deadline.

Owns:
- `Deadline`: a point on the monotonic clock and the budget it was made from (`remaining()`, `expired()`), for
  code that hands what is left of a budget down to calls that take a timeout;
- `wait_until(what, predicate, ...)`: call `predicate` every `poll_s` until it returns something truthy (that
  value is returned) or the time runs out, then raise `HarnessTimeout` saying what was awaited, what was seen
  last and a hint;
- `poll_until(predicate, ...)`: the same loop for waits whose end is not an error: returns the predicate's last
  result (falsy when the time ran out), as `threading.Condition.wait_for` does.

Both call the predicate at least once, sleep at most until the deadline (a final call is made at the deadline,
never a sleep past it), and stop early when a `stop` event is set. An exception from the predicate ends the
wait (a node that exited is an error now, not at the deadline) unless its type is in `retry_on`: then it counts
as "not yet" and is what was seen last. `poll_s=0` makes no pause, for a predicate that blocks by itself (a
client's `poll(0.1)`). Condition-variable waits (`threading.Condition.wait_for`) and retries
with a backoff are not polls and stay where they are.

A bottom-layer module: it imports only the standard library and `harness.errors`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from harness.errors import HarnessError, HarnessTimeout

T = TypeVar("T")

__all__ = ["Deadline", "WaitStopped", "poll_until", "wait_until"]


@dataclass(frozen=True, slots=True)
class Deadline:
    """A moment on the `time.monotonic()` clock (`at`) and the budget it was set from (`budget_s`)."""

    at: float
    budget_s: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline `seconds` from now."""
        return cls(time.monotonic() + seconds, seconds)

    @classmethod
    def of(cls, at: float) -> Deadline:
        """The deadline at monotonic time `at` (its budget: what is left of it now, at least 0, to the ms)."""
        return cls(at, round(max(0.0, at - time.monotonic()), 3))

    def remaining(self) -> float:
        """Seconds left (0.0 once it has passed)."""
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.at


class WaitStopped(HarnessError):
    """`wait_until` was told to stop (its `stop` event was set) before what it awaited happened."""

    def __init__(self, waiting_for: str, last_seen: object = None) -> None:
        self.waiting_for = waiting_for
        self.last_seen = last_seen
        super().__init__(f"stopped waiting for {waiting_for}; last seen: {last_seen!r}")


def wait_until(what: str, predicate: Callable[[], T | None], timeout_s: float | None = None, *,
               deadline: Deadline | float | None = None, last_seen: Callable[[object], object] | None = None,
               hint: str = "", poll_s: float = 0.1, stop: threading.Event | None = None,
               retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Call `predicate` until it returns something truthy and return that; give it `timeout_s` seconds, or until
    `deadline` (a `Deadline` or a `time.monotonic()` value), one of the two.

    When the time runs out: `HarnessTimeout(what, the budget, last seen, hint)`. What was seen last is the
    predicate's last falsy result or the last exception of `retry_on` it raised; `last_seen(that)` may turn it
    into something more telling (e.g. add the end of a log). When `stop` is set: `WaitStopped`."""
    limit = _deadline(timeout_s, deadline)
    done, value, seen = _poll(predicate, limit, poll_s, stop, retry_on)
    if done and value is not None:
        return value
    shown = last_seen(seen) if last_seen is not None else seen
    if stop is not None and stop.is_set():
        raise WaitStopped(what, shown)
    raise HarnessTimeout(what, limit.budget_s, last_seen=shown, hint=hint)


def poll_until(predicate: Callable[[], T], timeout_s: float | None = None, *, deadline: Deadline | float | None = None,
               poll_s: float = 0.1, stop: threading.Event | None = None,
               retry_on: tuple[type[BaseException], ...] = ()) -> T | None:
    """Call `predicate` until it returns something truthy, the time runs out or `stop` is set; returns its last
    result (truthy: it happened), or None when its last call raised an exception of `retry_on`."""
    _, value, _ = _poll(predicate, _deadline(timeout_s, deadline), poll_s, stop, retry_on)
    return value


def _deadline(timeout_s: float | None, deadline: Deadline | float | None) -> Deadline:
    if timeout_s is not None and deadline is None:
        return Deadline.after(timeout_s)
    if timeout_s is None and deadline is not None:
        return deadline if isinstance(deadline, Deadline) else Deadline.of(deadline)
    raise TypeError("give a wait either timeout_s or deadline (one of the two)")


def _poll(predicate: Callable[[], T | None], limit: Deadline, poll_s: float, stop: threading.Event | None,
          retry_on: tuple[type[BaseException], ...]) -> tuple[bool, T | None, object]:
    """(whether the predicate came true, its last result, what was seen last)."""
    while True:
        value: T | None = None
        try:
            value = predicate()
            seen: object = value
        except retry_on as exc:
            seen = exc
        if value:
            return True, value, value
        left = limit.remaining()
        if left <= 0 or (stop is not None and stop.is_set()):
            return False, value, seen
        pause = min(max(poll_s, 0.0), left)
        if stop is not None:
            stop.wait(pause)
        elif pause > 0:
            time.sleep(pause)
