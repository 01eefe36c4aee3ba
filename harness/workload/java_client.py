"""The workloads out of process: on the Java client (`workload.client: java`): producers (plain, idempotent,
transactional), read-process-write pipelines and consumer-group members, each one worker process
(`harness.workload.worker`) running the `java/` worker (`kafkachaos.Worker`) on kafka-clients of the chosen version;
on a pinned librdkafka (`client: librdkafka` with a `client_version`): the same, each one `py_worker` process on
that confluent-kafka. Both are a `WorkerClient`; the classes below drive either.

They record the events the librdkafka workloads record, with the same fields (the worker writes them; see its
source for where each field comes from in the Java client), and offer the same controls: a producer's pause, resume
and restart (`restart_producer`; a transactional producer's zombie restart too); a member's kill (SIGKILL of its
process: no LeaveGroup, no final commit), pause (it stops calling poll(); the Java client's heartbeat thread goes
on, so the member is dropped after max.poll.interval.ms), graceful close and the drain's caught-up report.
`WorkerMember` plugs into `ConsumerGroupWorkload`, which keeps the group's slots, scaling and drain for both clients.

Settings: the librdkafka workloads' own properties have the same names in the Java client (bootstrap.servers,
client.id, acks, enable.idempotence, group.id, auto.offset.reset, enable.auto.commit, auto.commit.interval.ms,
isolation.level, session.timeout.ms, group.protocol, group.remote.assignor) except the assignment strategy, whose
names map to the Java client's assignor classes (`ASSIGNORS`). A `config:` map is handed to the Java client as it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from harness.errors import TeardownError
from harness.history.events import Assign, HistoryEvent, Revoke, Send, TxnAbort, TxnBegin, TxnCommit
from harness.history.jsonl import EventSink
from harness.install.java_client import JavaClient, install_java_client
from harness.install.librdkafka_client import LibrdkafkaClient, install_librdkafka_client
from harness.workload.common import WorkloadConfigError, WorkloadError, txn_abort_drawn
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


class WorkerClient(Protocol):
    """How to start one worker of a client library (`JavaClient`, `LibrdkafkaClient`)."""

    @property
    def version(self) -> str: ...

    @property
    def kind(self) -> str: ...

    def argv(self) -> list[str]: ...

    def env(self) -> Mapping[str, str] | None: ...


def java_client(version: str) -> JavaClient:
    """The worker built for kafka-clients `version` (from the cache, or built now)."""
    with _BUILD_LOCK:
        return install_java_client(version, worker_sources())


def librdkafka_client(version: str) -> LibrdkafkaClient:
    """confluent-kafka `version` for the Python worker (from the cache, or installed now)."""
    with _BUILD_LOCK:
        return install_librdkafka_client(version)


def worker_sources() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(JAVA_SOURCES.glob("*.java"))}


def java_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def client_properties(config: Mapping[str, Any], kind: str = "java") -> dict[str, str]:
    """A workload's client configuration as the worker's `client.*` properties (for the Java client, the assignment
    strategy's names become its assignor classes; librdkafka's worker takes them as they are)."""
    out: dict[str, str] = {}
    for key, value in config.items():
        if key in _NOT_PASSED:
            continue
        if key == "partition.assignment.strategy" and kind == "java":
            value = ",".join(ASSIGNORS.get(s.strip(), s.strip()) for s in str(value).split(","))
        out[f"client.{key}"] = java_value(value)
    return out


@dataclass(frozen=True, slots=True)
class WorkerTransactions:
    """A worker producer's transactions (the Java worker's `TxnProducerRole`; `py_worker`'s `TxnSession`), as
    `TransactionalProducerWorkload`'s."""

    transactional_id: str
    records: int = 10
    abort_rate: float = 0.0
    timeout_s: float = 60.0
    seed: int = 0


@dataclass(frozen=True, slots=True)
class WorkerPipeline:
    """A read-process-write pipeline in a worker (the Java worker's `PipelineRole`; `py_worker`'s `PipelineSession`),
    as `PipelineWorkload`: it
    consumes `input_topic` as `group` and writes each record to the producer's topic in its transactions."""

    group: str
    input_topic: str


class WorkerProducerWorkload:
    """Sends `value_base + n` to `topic` at `rate` per second on a producer in a worker process; the
    same events, lifecycle and controls as `ProducerWorkload`, with `transactions` those of
    `TransactionalProducerWorkload`, and with `pipeline` too those of `PipelineWorkload` (see the module doc)."""

    def __init__(self, bootstrap_servers: str, sink: EventSink, *, client: WorkerClient, producer_id: str, topic: str,
                 rate: float, acks: str = "all", idempotence: bool = True, keys: int = 0, value_base: int = 0,
                 extra_config: Mapping[str, str] | None = None, transactions: WorkerTransactions | None = None,
                 pipeline: WorkerPipeline | None = None, consumer_config: Mapping[str, str] | None = None) -> None:
        who = f"WorkerProducerWorkload({producer_id!r})"
        if not rate > 0:
            raise WorkloadConfigError(who, "rate", rate, "messages per second > 0")
        if idempotence and acks != "all":
            raise WorkloadConfigError(who, "acks", acks, "'all' when idempotence is on (the Java client requires it)")
        if transactions is not None and (acks != "all" or not idempotence):
            raise WorkloadConfigError(who, "transactions", transactions, "acks 'all' with idempotence")
        self.name = f"producer:{producer_id}"
        self.producer_id = producer_id
        self.topic = topic
        self.acks = acks
        self.client = client
        self._sink = sink
        self._settings = {"worker.role": "producer", "worker.producer": producer_id, "worker.topic": topic,
                          "worker.acks": acks, "worker.rate": repr(float(rate)), "worker.keys": str(keys)}
        config: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "client.id": producer_id, "acks": acks,
                                  "enable.idempotence": idempotence, **dict(extra_config or {})}
        self.transactions = transactions
        if transactions is not None:
            t = transactions
            self._settings.update({"worker.role": "txn_producer", "worker.transactional_id": t.transactional_id,
                                   "worker.records": str(t.records), "worker.abort_rate": repr(float(t.abort_rate)),
                                   "worker.seed": str(t.seed), "worker.timeout_ms": str(int(t.timeout_s * 1000))})
            config.update({"transactional.id": t.transactional_id,
                           "transaction.timeout.ms": str(int(t.timeout_s * 1000))})
        self._config = client_properties(config, client.kind)
        if pipeline is not None:
            if transactions is None:
                raise WorkloadConfigError(who, "pipeline", pipeline, "a transactional producer (pipelines commit in "
                                          "transactions)")
            self.name, self.group = f"pipeline:{producer_id}", pipeline.group
            self._settings.update({"worker.role": "pipeline", "worker.group": pipeline.group,
                                   "worker.input": pipeline.input_topic})
            self._config.update({f"consumer.{k}": v for k, v in {
                "bootstrap.servers": bootstrap_servers, "group.id": pipeline.group,
                "isolation.level": "read_committed", "enable.auto.commit": "false", "auto.offset.reset": "earliest",
                "client.id": f"{producer_id}-in", "max.poll.records": str(transactions.records),
                **dict(consumer_config or {})}.items()})
        self._next_txn = 0
        self._open_txn: int | None = None
        """The transaction begun and not ended yet (an abrupt restart leaves it for the next session to abort)."""
        self._committing_txn: int | None = None
        """The transaction whose commit the worker has asked for (its outcome is unknown if the worker is killed)."""
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
        with self._lock:
            if isinstance(event, Send):
                self.sent += 1
                self._next_value = max(self._next_value, event.value + 1)
            elif isinstance(event, TxnBegin) and event.txn is not None:
                self._next_txn, self._open_txn = max(self._next_txn, event.txn + 1), event.txn
            elif isinstance(event, (TxnCommit, TxnAbort)) and event.txn == self._open_txn:
                self._open_txn = None
        self._sink(event)

    def _control(self, line: dict[str, Any]) -> None:
        if line.get("ctl") == "committing" and isinstance(line.get("txn"), int):
            with self._lock:
                self._committing_txn = int(line["txn"])

    def _spawn(self, abandoned: int | None = None) -> None:
        with self._lock:
            session = {"worker.value_base": str(self._next_value), "worker.txn_base": str(self._next_txn)}
        if abandoned is not None and self.transactions is not None:
            t = self.transactions
            session.update({"worker.abandoned_txn": str(abandoned), "worker.abandoned_abort": java_value(
                txn_abort_drawn(t.seed, self.producer_id, abandoned, t.abort_rate)),
                "worker.abandoned_committing": java_value(abandoned == self._committing_txn)})
        worker = WorkerProcess(self.client.argv(), {**self._settings, **session, **self._config},
                               src=self.name, sink=self._record, on_control=self._control, env=self.client.env())
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
        """A new client session in a new worker, sending on from the next value: the old worker ends its open
        transaction, delivers what it holds within `timeout_s` and closes (abrupt: it is killed at once, its
        outstanding writes stay unknown, and the new session's initTransactions aborts its open transaction, which
        the new worker records as aborted, `_ABANDONED`)."""
        old = self._worker
        if old is None:
            raise WorkloadError(f"{self.name}: restart() needs a running producer")
        if zombie:
            return self._zombie_restart(old, timeout_s)
        abandoned = None
        if abrupt:
            old.kill()
            with self._lock:
                abandoned, self._open_txn = self._open_txn, None
        else:
            self.drain(timeout_s)
            old.close(_CLOSE_TIMEOUT_S)
        self._retired.append(old)
        self._spawn(abandoned)
        pid = self._worker.pid if self._worker else "?"
        return f"session {self.sessions}: a new {self.client.kind} producer (worker pid {pid})"

    def _zombie_restart(self, old: WorkerProcess, timeout_s: float) -> str:
        """As `TransactionalProducerWorkload`'s: the old worker keeps its transaction open ("hold"), a new session
        starts (its initTransactions fences the old one and aborts that transaction), then the old one writes
        `records` more records into it, from values kept for it, and tries to commit (`txn.zombie`)."""
        if self.transactions is None:
            raise WorkloadError(f"{self.name}: only a transactional producer can be kept as a zombie")
        t0 = time.monotonic()
        old.command("hold")
        held = old.wait_control("held", timeout_s, after=t0)
        if held is None or held.get("txn") is None:
            raise WorkloadError(f"{self.name}: the old session did not hold a transaction open within {timeout_s:g}s "
                                f"({old.failure or 'no held line'})")
        txn = int(held["txn"])
        with self._lock:
            zombie_base = self._next_value
            self._next_value += self.transactions.records  # the zombie's values: no session writes them
            self._open_txn = None
        self._retired.append(old)
        self._spawn(abandoned=txn)
        new = self._worker
        assert new is not None
        if new.wait_control("initialized", timeout_s, after=t0) is None:
            old.close(_CLOSE_TIMEOUT_S)
            return (f"session {self.sessions}: its initTransactions did not succeed within {timeout_s:g}s, so the "
                    f"zombie (transaction {txn}) wrote nothing")
        t1 = time.monotonic()
        old.command(f"zombie {zombie_base}")
        done = old.wait_control("zombied", timeout_s, after=t1)
        old.close(_CLOSE_TIMEOUT_S)
        return (f"session {self.sessions}: the old client, fenced with transaction {txn} open, wrote "
                f"{self.transactions.records} more records and tried to commit"
                + ("" if done is not None else f" (no answer within {timeout_s:g}s)"))

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

    def __enter__(self) -> WorkerProducerWorkload:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class WorkerMember:
    """One incarnation of slot `slot` of a consumer group in a worker process: the interface of
    `harness.workload.member.Member` that `ConsumerGroupWorkload` drives."""

    def __init__(self, *, client: WorkerClient, group: str, slot: int, topics: Sequence[str], config: dict[str, Any],
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
        self._worker = WorkerProcess(client.argv(), {**settings, **client_properties(config, client.kind)},
                                     src=self.src, sink=self._record, on_control=self._control, env=client.env())

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
            self.caught_up = False  # a drain check judged the old assignment (`member.Member._rebalance`)
            self._assignment = frozenset((t, p) for t, p in event.assignment)
            self.member_id = event.member or self.member_id
        self._sink(event)

    def _control(self, line: dict[str, Any]) -> None:
        if line.get("ctl") == "drain":
            self.known_partitions = {(str(t), int(p)) for t, p in line.get("known") or ()}
            owned = line.get("owned")
            agrees = owned is None or {(str(t), int(p)) for t, p in owned} == set(self._assignment)
            self.caught_up = bool(line.get("caught_up")) and agrees
            detail = line.get("detail") if agrees else (
                f"the worker owns {sorted(map(tuple, owned or ()))}, its events said {sorted(self._assignment)}")
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
