"""The coalescing work queue: FIFO per key, merges repeats (latest wall), survives errors, stops cleanly."""

from __future__ import annotations

import threading
from collections.abc import Hashable

from harness.zk.workqueue import CoalescingWorker


def test_repeated_keys_merge_keeping_their_place_and_the_latest_wall() -> None:
    gate = threading.Event()
    seen: list[tuple[Hashable, float]] = []

    def handler(key: Hashable, wall: float) -> None:
        if key == "block":
            gate.wait(5)
        seen.append((key, wall))

    w = CoalescingWorker("test-worker", handler)
    w.start()
    try:
        w.put("block", 0.0)
        assert not w.wait_idle(0.05)  # the handler is held
        w.put("a", 1.0)
        w.put("b", 2.0)
        w.put("a", 3.0)  # merged into the pending "a"
        gate.set()
        assert w.wait_idle(5)
    finally:
        w.stop()
    assert seen == [("block", 0.0), ("a", 3.0), ("b", 2.0)]


def test_a_failing_handler_does_not_kill_the_worker_and_stop_joins_the_thread() -> None:
    seen: list[Hashable] = []

    def handler(key: Hashable, wall: float) -> None:
        if key == "boom":
            raise RuntimeError("boom")
        seen.append(key)

    before = set(threading.enumerate())
    w = CoalescingWorker("test-worker-2", handler)
    w.start()
    w.put("boom", 0.0)
    w.put("ok", 0.0)
    assert w.wait_idle(5)
    w.stop()
    w.stop()
    w.put("ignored", 0.0)  # after stop: dropped
    assert seen == ["ok"]
    assert set(threading.enumerate()) - before == set()
