"""A keyed, coalescing work queue with one worker thread (what a watch-driven reader needs).

Watch callbacks fire on ZooKeeper client threads and must not block; they `put(key, wall)`
here instead. One worker thread runs `handler(key, wall)` for each key in FIFO order; a key put
again while still pending is merged into the pending entry (keeping its place in the queue and
the latest `wall`: the read that follows sees at least that change), so a burst of notifications
for one znode costs one read. `stop()` drops pending work and joins the
thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

log = logging.getLogger(__name__)


class CoalescingWorker:
    """Runs `handler(key, wall)` on its own thread for every distinct pending key, in order."""

    def __init__(self, name: str, handler: Callable[[Hashable, float], None]) -> None:
        self.name = name
        self._handler = handler
        self._cond = threading.Condition()
        self._pending: dict[Hashable, float] = {}
        self._busy = False
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def put(self, key: Hashable, wall: float) -> None:
        """Queue `key` (merged into a pending entry for the same key, keeping the latest wall)."""
        with self._cond:
            if self._stopping:
                return
            self._pending[key] = max(wall, self._pending.get(key, wall))
            self._cond.notify_all()

    def describe(self) -> str:
        with self._cond:
            return f"pending={list(self._pending)} busy={self._busy}"

    def wait_idle(self, timeout_s: float) -> bool:
        """True once nothing is pending or running; False if that did not happen within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def request_stop(self) -> None:
        """Drop pending work and tell the thread to end after the running handler (no waiting)."""
        with self._cond:
            self._stopping = True
            self._pending.clear()
            self._cond.notify_all()

    def join(self, timeout_s: float = 30.0) -> None:
        """Wait for the thread after `request_stop()`."""
        with self._cond:
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=timeout_s)
            if thread.is_alive():
                log.error("%s: worker thread did not stop within %ss", self.name, timeout_s)

    def stop(self, join_timeout_s: float = 30.0) -> None:
        """Drop pending work, let a running handler finish, and join the thread. Idempotent."""
        self.request_stop()
        self.join(join_timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                key = next(iter(self._pending))
                wall = self._pending.pop(key)
                self._busy = True
            try:
                self._handler(key, wall)
            except Exception:  # the handler owns error reporting; the worker must survive
                log.exception("%s: handler failed for %r", self.name, key)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
