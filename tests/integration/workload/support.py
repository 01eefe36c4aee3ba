"""Helpers for the workload and AdminObserver tests: event capture, bounded waits, thread checks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psutil

from harness.errors import HarnessTimeout


class Events:
    """A thread-safe EventSink that keeps every event (a list append is atomic under the GIL)."""

    def __init__(self) -> None:
        self.all: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.all.append(dict(event))

    def of(self, type_: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in list(self.all) if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


def wait_until(cond: Callable[[], Any], timeout_s: float, what: str, last: Callable[[], Any] | None = None) -> Any:
    """Poll `cond` every 50 ms until truthy; HarnessTimeout naming `what` otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise HarnessTimeout(what, timeout_s, last() if last else value)
        time.sleep(0.05)


class ThreadCheck:
    """Python threads and OS threads of this process at creation; `assert_back()` compares."""

    def __init__(self) -> None:
        self.python = set(threading.enumerate())
        self.os_threads = psutil.Process().num_threads()

    def assert_back(self, timeout_s: float = 5.0) -> None:
        def settled() -> bool:
            extra = [t for t in threading.enumerate() if t not in self.python and t.is_alive()]
            return not extra and psutil.Process().num_threads() <= self.os_threads

        wait_until(
            settled,
            timeout_s,
            "no thread left behind",
            lambda: (
                [t.name for t in threading.enumerate() if t not in self.python],
                psutil.Process().num_threads(),
                self.os_threads,
            ),
        )
