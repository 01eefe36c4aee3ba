"""The `Workload` extension point: drives load on the cluster and records every operation as events."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Workload(Protocol):
    """Started after steady state is reached; `stop()` ends sending, `drain(timeout_s)` waits for
    in-flight operations (acks, final polls) and `close()` releases clients and threads."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def drain(self, timeout_s: float) -> None: ...

    def close(self) -> None: ...
