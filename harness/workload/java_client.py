"""The workloads on the Java client (`workload.client: java`): a producer and consumer-group members, each one worker
process (`harness.workload.worker`) running the `java/` worker (`kafkachaos.Worker`) on kafka-clients of the chosen
version.

They record the events the librdkafka workloads record, with the same fields (the worker writes them; see its
source for where each field comes from in the Java client), and offer the same controls: a producer's pause, resume
and restart (`restart_producer`); a member's kill (SIGKILL of its process: no LeaveGroup, no final commit), pause
(it stops calling poll(); the Java client's heartbeat thread goes on, so the member is dropped after
max.poll.interval.ms), graceful close and the drain's caught-up report. `JavaMember` plugs into
`ConsumerGroupWorkload`, which keeps the group's slots, scaling and drain for both clients.

Settings: the librdkafka workloads' own properties have the same names in the Java client (bootstrap.servers,
client.id, acks, enable.idempotence, group.id, auto.offset.reset, enable.auto.commit, auto.commit.interval.ms,
isolation.level, session.timeout.ms, group.protocol, group.remote.assignor) except the assignment strategy, whose
names map to the Java client's assignor classes (`ASSIGNORS`). A `config:` map is handed to the Java client as it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.errors import TeardownError
from harness.history.events import Assign, HistoryEvent, Revoke, Send
from harness.history.jsonl import EventSink
from harness.install.java_client import JavaClient, install_java_client
from harness.workload.common import WorkloadConfigError, WorkloadError
from harness.workload.worker import WorkerProcess

JAVA_SOURCES = Path(__file__).with_name("java")
"""The Java worker's sources (package `kafkachaos`; `Worker.java` has the line protocol)."""
ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
"""librdkafka's `partition.assignment.strategy` names -> the Java client's assignor classes (the same assignors:
KIP-54 range and round-robin, KIP-429 cooperative sticky)."""
_CLOSE_TIMEOUT_S = 15.0
_NOT_PASSED = frozenset({"logger", "on_commit", "error_cb"})
"""librdkafka-only entries of a workload's configuration (Python callables), never handed to the Java client."""
_BUILD_LOCK = threading.Lock()


def java_client(version: str) -> JavaClient:
    """The worker built for kafka-clients `version` (from the cache, or built now)."""
    with _BUILD_LOCK:
        return install_java_client(version, worker_sources())


def worker_sources() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(JAVA_SOURCES.glob("*.java"))}


def java_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def client_properties(config: Mapping[str, Any]) -> dict[str, str]:
    """A workload's client configuration as the worker's `client.*` properties, for the Java client."""
    out: dict[str, str] = {}
    for key, value in config.items():
        if key in _NOT_PASSED:
            continue
        if key == "partition.assignment.strategy":
            value = ",".join(ASSIGNORS.get(s.strip(), s.strip()) for s in str(value).split(","))
        out[f"client.{key}"] = java_value(value)
    return out


class JavaProducerWorkload:
    """Sends `value_base + n` to `topic` at `rate` per second on a Java KafkaProducer in a worker process; the
    same events, lifecycle and controls as `ProducerWorkload` (see the module doc)."""

    def __init__(self, bootstrap_servers: str, sink: EventSink, *, client: JavaClient, producer_id: str, topic: str,
                 rate: float, acks: str = "all", idempotence: bool = True, keys: int = 0, value_base: int = 0,
                 extra_config: Mapping[str, str] | None = None) -> None:
        who = f"JavaProducerWorkload({producer_id!r})"
        if not rate > 0:
            raise WorkloadConfigError(who, "rate", rate, "messages per second > 0")
        if idempotence and acks != "all":
            raise WorkloadConfigError(who, "acks", acks, "'all' when idempotence is on (the Java client requires it)")
        self.name = f"producer:{producer_id}"
        self.producer_id = producer_id
        self.topic = topic
        self.acks = acks
        self.client = client
        self._sink = sink
        self._settings = {"worker.role": "producer", "worker.producer": producer_id, "worker.topic": topic,
                          "worker.acks": acks, "worker.rate": repr(float(rate)), "worker.keys": str(keys)}
        self._config = client_properties({"bootstrap.servers": bootstrap_servers, "client.id": producer_id,
                                          "acks": acks, "enable.idempotence": idempotence, **dict(extra_config or {})})
        self._next_value = value_base
        self._lock = threading.Lock()
        self._worker: WorkerProcess | None = None
        self._retired: list[WorkerProcess] = []
        self.sessions = 0
        self.sent = 0

    @property
    def worker_pid(self) -> int | None:
        """The current session's worker process."""
        return None if self._worker is None else self._worker.pid

    def _record(self, event: HistoryEvent) -> None:
        if isinstance(event, Send):
            with self._lock:
                self.sent += 1
                self._next_value = max(self._next_value, event.value + 1)
        self._sink(event)

    def _spawn(self) -> None:
        with self._lock:
            base = self._next_value
        worker = WorkerProcess(["java", *self.client.java_args()],
                               {**self._settings, "worker.value_base": str(base), **self._config},
                               src=self.name, sink=self._record)
        self._worker = worker
        self.sessions += 1
        worker.start()

    def start(self) -> None:
        if self._worker is not None:
            raise WorkloadError(f"{self.name}: start() called twice")
        self._spawn()

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.command("stop")

    def pause(self) -> None:
        if self._worker is not None:
            self._worker.command("pause")

    def resume(self) -> None:
        if self._worker is not None:
            self._worker.command("resume")

    def drain(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the outstanding acks (never raises: what is left stays unknown)."""
        worker = self._worker
        if worker is None:
            return
        self.stop()
        t0 = time.monotonic()
        worker.command(f"drain {int(timeout_s * 1000)}")
        worker.wait_control("drained", timeout_s + 5.0, after=t0)

    def restart(self, *, abrupt: bool = False, timeout_s: float = 30.0, zombie: bool = False) -> str:
        """A new client session in a new worker, sending on from the next value: the old worker delivers what it
        holds within `timeout_s` and closes (abrupt: it is killed at once, its outstanding writes stay unknown)."""
        if zombie:
            raise WorkloadError(f"{self.name}: only a transactional producer can be kept as a zombie")
        old = self._worker
        if old is None:
            raise WorkloadError(f"{self.name}: restart() needs a running producer")
        if abrupt:
            old.kill()
        else:
            self.drain(timeout_s)
            old.close(_CLOSE_TIMEOUT_S)
        self._retired.append(old)
        self._spawn()
        return f"session {self.sessions}: a new Java producer (worker pid {self._worker.pid if self._worker else '?'})"

    def close(self) -> None:
        failures: list[tuple[str, BaseException]] = []
        for worker in [*self._retired, *([self._worker] if self._worker else [])]:
            worker.close(_CLOSE_TIMEOUT_S)
            if worker.failure is not None:
                failures.append((f"{self.name}: worker pid {worker.pid}",
                                 WorkloadError(f"{worker.failure}; last words: {worker.last_words() or 'none'}")))
                worker.failure = None
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> JavaProducerWorkload:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class JavaMember:
    """One incarnation of slot `slot` of a consumer group on the Java client: the interface of
    `harness.workload.member.Member` that `ConsumerGroupWorkload` drives."""

    def __init__(self, *, client: JavaClient, group: str, slot: int, topics: Sequence[str], config: dict[str, Any],
                 commit: str, commit_interval_s: float, incremental: bool, sink: EventSink) -> None:
        self.group = group
        self.slot = slot
        self.consumer_id = f"{group}/{slot}"
        self.src = f"consumer:{self.consumer_id}"
        self._sink = sink
        self._paused = False
        self._end_mode: str | None = None
        self.caught_up = False
        self.last_check_error: str | None = None
        self.member_id: str | None = None
        self.known_partitions: set[tuple[str, int]] = set()
        self._assignment: frozenset[tuple[str, int]] = frozenset()
        settings = {"worker.role": "member", "worker.consumer": self.consumer_id, "worker.group": group,
                    "worker.topics": ",".join(topics), "worker.commit": commit,
                    "worker.incremental": "true" if incremental else "false",
                    "worker.commit_interval_s": repr(float(commit_interval_s))}
        self._worker = WorkerProcess(["java", *client.java_args()], {**settings, **client_properties(config)},
                                     src=self.src, sink=self._record, on_control=self._control)

    @property
    def alive(self) -> bool:
        return self._worker.alive

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def assignment(self) -> frozenset[tuple[str, int]]:
        return self._assignment

    @property
    def failure(self) -> BaseException | None:
        text = self._worker.failure
        return None if text is None else WorkloadError(f"{self.src}: {text}; last words: "
                                                       f"{self._worker.last_words() or 'none'}")

    @failure.setter
    def failure(self, value: BaseException | None) -> None:
        if value is None:
            self._worker.failure = None

    def _record(self, event: HistoryEvent) -> None:
        if isinstance(event, (Assign, Revoke)):
            self._assignment = frozenset((t, p) for t, p in event.assignment)
            self.member_id = event.member or self.member_id
        self._sink(event)

    def _control(self, line: dict[str, Any]) -> None:
        if line.get("ctl") == "drain":
            self.known_partitions = {(str(t), int(p)) for t, p in line.get("known") or ()}
            self.caught_up = bool(line.get("caught_up"))
            detail = line.get("detail")
            self.last_check_error = None if detail is None else str(detail)

    def start(self, timeout_s: float = 60.0) -> None:
        self._worker.start(timeout_s)

    def pause(self) -> None:
        self._paused = True
        self._worker.command("pause")

    def resume(self) -> None:
        self._paused = False
        self._worker.command("resume")

    def set_draining(self, on: bool) -> None:
        self.caught_up = False
        self._worker.command(f"draining {'on' if on else 'off'}")

    def end(self, mode: str) -> None:
        """'close' (graceful: revocation, the final auto-commit, LeaveGroup) or 'kill' (SIGKILL); does not wait."""
        if mode not in ("close", "kill"):
            raise WorkloadError(f"{self.src}: end mode {mode!r} is not 'close' or 'kill'")
        if self._end_mode is None:
            self._end_mode = mode
        if mode == "kill":
            self._worker.kill()
        else:
            self._worker.command("close")

    def join(self, timeout_s: float) -> bool:
        if self._end_mode == "close":
            self._worker.close(timeout_s)
        return not self._worker.alive
