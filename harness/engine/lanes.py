"""Fault lanes: each fault's inject and heal run in order on a thread of their own, so one slow action delays no
other fault's.

A graceful stop waits out the broker's controlled shutdown (up to 30 s when the broker cannot reach its
controller), and a heal's start waits for the broker's registration. Run one after another, such an action held
back every later action of the schedule: on Apache Kafka 3.9.2 a stop of an isolated broker held the heals of an
isolation and a ZooKeeper partition for 23 s, so both lasted 31-34 s instead of 8-9 s (false-fail hunt, zookeeper
schedule 8). The schedule still waits for each action up to `INLINE_S`, so quick actions (signals, link cuts,
toxics) keep exactly the order the schedule gives; only an action that takes longer lets the schedule go on
while its lane finishes it. `close` waits for every action under way and drops those not yet begun: heal and
teardown then know what is injected.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import TracebackType

INLINE_S = 1.0
"""How long the schedule waits for an action before it goes on without it."""


class FaultLanes:
    """One single-thread executor per fault (its inject, then its heal)."""

    def __init__(self, inline_s: float = INLINE_S) -> None:
        self.inline_s = inline_s
        self._lanes: dict[int, ThreadPoolExecutor] = {}
        self._futures: list[Future[None]] = []
        self._lock = threading.Lock()

    def run(self, fault: int, action: Callable[[], None]) -> None:
        """Start `action` on `fault`'s lane (after what it already holds); return when it ended, or after
        `inline_s`. An error it raised surfaces here, or at a later `check`."""
        with self._lock:
            lane = self._lanes.get(fault)
            if lane is None:
                lane = self._lanes[fault] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"fault-{fault}")
            future = lane.submit(action)
            self._futures.append(future)
        wait([future], timeout=self.inline_s)
        self.check()

    def busy(self) -> int:
        """Actions begun or queued that have not ended."""
        with self._lock:
            return sum(1 for f in self._futures if not f.done())

    def check(self) -> None:
        """Raise the first error of an action that ended with one (once)."""
        with self._lock:
            failed = next((f for f in self._futures if f.done() and not f.cancelled() and f.exception()), None)
            self._futures = [f for f in self._futures if not f.done()]
        if failed is not None:
            error = failed.exception()
            assert error is not None
            raise error

    def close(self) -> None:
        """Wait for every action under way; drop those not begun. Idempotent."""
        with self._lock:
            lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            lane.shutdown(wait=True, cancel_futures=True)
        self.check()

    def __enter__(self) -> FaultLanes:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
