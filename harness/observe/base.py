"""The `Observer` extension point: something that watches the cluster and emits events to a sink."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self, runtime_checkable


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
