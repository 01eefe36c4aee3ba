"""The `Observer` extension point (something that watches the cluster and emits events to a sink), the
start/stop context-manager pair, and `OrderedEmitter`, which stamps an observer's events in order."""

from __future__ import annotations

import dataclasses
import logging
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from harness.history.events import HistoryEvent
from harness.history.jsonl import EventSink

log = logging.getLogger(__name__)


@runtime_checkable
class Observer(Protocol):
    """Started before the workload, stopped after the drain. `stop()` leaves no thread running."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...


class StartedByWith:
    """`with observer:` starts it and stops it on the way out (the observers' context-manager pair).

    For observers whose `start()` opens what `stop()` closes; the class defines both.
    """

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class OrderedEmitter:
    """Hands one observer's events to its sink with `src` = the observer's name and `wall` stamps that never go
    back (a later answer stamped earlier by a lagging clock read keeps the last stamp). A sink that raises is
    counted in `sink_errors` and logged; the observer goes on. Callers serialise their calls (one thread, or
    under the observer's lock)."""

    def __init__(self, sink: EventSink, src: str) -> None:
        self._sink = sink
        self.src = src
        self._last_wall = 0.0
        self.sink_errors = 0

    def __call__(self, event: HistoryEvent) -> None:
        """Hand `event` on, stamped `src` = this observer and `wall` = its own (when it was seen), or the last."""
        wall = max(event.wall if event.wall is not None else 0.0, self._last_wall)
        self._last_wall = wall
        event = dataclasses.replace(event, src=self.src, wall=round(wall, 3))
        try:
            self._sink(event)
        except Exception:
            self.sink_errors += 1
            log.exception("observer %s: sink rejected %r", self.src, event)
