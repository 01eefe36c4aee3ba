"""The AdminClient observer: polls the cluster through confluent-kafka's AdminClient and emits
history events (src `admin`, or the observer's name) only when what it sees changes.

Per cycle (every `interval` seconds, on its own thread):
- `list_topics` (Metadata): brokers, controller id, and leader/replicas/ISR of every partition
  (internal topics included: `__consumer_offsets` leaders are the group coordinators);
- `describe_cluster` (DescribeCluster): controller id and brokers; when it fails the metadata's
  controller id and broker list are used instead (`source` says which);
- `list_consumer_groups` + `describe_consumer_groups`: state, coordinator, assignor, members
  and their assignments, for the listed groups plus the `groups` given to the constructor.

Emitted: `controller` {broker (-1 = none), epoch: null, source} (not in KRaft: `controller_events`);
`broker.up` {broker, host, port} / `broker.down` {broker}; `partition.state` {topic, partition, leader,
leader_epoch: null, isr, replicas, controller_epoch: null, error}; `group.state` {group, state (Kafka's names:
Empty, PreparingRebalance, CompletingRebalance, Stable, Dead, Unknown), generation: null,
coordinator, leader: null, protocol, members [{member_id, client_id, host, assignment}],
group_type (classic|consumer)}.
The Admin API does not report epochs, group generations or the group leader, hence the nulls.
A failing or unsupported call emits `observer.error` {observer, call, error, detail} once per
(call, error kind) and the other calls go on. Deleted topics/groups are forgotten silently.

A group whose describe answers NOT_COORDINATOR `STALE_COORDINATOR_CYCLES` cycles in a row gets a new AdminClient:
librdkafka's admin client kept asking the broker it had found as coordinator while that broker was standing in
(its own restarted broker led `__consumer_offsets` again), and no `group.state` was recorded for the 65 s left of
a run, so a finished rebalance looked open at the end (experiments/transactions.yaml on Apache Kafka 3.9.2).
A new client looks the coordinator up again; `observer.error` {call `describe_consumer_groups`, error
`stale coordinator`} records the replacement once.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import CancelledError, Future
from types import TracebackType
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient

from harness.errors import HarnessError, TeardownError
from harness.history.events import (
    BrokerDown,
    BrokerUp,
    Controller,
    GroupMember,
    GroupState,
    PartitionState,
)
from harness.history.events import ObserverError as ObserverErrorEvent
from harness.history.jsonl import EventSink
from harness.workload.common import LIBRDKAFKA_LOGGER

STALE_COORDINATOR_CYCLES = 3
"""Cycles in a row of NOT_COORDINATOR for one group before the AdminClient is replaced."""

_STATE_NAMES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}
_JOIN_TIMEOUT_S = 10.0


def _wall_ms() -> int:
    return int(time.time() * 1000)


class ObserverError(HarnessError):
    """The observer was misused (started twice, bad interval) or its thread failed."""


def _error_kind(exc: BaseException) -> tuple[str, str]:
    """(kind, detail) of a failed call: the librdkafka error name when there is one."""
    arg = exc.args[0] if exc.args else None
    if isinstance(arg, confluent_kafka.KafkaError):
        return arg.name(), arg.str()
    return type(exc).__name__, str(exc)


def _outcome(future: Future[Any], timeout_s: float) -> tuple[Any, BaseException | None]:
    """(result, None) or (None, error) of an AdminClient future, without raising its exception.

    Raising a future's stored exception would attach the caller's frame (which holds the
    AdminClient) to it, and the future would keep that frame - and the client's threads -
    alive until the next garbage collection.
    """
    try:
        error = future.exception(timeout=timeout_s)
    except (TimeoutError, CancelledError) as exc:
        return None, exc
    return (None, error) if error is not None else (future.result(), None)


def _enum_name(value: object) -> str | None:
    if value is None:
        return None
    name = getattr(value, "name", None)
    return str(name) if name is not None else str(value)


class AdminObserver:
    """Polls the cluster every `interval` s and emits changes; `start()`/`stop()`, context manager."""

    def __init__(
        self,
        bootstrap_servers: str,
        sink: EventSink,
        *,
        interval: float = 0.5,
        name: str = "admin",
        request_timeout_s: float = 2.0,
        groups: Sequence[str] = (),
        extra_config: Mapping[str, str] | None = None,
        controller_events: bool = True,
    ) -> None:
        if not interval > 0:
            raise ObserverError(f"AdminObserver({name!r}): interval={interval!r} must be > 0 seconds")
        if not request_timeout_s > 0:
            raise ObserverError(f"AdminObserver({name!r}): request_timeout_s={request_timeout_s!r} must be > 0")
        self.name = name
        self.interval = interval
        self.request_timeout_s = request_timeout_s
        self.groups = list(groups)
        self.controller_events = controller_events
        """False in KRaft, where DescribeCluster and Metadata name a random broker as 'controller' (clients
        cannot reach the controllers): the quorum observer records the controller there."""
        self._sink = sink
        self._config: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "client.id": f"observer-{name}",
                                        "logger": LIBRDKAFKA_LOGGER}
        self._config.update(dict(extra_config or {}))
        self._admin: AdminClient | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._errors_seen: set[tuple[str, str]] = set()
        self._controller: int | None = None
        self._brokers: dict[int, tuple[str, int]] | None = None
        self._partitions: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._groups: dict[str, tuple[Any, ...]] = {}
        self._not_coordinator: dict[str, int] = {}
        """Cycles in a row each group's describe answered NOT_COORDINATOR."""
        self.cycles = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            raise ObserverError(f"AdminObserver({self.name!r}): start() called twice")
        try:
            self._admin = AdminClient(self._config)
        except (confluent_kafka.KafkaException, ValueError, TypeError) as exc:
            raise ObserverError(f"AdminObserver({self.name!r}): cannot create the AdminClient: {exc}") from exc
        self._thread = threading.Thread(target=self._run, name=f"observer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling, join the thread and release the client (idempotent)."""
        failures: list[tuple[str, BaseException]] = []
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_JOIN_TIMEOUT_S + self.request_timeout_s * 4)
            if thread.is_alive():
                failures.append((f"AdminObserver({self.name!r}): join", TimeoutError("poll thread still alive")))
            else:
                self._admin = None  # last reference: librdkafka's handle and threads go here
        if self._failure is not None:
            failures.append((f"AdminObserver({self.name!r}): poll thread", self._failure))
            self._failure = None
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> AdminObserver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.poll_once()
                self._stop.wait(self.interval)
        except BaseException as exc:
            traceback.clear_frames(exc.__traceback__)  # keep the trace, not the clients in its frames
            self._failure = exc

    # -- one cycle -----------------------------------------------------------------------------
    def _call_failed(self, call: str, exc: BaseException) -> None:
        self._report(call, *_error_kind(exc))

    def _report(self, call: str, kind: str, detail: str) -> None:
        """`observer.error`, once per (call, error kind)."""
        if (call, kind) in self._errors_seen:
            return
        self._errors_seen.add((call, kind))
        self._sink(ObserverErrorEvent(src=self.name, wall=_wall_ms(), observer=self.name, call=call,
                                 error=f"{call}: {kind}", detail=detail))

    def poll_once(self) -> None:
        """Run every call once and emit what changed (each call's failure is recorded, not raised)."""
        admin = self._admin
        if admin is None:
            raise ObserverError(f"AdminObserver({self.name!r}): poll_once() before start()")
        admin.poll(0)  # serves librdkafka's queued log lines to LIBRDKAFKA_LOGGER
        metadata = None
        try:
            metadata = admin.list_topics(timeout=self.request_timeout_s)
        except Exception as exc:
            self._call_failed("list_topics", exc)
        cluster = None
        try:
            cluster, error = _outcome(
                admin.describe_cluster(request_timeout=self.request_timeout_s), self.request_timeout_s + 1.0
            )
        except Exception as exc:
            error = exc
        if error is not None:
            self._call_failed("describe_cluster", error)
        del error  # see _outcome: no exception (and its traceback into this frame) kept in a local
        if cluster is not None:
            controller = cluster.controller.id if cluster.controller is not None else -1
            brokers = {n.id: (n.host, n.port) for n in cluster.nodes}
            self._update_cluster(controller, brokers, "describe_cluster")
        elif metadata is not None:
            brokers = {b.id: (b.host, b.port) for b in metadata.brokers.values()}
            self._update_cluster(metadata.controller_id, brokers, "metadata")
        if metadata is not None:
            self._update_partitions(metadata)
        self._update_groups(admin)
        self.cycles += 1

    def _update_cluster(self, controller: int, brokers: dict[int, tuple[str, int]], source: str) -> None:
        controller = controller if controller is not None and controller >= 0 else -1
        if controller != self._controller and self.controller_events:
            self._controller = controller
            self._sink(Controller(src=self.name, wall=_wall_ms(), broker=controller, epoch=None, source=source))
        previous = self._brokers or {}
        for broker_id in sorted(set(previous) - set(brokers)):
            self._sink(BrokerDown(src=self.name, wall=_wall_ms(), broker=broker_id))
        for broker_id in sorted(set(brokers) - set(previous)):
            host, port = brokers[broker_id]
            self._sink(BrokerUp(src=self.name, wall=_wall_ms(), broker=broker_id, host=host, port=port))
        self._brokers = dict(brokers)

    def _update_partitions(self, metadata: Any) -> None:
        for topic_name, topic in sorted(metadata.topics.items()):
            for pid, part in sorted(topic.partitions.items()):
                error = part.error.name() if part.error else None
                leader = part.leader if part.leader is not None and part.leader >= 0 else -1
                replicas = list(part.replicas)
                isr = list(part.isrs)
                state = (leader, tuple(sorted(isr)), tuple(replicas), error)
                if self._partitions.get((topic_name, pid)) == state:
                    continue
                self._partitions[(topic_name, pid)] = state
                self._sink(PartitionState(
                    src=self.name,
                    wall=_wall_ms(),
                    topic=topic_name,
                    partition=pid,
                    leader=leader,
                    leader_epoch=None,
                    isr=tuple(isr),
                    replicas=tuple(replicas),
                    controller_epoch=None,
                    error=error,
                ))

    def _update_groups(self, admin: AdminClient) -> None:
        group_ids = list(self.groups)
        try:
            listed, error = _outcome(
                admin.list_consumer_groups(request_timeout=self.request_timeout_s), self.request_timeout_s + 1.0
            )
        except Exception as exc:
            listed, error = None, exc
        if error is not None:
            self._call_failed("list_consumer_groups", error)
        elif listed is not None:
            for listing in listed.valid:
                if listing.group_id not in group_ids:
                    group_ids.append(listing.group_id)
            for err in listed.errors or []:
                failure = err if isinstance(err, BaseException) else confluent_kafka.KafkaException(err)
                self._call_failed("list_consumer_groups", failure)
        del error  # never keep an exception (and through its traceback, this frame) in a local
        if not group_ids:
            return
        try:
            futures = admin.describe_consumer_groups(group_ids, request_timeout=self.request_timeout_s)
        except Exception as exc:
            self._call_failed("describe_consumer_groups", exc)
            return
        stale = False
        for group_id in group_ids:
            desc, failed = _outcome(futures[group_id], self.request_timeout_s + 1.0)
            if failed is not None:
                self._call_failed("describe_consumer_groups", failed)
                stale_answer = _error_kind(failed)[0] == "NOT_COORDINATOR"
                misses = self._not_coordinator.get(group_id, 0) + 1 if stale_answer else 0
                self._not_coordinator[group_id] = misses
                stale = stale or misses >= STALE_COORDINATOR_CYCLES
            else:
                self._not_coordinator.pop(group_id, None)
                self._update_group(desc)
            del failed
        if stale:
            self._renew_client()

    def _renew_client(self) -> None:
        """A new AdminClient, which looks group coordinators up again (see the module docstring)."""
        self._report("describe_consumer_groups", "stale coordinator",
                     f"NOT_COORDINATOR {STALE_COORDINATOR_CYCLES} cycles in a row; the AdminClient is replaced, so "
                     "that it looks the coordinator up again")
        self._not_coordinator.clear()
        self._admin = AdminClient(self._config)

    def _update_group(self, desc: Any) -> None:
        key, state = group_state(desc, self.name)
        if self._groups.get(desc.group_id) == key:
            return
        self._groups[desc.group_id] = key
        self._sink(dataclasses.replace(state, wall=_wall_ms()))


def group_state(desc: Any, src: str = "admin") -> tuple[tuple[Any, ...], GroupState]:
    """(change key, unstamped `group.state` event) of a confluent-kafka ConsumerGroupDescription.

    The key ignores member order; generation and leader are null (the Admin API has neither).
    """
    members = tuple(sorted(
        (
            GroupMember(
                m.member_id, m.client_id, m.host,
                tuple(sorted((tp.topic, tp.partition)
                             for tp in (m.assignment.topic_partitions if m.assignment else []))),
            )
            for m in desc.members
        ),
        key=lambda m: str(m.member_id),
    ))
    state_name = _enum_name(getattr(desc, "state", None))
    state = _STATE_NAMES.get(state_name or "", state_name)
    coordinator = desc.coordinator.id if desc.coordinator is not None else None
    group_type = _enum_name(getattr(desc, "type", None))
    key = (state, coordinator, desc.partition_assignor, group_type, members)
    event = GroupState(
        src=src,
        group=desc.group_id,
        state=state,
        generation=None,
        coordinator=coordinator,
        leader=None,
        protocol=desc.partition_assignor or None,
        members=members,
        group_type=group_type.lower() if group_type else None,
    )
    return key, event
