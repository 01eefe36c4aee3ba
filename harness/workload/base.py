"""The `Workload` extension point: drives load on the cluster and records every operation as events; and
`MemberClient`, one consumer-group member whichever client runs it."""

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


@runtime_checkable
class Settles(Protocol):
    """A producer that says whether its last `drain` delivered everything it held: none outstanding, so no write
    of it can be acknowledged after that (the drain's early end relies on it, `engine.runner`)."""

    @property
    def settled(self) -> bool: ...


@runtime_checkable
class ReadsToTheEnd(Protocol):
    """A reader that says at once, without waiting, whether it has read everything below the ends of the partitions
    it reads (each group member caught up to the leaders' ends, every partition owned); the first call starts the
    checks (as `drain` does), so it is False until they have run."""

    def read_to_the_end(self) -> bool: ...


class MemberClient(Protocol):
    """One incarnation of a consumer-group slot as `ConsumerGroupWorkload` drives it: a librdkafka consumer on a
    thread (`member.Member`) or a Java consumer in a worker process (`java_client.WorkerMember`)."""

    src: str
    member_id: str | None
    caught_up: bool
    known_partitions: set[tuple[str, int]]
    last_check_error: str | None

    @property
    def alive(self) -> bool: ...

    @property
    def paused(self) -> bool: ...

    @property
    def assignment(self) -> frozenset[tuple[str, int]]: ...

    @property
    def failure(self) -> BaseException | None: ...

    @failure.setter
    def failure(self, value: BaseException | None) -> None: ...

    def start(self, timeout_s: float = ...) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def set_draining(self, on: bool) -> None: ...

    def end(self, mode: str) -> None: ...

    def join(self, timeout_s: float) -> bool: ...
