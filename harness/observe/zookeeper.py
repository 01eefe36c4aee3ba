"""The ZooKeeper observer: kazoo watches on ZooKeeper-mode Kafka's znodes, turned into history events.

Owns one kazoo session and one worker thread. Watches: `/controller` and `/controller_epoch`
(-> `controller`), `/brokers/ids` children (-> `broker.up` / `broker.down` per id),
`/brokers/topics` children, each topic's assignment and `partitions` children, and every
`partitions/<p>/state` (-> `partition.state`), including topics and partitions created later,
and `/isr_change_notification` (a trigger to re-read the partitions it names). Znodes that do
not exist yet are watched with `exists`, so their creation is seen.

Events carry `src` ("zk" unless told otherwise) and `wall`, the epoch milliseconds at which the
watch fired (for the initial read and resyncs: when the data was read), never earlier than the
previous event's. The data is read after the watch fired, so a state stamped at its watch may show a later
write (under load, 50 state reads queued behind one burst of watches took 0.4 s): `partition.state` therefore
carries the znode's modification zxid and `broker.up` the registration's creation zxid, ZooKeeper's own order of
the two (`facts.partitions.PartitionTimeline.precedes`). The deletion of
`/controller` is emitted as `controller` broker -1 stamped with the deletion watch itself, even
when a new controller exists by the time the znode is read (that one is stamped at the read). Only changes are
emitted: an event identical to the last one for the same key is dropped. When the session is
lost the observer emits `observer.error`, and when a session is back (a new one after expiry,
or the same one after a disconnect, since kazoo drops watches on every disconnect) it re-reads
everything and emits the differences, so no final state is missed.

Threading: watch callbacks and kazoo's state listener only enqueue work; every read and every
call of `sink` happens on the observer's own worker thread, one at a time, in order. The sink
must therefore accept calls from a thread that is not the caller of `start()`; `HistoryWriter`
is thread-safe. `stop()` joins that thread and stops and closes the kazoo client (its
connection and callback threads included), so nothing keeps running.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, WatchedEvent, ZnodeStat

from harness.errors import HarnessTimeout
from harness.history.events import BrokerDown, BrokerUp, Controller, HistoryEvent, ObserverError, PartitionState
from harness.history.jsonl import EventSink
from harness.observe.base import StartedByWith
from harness.zk import znodes as z
from harness.zk.workqueue import CoalescingWorker

log = logging.getLogger(__name__)

Key = tuple[Any, ...]
Watcher = Callable[[WatchedEvent], None]


def _now_ms() -> float:
    return time.time() * 1000.0


class ZooKeeperObserver(StartedByWith):
    """Watches a ZooKeeper-mode Kafka cluster's znodes and sends events to `sink` (an `Observer`)."""

    def __init__(
        self,
        hosts: str,
        sink: EventSink,
        *,
        chroot: str | None = None,
        name: str = "zk",
        session_timeout_s: float = 10.0,
        connect_timeout_s: float = 30.0,
        src: str = "zk",
    ) -> None:
        self.hosts = hosts + (("/" + chroot.strip("/")) if chroot and chroot.strip("/") else "")
        self.name = name
        self.src = src
        self.session_timeout_s = session_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._sink = sink
        self._client: KazooClient | None = None
        self._worker = CoalescingWorker(f"zk-observer-{name}", self._handle)
        self._synced = threading.Event()
        self._had_outage = False
        self._watchers: dict[Key, Watcher] = {}
        self.sink_errors = 0
        self._last_wall = 0.0
        # What was read last (for diffs) and what was emitted last (for dedupe).
        self._controller: tuple[int, int | None] | None = None
        self._brokers: set[int] = set()
        self._topics: set[str] = set()
        self._assignment: dict[str, z.TopicAssignment] = {}
        self._partitions: dict[str, set[int]] = {}
        self._states: dict[tuple[str, int], tuple[z.PartitionState, int]] = {}
        """Each partition's state as last read, with the znode's modification zxid."""
        self._emitted: dict[tuple[str, int], PartitionState] = {}
        self._isr_seen: set[str] = set()

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def session_id(self) -> int | None:
        """The current ZooKeeper session id (None before start / after stop)."""
        client = self._client
        return client.client_id[0] if client is not None and client.client_id else None

    @property
    def client(self) -> KazooClient | None:
        """The underlying kazoo client (for tests; do not add watches to it)."""
        return self._client

    def start(self) -> None:
        """Connect, read the whole state (emitting it), and keep watching. Idempotent."""
        if self._client is not None:
            return
        self._synced.clear()
        self._had_outage = False
        client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_timeout_s,
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 2, "max_delay": 1.0},
        )
        client.add_listener(self._on_state)
        try:
            client.start(timeout=self.connect_timeout_s)
        except KazooTimeoutError as exc:
            self._close_client(client)
            raise HarnessTimeout(
                f"observer {self.name!r} to connect to ZooKeeper at {self.hosts}",
                self.connect_timeout_s,
                last_seen=str(client.state),
                hint="is the ensemble running and reachable (connect string, chroot, proxies)?",
            ) from exc
        self._client = client
        self._worker.start()
        self._worker.put(("resync",), _now_ms())
        if not self._synced.wait(self.connect_timeout_s):
            last = self._worker.describe()
            self.stop()
            raise HarnessTimeout(f"observer {self.name!r} to read the initial state", self.connect_timeout_s, last)

    def stop(self) -> None:
        """Stop watching; joins the worker and stops/closes the kazoo client. Idempotent."""
        self._worker.request_stop()
        client, self._client = self._client, None
        if client is not None:  # closing the client also fails a read the worker may be blocked in
            client.remove_listener(self._on_state)
            self._close_client(client)
        self._worker.join()

    @staticmethod
    def _close_client(client: KazooClient) -> None:
        try:
            client.stop()
        finally:
            client.close()

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """True once no work is queued or running (handy in tests and benchmarks)."""
        return self._worker.wait_idle(timeout_s)

    # ---- plumbing --------------------------------------------------------------------------------
    def _watcher(self, key: Key) -> Watcher:
        """One callback object per key, so kazoo (which keeps a set per path) never doubles it."""
        w = self._watchers.get(key)
        if w is None:

            def w(event: WatchedEvent, key: Key = key) -> None:
                if event.type == EventType.NONE:  # a connection change: a resync follows
                    return
                if key == ("controller",) and event.type == EventType.DELETED:
                    key = ("controller-gone",)  # certain: no controller at this instant
                self._worker.put(key, _now_ms())

            self._watchers[key] = w
        return w

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._had_outage = True
            self._worker.put(("lost",), _now_ms())
        elif state == KazooState.SUSPENDED:
            self._had_outage = True
        elif state == KazooState.CONNECTED and self._had_outage:
            self._had_outage = False
            self._worker.put(("resync",), _now_ms())

    def _handle(self, key: Hashable, wall: float) -> None:
        assert isinstance(key, tuple)
        try:
            self._dispatch(key, wall)
        except (KazooException, KazooTimeoutError) as exc:
            # Connection trouble: a resync follows when the session is back.
            log.info("observer %s: %s failed (%s); waiting for a resync", self.name, key, exc)
        except z.ZnodeDecodeError as exc:
            self._emit(ObserverError(src=self.src, wall=_now_ms(), observer=self.name, error=str(exc)))
        except Exception as exc:  # never let the watcher die silently
            log.exception("observer %s: %s failed", self.name, key)
            self._emit(ObserverError(src=self.src, wall=_now_ms(), observer=self.name, error=f"{key}: {exc!r}"))

    def _emit(self, event: HistoryEvent) -> None:
        # An event emitted after another reports a state at least as new: never stamp it earlier.
        wall = max(event.wall if event.wall is not None else 0.0, self._last_wall)
        self._last_wall = wall
        event = dataclasses.replace(event, src=self.src, wall=round(wall, 3))
        try:
            self._sink(event)
        except Exception:
            self.sink_errors += 1
            log.exception("observer %s: sink rejected %r", self.name, event)

    def _op_timeout(self) -> float:
        return max(2.0, self.session_timeout_s)

    def _get(self, path: str, key: Key) -> bytes | None:
        """Data of `path` with a watch; None (and an exists-watch for its creation) when absent."""
        got = self._get_with_stat(path, key)
        return got[0] if got is not None else None

    def _get_with_stat(self, path: str, key: Key) -> tuple[bytes, ZnodeStat] | None:
        client = self._client
        assert client is not None
        watch = self._watcher(key)
        while True:
            try:
                data, stat = client.get_async(path, watch=watch).get(timeout=self._op_timeout())
                return (bytes(data) if data is not None else b""), stat
            except NoNodeError:
                if client.exists_async(path, watch=watch).get(timeout=self._op_timeout()) is None:
                    return None

    def _children(self, path: str, key: Key) -> list[str] | None:
        client = self._client
        assert client is not None
        watch = self._watcher(key)
        while True:
            try:
                return list(client.get_children_async(path, watch=watch).get(timeout=self._op_timeout()))
            except NoNodeError:
                if client.exists_async(path, watch=watch).get(timeout=self._op_timeout()) is None:
                    return None

    # ---- the znodes --------------------------------------------------------------------------------
    def _dispatch(self, key: Key, wall: float) -> None:
        kind = key[0]
        if kind in ("controller", "epoch"):
            self._refresh_controller(wall)
        elif kind == "controller-gone":
            # The deletion itself is the fact; stamp it with the watch, then read what is there now.
            if self._controller is not None and self._controller[0] != -1:
                self._controller = (-1, self._controller[1])
                self._emit(Controller(src=self.src, wall=wall, broker=-1, epoch=self._controller[1]))
            self._refresh_controller(None)
        elif kind == "ids":
            self._refresh_brokers(wall)
        elif kind == "topics":
            self._refresh_topics(wall, full=False)
        elif kind == "topic" and key[1] in self._topics:
            self._refresh_topic(key[1], wall)
        elif kind == "partitions" and key[1] in self._topics:
            self._refresh_partitions(key[1], wall, full=False)
        elif kind == "state" and key[1] in self._topics:
            self._refresh_states(key[1], [key[2]], wall)
        elif kind == "isr":
            self._refresh_isr(wall)
        elif kind == "lost":
            self._emit(ObserverError(
                src=self.src, wall=wall, observer=self.name,
                error="ZooKeeper session expired; re-reading all state once a new session is up",
            ))
        elif kind == "resync":
            self._resync(_now_ms())

    def _resync(self, wall: float) -> None:
        self._refresh_controller(wall)
        self._refresh_brokers(wall)
        self._refresh_topics(wall, full=True)
        self._refresh_isr(wall)
        self._synced.set()

    def _refresh_controller(self, wall: float | None) -> None:
        """Emit `controller` if (broker, epoch) changed; `wall` None = stamp when the read completed."""
        # A controller election changes both znodes in one transaction: read them as one snapshot
        # (re-read /controller after the epoch; retry if it moved in between), so no torn pair
        # such as (new broker, old epoch) is ever reported.
        client = self._client
        assert client is not None
        for _ in range(10):
            first = self._get_with_stat(z.CONTROLLER_PATH, ("controller",))
            epoch_data = self._get(z.CONTROLLER_EPOCH_PATH, ("epoch",))
            again = client.exists_async(z.CONTROLLER_PATH).get(timeout=self._op_timeout())
            if (first[1].czxid if first else None) == (again.czxid if again else None):
                break
        data = first[0] if first is not None else None
        broker = z.ControllerRegistration.decode(data).broker_id if data is not None else -1
        epoch = z.decode_controller_epoch(epoch_data) if epoch_data is not None else None
        if (broker, epoch) != self._controller:
            self._controller = (broker, epoch)
            self._emit(Controller(src=self.src, wall=_now_ms() if wall is None else wall, broker=broker, epoch=epoch))

    def _refresh_brokers(self, wall: float) -> None:
        names = self._children(z.BROKER_IDS_PATH, ("ids",)) or []
        now = {int(n) for n in names if n.lstrip("-").isdigit()}
        for b in sorted(self._brokers - now):
            self._emit(BrokerDown(src=self.src, wall=wall, broker=b))
        for b in sorted(now - self._brokers):
            self._emit(BrokerUp(src=self.src, wall=wall, broker=b, zxid=self._created(z.broker_path(b))))
        self._brokers = now

    def _created(self, path: str) -> int | None:
        """The creation zxid of `path` (a broker registration's is Kafka's broker epoch), None once it is gone."""
        client = self._client
        assert client is not None
        stat = client.exists_async(path).get(timeout=self._op_timeout())
        return int(stat.czxid) if stat is not None else None

    def _refresh_topics(self, wall: float, *, full: bool) -> None:
        now = set(self._children(z.TOPICS_PATH, ("topics",)) or [])
        for gone in self._topics - now:
            self._forget_topic(gone)
        added = now - self._topics
        self._topics = now
        for t in sorted(now if full else added):
            self._refresh_topic(t, wall)
            self._refresh_partitions(t, wall, full=True)

    def _forget_topic(self, topic: str) -> None:
        self._assignment.pop(topic, None)
        for p in self._partitions.pop(topic, set()):
            self._states.pop((topic, p), None)
            self._emitted.pop((topic, p), None)
        for key in [k for k in self._watchers if len(k) > 1 and k[1] == topic]:
            del self._watchers[key]

    def _refresh_topic(self, topic: str, wall: float) -> None:
        data = self._get(z.topic_path(topic), ("topic", topic))
        if data is None:
            return
        assignment = z.TopicAssignment.decode(topic, data)
        if self._assignment.get(topic) != assignment:
            self._assignment[topic] = assignment
            for p in sorted(self._partitions.get(topic, ())):
                self._maybe_emit_partition(topic, p, wall)

    def _refresh_partitions(self, topic: str, wall: float, *, full: bool) -> None:
        names = self._children(z.partitions_path(topic), ("partitions", topic)) or []
        now = {int(n) for n in names if n.isdigit()}
        known = self._partitions.get(topic, set())
        for p in known - now:
            self._states.pop((topic, p), None)
            self._emitted.pop((topic, p), None)
        self._partitions[topic] = now
        self._refresh_states(topic, sorted(now if full else now - known), wall)

    def _refresh_states(self, topic: str, partitions: list[int], wall: float) -> None:
        """Read several partition states at once (pipelined), each with its watch."""
        client = self._client
        assert client is not None
        asyncs = [
            (p, client.get_async(z.partition_state_path(topic, p), watch=self._watcher(("state", topic, p))))
            for p in partitions
        ]
        for p, result in asyncs:
            try:
                data, stat = result.get(timeout=self._op_timeout())
            except NoNodeError:
                got = self._get_with_stat(z.partition_state_path(topic, p), ("state", topic, p))
                if got is None:
                    continue
                data, stat = got
            path = z.partition_state_path(topic, p)
            try:
                self._states[(topic, p)] = z.PartitionState.decode(bytes(data), what=path), int(stat.mzxid)
            except z.ZnodeDecodeError as exc:
                self._emit(ObserverError(src=self.src, wall=_now_ms(), observer=self.name, error=str(exc)))
                continue
            self._maybe_emit_partition(topic, p, wall)

    def _maybe_emit_partition(self, topic: str, partition: int, wall: float) -> None:
        read = self._states.get((topic, partition))
        if read is None:
            return
        state, zxid = read
        assignment = self._assignment.get(topic)
        replicas = tuple(assignment.replicas(partition)) if assignment is not None else None
        recovering = state.leader_recovery_state != z.LEADER_RECOVERED
        signature = PartitionState(
            src=self.src, topic=topic, partition=partition, leader=state.leader, leader_epoch=state.leader_epoch,
            isr=tuple(state.isr), replicas=replicas, controller_epoch=state.controller_epoch,
            leader_recovery_state=state.leader_recovery_state if recovering else None,
        )
        if self._emitted.get((topic, partition)) != signature:
            self._emitted[(topic, partition)] = signature
            self._emit(dataclasses.replace(signature, wall=wall, zxid=zxid))

    def _refresh_isr(self, wall: float) -> None:
        names = set(self._children(z.ISR_CHANGE_NOTIFICATION_PATH, ("isr",)) or [])
        client = self._client
        assert client is not None
        for name in sorted(names - self._isr_seen):
            try:
                data, _ = client.get_async(f"{z.ISR_CHANGE_NOTIFICATION_PATH}/{name}").get(timeout=self._op_timeout())
            except NoNodeError:
                continue  # the controller already processed and deleted it
            note = z.IsrChangeNotification.decode(bytes(data))
            by_topic: dict[str, list[int]] = {}
            for t, p in note.partitions:
                if t in self._topics:
                    by_topic.setdefault(t, []).append(p)
            for t, ps in by_topic.items():
                self._refresh_states(t, sorted(set(ps)), wall)
        self._isr_seen = names
