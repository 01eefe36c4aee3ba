"""The per-broker Metadata observer: asks EACH broker on its own which controller it obeys.

Owns one poll thread per broker. Every `interval` seconds a thread sends a Kafka MetadataRequest for no topics
(v4, or the newest below it both sides have; `allow_auto_topic_creation` false) to its broker's client address, over
its own `kafka_wire.NodeConnection` (TLS and SASL on a secured cluster) with short socket timeouts, and emits
`controller.view` {broker: the broker that answered, controller: the controller id its answer names (-1 = none)}
(src `metadata`, `wall` stamped when the answer arrived) whenever that broker's answer differs from its previous
one. A broker that does not answer (killed, paused, link cut) emits nothing; since every broker has its own thread
and timeouts, it never slows the polling of the others. The connection is dropped after any failure and reopened
on the next poll.

Works against Apache Kafka too (Metadata v4 is served by Kafka 1.0 to 4.x, and carries the
controller id since v1). `stop()` joins every thread and closes every socket.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.errors import HarnessError, TeardownError
from harness.history.events import ControllerView
from harness.history.jsonl import EventSink
from harness.observe.base import StartedByWith
from harness.observe.kafka_wire import NodeConnection, Unanswered, WireError

log = logging.getLogger(__name__)

METADATA_VERSION = 4


class MetadataObserverError(HarnessError):
    """The observer was misconfigured (bad address or interval) or started twice."""


class _BrokerPoller:
    """One broker's connection (`kafka_wire.NodeConnection`, so TLS and SASL where the cluster is secured) and last
    answer; used only by its own thread."""

    def __init__(self, conn: NodeConnection) -> None:
        self.conn = conn
        self.broker = conn.node
        self.last: int | None = None
        self.answers = 0

    def close(self) -> None:
        self.conn.close()

    def ask(self) -> int:
        """The controller id the broker's Metadata answer names; raises `Unanswered`."""
        controller = controller_named(self.conn)
        self.answers += 1
        return controller


def controller_named(conn: NodeConnection) -> int:
    """The controller id `conn`'s broker names in its Metadata answer for no topics (-1: none); raises `Unanswered`.
    A ZooKeeper-mode broker names the ZooKeeper controller it last heard from; once it follows a KRaft controller
    (a migration's dual-write), a random live broker on every answer (`KafkaApis`, `KRaftCachedControllerId`)."""
    response = conn.call(MetadataRequest, MetadataResponse, METADATA_VERSION, lambda v: MetadataRequest(
        version=v, topics=[], allow_auto_topic_creation=False))
    controller = getattr(response, "controller_id", None)
    return int(controller) if controller is not None else -1


class MetadataObserver(StartedByWith):
    """Polls every broker's Metadata on its own thread; an `Observer` and a context manager.

    `addresses` maps broker id -> its client address "host:port" (through the `client->j` proxy, so
    a cut client link silences only that broker).
    """

    def __init__(
        self,
        addresses: Mapping[int, str],
        sink: EventSink,
        *,
        interval: float = 0.25,
        timeout_s: float = 0.5,
        name: str = "metadata",
        src: str = "metadata",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        if not addresses:
            raise MetadataObserverError(f"MetadataObserver({name!r}): no broker addresses given")
        if not interval > 0 or not timeout_s > 0:
            raise MetadataObserverError(
                f"MetadataObserver({name!r}): interval={interval!r} and timeout_s={timeout_s!r} must be > 0")
        self.name = name
        self.src = src
        self.interval = interval
        self.timeout_s = timeout_s
        self._sink = sink
        try:
            self._pollers = [_BrokerPoller(NodeConnection(b, a, timeout_s=timeout_s, client_id=f"observer-{name}-{b}",
                                                          security=security))
                             for b, a in sorted(addresses.items())]
        except WireError as exc:
            raise MetadataObserverError(f"MetadataObserver: {exc}") from exc
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._emit_lock = threading.Lock()
        self._last_wall = 0.0
        self.sink_errors = 0

    @staticmethod
    def from_bootstrap(bootstrap_servers: str, broker_ids: list[int], sink: EventSink,
                       **kwargs: Any) -> MetadataObserver:
        """Pair a bootstrap list with broker ids in order (the backends list broker 1..N's proxies in order)."""
        addresses = [a for a in bootstrap_servers.split(",") if a.strip()]
        if len(addresses) != len(broker_ids):
            raise MetadataObserverError(
                f"MetadataObserver: {len(addresses)} bootstrap addresses ({bootstrap_servers!r}) "
                f"for {len(broker_ids)} brokers {broker_ids}")
        return MetadataObserver(dict(zip(broker_ids, addresses, strict=True)), sink, **kwargs)

    @property
    def answers(self) -> dict[int, int]:
        """How many answers each broker gave so far (for tests)."""
        return {p.broker: p.answers for p in self._pollers}

    def start(self) -> None:
        if self._threads:
            raise MetadataObserverError(f"MetadataObserver({self.name!r}): start() called twice")
        self._stop.clear()
        for poller in self._pollers:
            thread = threading.Thread(target=self._run, args=(poller,), daemon=True,
                                      name=f"observer-{self.name}-{poller.broker}")
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop polling: joins every thread, closes every socket (idempotent)."""
        self._stop.set()
        failures: list[tuple[str, BaseException]] = []
        for thread in self._threads:
            if thread is threading.current_thread():
                continue
            thread.join(self.timeout_s * 4 + self.interval + 2.0)
            if thread.is_alive():
                failures.append((f"MetadataObserver({self.name!r}): join {thread.name}",
                                 TimeoutError("poll thread still alive")))
        self._threads = []
        for poller in self._pollers:
            try:
                poller.close()
            except Exception as exc:
                failures.append((f"MetadataObserver({self.name!r}): close broker {poller.broker}", exc))
        if failures:
            raise TeardownError(failures)

    def _run(self, poller: _BrokerPoller) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    controller = poller.ask()
                except Unanswered as exc:
                    log.debug("observer %s: %s", self.name, exc)
                else:
                    if controller != poller.last:
                        poller.last = controller
                        self._emit(poller.broker, controller)
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        finally:
            poller.close()

    def _emit(self, broker: int, controller: int) -> None:
        with self._emit_lock:  # walls never go back across this observer's events
            wall = max(time.time() * 1000.0, self._last_wall)
            self._last_wall = wall
            event = ControllerView(src=self.src, wall=round(wall, 3), broker=broker, controller=controller)
            try:
                self._sink(event)
            except Exception:
                self.sink_errors += 1
                log.exception("observer %s: sink rejected %r", self.name, event)
