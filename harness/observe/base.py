"""The `Observer` extension point: something that watches the cluster and emits events to a sink."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Observer(Protocol):
    """Started before the workload, stopped after the drain. `stop()` leaves no thread running."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...
