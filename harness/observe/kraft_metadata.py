"""The KRaft metadata observer: partition states and broker registrations, as the brokers' metadata caches
report them, for clusters without ZooKeeper (Apache Kafka 4.x).

Owns `KraftMetadataObserver`: one thread that, every `interval_s`, asks one broker (its EXTERNAL listener,
reached directly, through `quorum.NodeConnection`) for DescribeCluster (v2 with include_fenced_brokers,
KIP-1073, Kafka 4.0+; older versions list only unfenced brokers) and DescribeTopicPartitions for every
topic (an empty topic list; internal topics included; the cursor is followed, 2000 partitions a page).
It asks the broker that answered last; a broker that fails is dropped for this call and the next one is
asked (a dead or paused broker costs one `timeout_s`). A broker cut off from the controllers but reachable
keeps answering from its frozen cache: while it is the one asked, later changes go unseen.

Emitted (src = the observer's name, `wall` stamped when the answer arrived), only on change:
- `broker.up` {broker, host, port} when a broker is registered and unfenced, `broker.down` {broker} when
  it becomes fenced or its registration vanishes (so "up" means registered and unfenced, as the liveness
  checks read it); with fenced brokers listed, also `broker.fenced` {broker} before its `broker.down` and
  `broker.unfenced` {broker} before its `broker.up`;
- `partition.state` {topic, partition, leader (-1 = none), leader_epoch, isr, replicas, controller_epoch:
  null, elr, last_known_elr (eligible_leader_replicas / last_known_elr as the broker sends them, null when
  it sends null), error (Kafka's error name or null), leader_fenced: true when the answering broker listed the
  leader as fenced in its DescribeCluster answers just before and just after (asked again only then), so
  the metadata image the partition was read from had it fenced too (KAFKA-19522: Kafka 4.0 elected a fenced
  last known leader)}.

Ordering partition states: a broker's metadata cache applies the metadata log in order, but caches lag
one another, so a state with a lower leader_epoch than the one last emitted for that partition is never
emitted (counted in `stale_skipped`). States with the same leader_epoch (ISR and ELR changes bump only the
partition epoch, which this API does not return) are taken in the order they are read: the observer keeps
asking the same broker while it answers, and one broker's answers never go back; only when it switches
broker after a failure may a lagging cache show a same-epoch ISR step back once. Partitions are keyed by
topic id: a topic deleted and created again starts afresh, and the old id's answers are then ignored;
a deleted topic emits nothing. A failing call emits `observer.error` {observer, call, error,
detail, node} once per (broker, call, kind of failure). DescribeTopicPartitions (v0) came with Kafka 3.8
(KIP-966); a broker that does not serve it (KRaft 3.3-3.7) is asked Metadata (v10-v12, every topic) instead,
which gives the same leader, leader epoch, ISR, replicas and topic id, and no ELR (`elr: null`, as a version
without it). Checked against Apache Kafka 3.6.1 (Metadata), 4.1.2 and 4.4.0. `stop()` joins the thread and
closes every socket.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka.protocol.admin import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.errors import HarnessError, TeardownError
from harness.history.events import (
    BrokerDown,
    BrokerFenced,
    BrokerUnfenced,
    BrokerUp,
    ObserverError,
)
from harness.history.events import PartitionState as PartitionStateEvent
from harness.history.jsonl import EventSink
from harness.observe.base import OrderedEmitter, StartedByWith
from harness.observe.kafka_wire import NodeConnection, Unanswered, error_name

log = logging.getLogger(__name__)

DESCRIBE_CLUSTER_MAX = 2
DESCRIBE_TOPIC_PARTITIONS_MAX = 0
METADATA_MAX = 12
"""Metadata v10+ carries topic ids (Kafka 2.8+); v12 is the newest this module was checked against."""
METADATA_MIN = 10
PAGE_PARTITIONS = 2000
_MAX_PAGES = 10_000
T = TypeVar("T")


class KraftObserverError(HarnessError):
    """The observer was misconfigured (bad address, interval or timeout) or started twice."""


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition as a broker's DescribeTopicPartitions answer describes it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None
    error: str | None

    def event(self, src: str, wall: float | None, topic: str, partition: int, **extra: Any) -> PartitionStateEvent:
        """This state as a `partition.state` event of `src` (`extra`: the fields that source adds)."""
        return PartitionStateEvent(
            src=src, wall=wall, topic=topic, partition=partition, leader=self.leader, leader_epoch=self.leader_epoch,
            isr=tuple(self.isr), replicas=tuple(self.replicas), controller_epoch=None,
            elr=None if self.elr is None else tuple(self.elr),
            last_known_elr=None if self.last_known_elr is None else tuple(self.last_known_elr), **extra)


@dataclass(frozen=True, slots=True)
class BrokerState:
    """One broker registration as DescribeCluster lists it."""

    host: str
    port: int
    fenced: bool


@dataclass(frozen=True, slots=True)
class Topics:
    """One full DescribeTopicPartitions walk: (topic, topic id, partition, state, wall of its page)."""

    partitions: list[tuple[str, str, int, PartitionState, float]]


@dataclass(frozen=True, slots=True)
class Cluster:
    """One DescribeCluster answer: the brokers, whether fenced ones are listed, and when it arrived."""

    brokers: dict[int, BrokerState]
    fenced_listed: bool
    wall: float


def _ids(values: Any) -> tuple[int, ...] | None:
    return None if values is None else tuple(int(v) for v in values)


def decode_partitions(response: Any, wall: float) -> list[tuple[str, str, int, PartitionState, float]]:
    """The partitions of one decoded DescribeTopicPartitions page (topics with an error are left out)."""
    out: list[tuple[str, str, int, PartitionState, float]] = []
    for topic in response.topics:
        if topic.error_code or topic.name is None:
            continue
        for p in topic.partitions:
            state = PartitionState(
                leader=int(p.leader_id) if int(p.leader_id) >= 0 else -1, leader_epoch=int(p.leader_epoch),
                isr=_ids(p.isr_nodes) or (), replicas=_ids(p.replica_nodes) or (),
                elr=_ids(p.eligible_leader_replicas), last_known_elr=_ids(p.last_known_elr),
                error=error_name(int(p.error_code)))
            out.append((str(topic.name), str(topic.topic_id), int(p.partition_index), state, wall))
    return out


def decode_metadata(response: Any, wall: float) -> list[tuple[str, str, int, PartitionState, float]]:
    """The partitions of a decoded Metadata answer (v10+), as `decode_partitions` gives them; no ELR."""
    out: list[tuple[str, str, int, PartitionState, float]] = []
    for topic in response.topics:
        if topic.error_code or topic.name is None:
            continue
        for p in topic.partitions:
            state = PartitionState(
                leader=int(p.leader_id) if int(p.leader_id) >= 0 else -1, leader_epoch=int(p.leader_epoch),
                isr=_ids(p.isr_nodes) or (), replicas=_ids(p.replica_nodes) or (), elr=None, last_known_elr=None,
                error=error_name(int(p.error_code)))
            out.append((str(topic.name), str(topic.topic_id), int(p.partition_index), state, wall))
    return out


def decode_cluster(node: int, response: Any, version: int, wall: float) -> Cluster:
    """The brokers of a decoded DescribeCluster answer; `Unanswered` for a top-level error."""
    if response.error_code:
        raise Unanswered(node, str(error_name(int(response.error_code))), str(response.error_message or ""))
    fenced_listed = version >= 2
    brokers = {int(b.broker_id): BrokerState(str(b.host), int(b.port), bool(fenced_listed and b.is_fenced))
               for b in response.brokers}
    return Cluster(brokers, fenced_listed, wall)


class KraftMetadataObserver(StartedByWith):
    """Polls one broker at a time for partitions and registrations; an `Observer` and a context manager.

    `brokers` maps broker id -> direct "host:port" of its EXTERNAL listener.
    """

    def __init__(self, brokers: Mapping[int, str], sink: EventSink, *, interval_s: float = 0.2,
                 timeout_s: float = 1.0, name: str = "kraft", security: ClientSecurity = PLAINTEXT) -> None:
        if not brokers:
            raise KraftObserverError(f"KraftMetadataObserver({name!r}): no broker addresses given")
        if not interval_s > 0 or not timeout_s > 0:
            raise KraftObserverError(f"KraftMetadataObserver({name!r}): interval_s={interval_s!r} and "
                                     f"timeout_s={timeout_s!r} must be > 0")
        self.name = name
        self.interval_s, self.timeout_s = interval_s, timeout_s
        self._emit = OrderedEmitter(sink, name)
        self._conns = {b: NodeConnection(b, a, timeout_s=timeout_s, client_id=f"observer-{name}",
                                        security=security)
                       for b, a in sorted(brokers.items())}
        self._preferred: int | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._errors_seen: set[tuple[int, str, str]] = set()
        self._brokers: dict[int, BrokerState] = {}
        self._partitions: dict[tuple[str, str, int], PartitionState] = {}
        self._topic_ids: dict[str, str] = {}
        self._retired: set[tuple[str, str]] = set()
        self.answered_by: int | None = None
        self.cycles = 0
        self.stale_skipped = 0

    def start(self) -> None:
        if self._thread is not None:
            raise KraftObserverError(f"KraftMetadataObserver({self.name!r}): start() called twice")
        self._stop.clear()
        for conn in self._conns.values():
            conn.rearm()
        self._thread = threading.Thread(target=self._run, name=f"observer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling: joins the thread, closes every socket (idempotent)."""
        self._stop.set()
        for conn in self._conns.values():
            conn.close(wake=True)  # a thread waiting on a paused broker's answer returns now
        failures: list[tuple[str, BaseException]] = []
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.timeout_s * 3 + self.interval_s + 2.0)
            if thread.is_alive():
                failures.append((f"KraftMetadataObserver({self.name!r}): join", TimeoutError("poll thread alive")))
        for conn in self._conns.values():
            conn.close()  # never raises
        if self._failure is not None:
            failures.append((f"KraftMetadataObserver({self.name!r}): poll thread", self._failure))
            self._failure = None
        if failures:
            raise TeardownError(failures)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                self.poll_once()
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))
        except BaseException as exc:
            self._failure = exc
        finally:
            for conn in self._conns.values():
                conn.close()

    # -- one cycle -----------------------------------------------------------------------------
    def poll_once(self) -> None:
        """Ask for the cluster, then the partitions, and emit what changed (failures are recorded)."""
        cluster = self._ask("describe_cluster", self._describe_cluster)
        if cluster is not None:
            self._update_brokers(cluster)
        topics = self._ask("describe_topic_partitions", self._describe_topics)
        if topics is not None:
            self._update_partitions(topics, self._fenced_leaders(cluster, topics))
        self.cycles += 1

    def _fenced_leaders(self, before: Cluster | None, topics: Topics) -> frozenset[int]:
        """Leaders of `topics` that the broker listed as fenced just before it answered them and again just after
        (asked once more only when there is one): an image in between had them fenced too. Any other view of a
        fenced leader may be a race with the batch that unfenced or fenced it."""
        if before is None or not before.fenced_listed:
            return frozenset()
        leaders = {s.leader for *_x, s, _w in topics.partitions if s.leader >= 0}
        suspects = {b for b in leaders if before.brokers.get(b) is not None and before.brokers[b].fenced}
        if not suspects or self.answered_by is None:
            return frozenset()
        try:
            after = self._describe_cluster(self._conns[self.answered_by])
        except Unanswered:
            return frozenset()
        return frozenset(b for b in suspects if after.brokers.get(b) is not None and after.brokers[b].fenced)

    def _ask(self, call: str, fn: Callable[[NodeConnection], T]) -> T | None:
        """`fn`'s answer from the broker that answered last, else from the next one that answers."""
        order = sorted(self._conns, key=lambda b: (b != self._preferred, b))
        for broker in order:
            if self._stop.is_set():
                return None
            try:
                answer = fn(self._conns[broker])
            except Unanswered as exc:
                log.debug("observer %s: %s: %s", self.name, call, exc)
                self._failed(broker, call, exc)
                continue
            self._preferred = self.answered_by = broker
            return answer
        return None

    def _describe_cluster(self, conn: NodeConnection) -> Cluster:
        def build(version: int) -> Any:  # fields a version lacks are left out of its encoding
            return DescribeClusterRequest(version=version, include_cluster_authorized_operations=False,
                                          endpoint_type=1, include_fenced_brokers=True)

        response = conn.call(DescribeClusterRequest, DescribeClusterResponse, DESCRIBE_CLUSTER_MAX, build)
        return decode_cluster(conn.node, response, int(response.version), time.time() * 1000.0)

    def _describe_topics(self, conn: NodeConnection) -> Topics:
        if conn.versions and int(DescribeTopicPartitionsRequest.API_KEY) not in conn.versions:
            return self._metadata_topics(conn)  # the versions of its last connection: a broker before 3.8
        try:
            return self._paged_topics(conn)
        except Unanswered as exc:
            if exc.kind != "UnsupportedVersion" or int(DescribeTopicPartitionsRequest.API_KEY) in conn.versions:
                raise
        return self._metadata_topics(conn)

    def _paged_topics(self, conn: NodeConnection) -> Topics:
        found: list[tuple[str, str, int, PartitionState, float]] = []
        cursor: tuple[str, int] | None = None
        for _ in range(_MAX_PAGES):
            def build(version: int, at: tuple[str, int] | None = cursor) -> Any:
                mark = None if at is None else DescribeTopicPartitionsRequest.Cursor(
                    topic_name=at[0], partition_index=at[1])
                return DescribeTopicPartitionsRequest(version=version, topics=[],
                                                      response_partition_limit=PAGE_PARTITIONS, cursor=mark)

            response = conn.call(DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
                                 DESCRIBE_TOPIC_PARTITIONS_MAX, build)
            found += decode_partitions(response, time.time() * 1000.0)
            nxt = response.next_cursor
            if nxt is None:
                return Topics(found)
            following = (str(nxt.topic_name), int(nxt.partition_index))
            if following == cursor:
                raise Unanswered(conn.node, "BadAnswer", f"DescribeTopicPartitions cursor stuck at {cursor}")
            cursor = following
        raise Unanswered(conn.node, "BadAnswer", f"DescribeTopicPartitions: more than {_MAX_PAGES} pages")

    def _metadata_topics(self, conn: NodeConnection) -> Topics:
        """Every topic's partitions from a Metadata answer (brokers before Kafka 3.8)."""
        def build(version: int) -> Any:
            if version < METADATA_MIN:
                raise Unanswered(conn.node, "UnsupportedVersion", f"{conn.address} serves Metadata up to v{version}; "
                                 f"topic ids need v{METADATA_MIN} (Kafka 2.8+)")
            return MetadataRequest(version=version, topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)

        response = conn.call(MetadataRequest, MetadataResponse, METADATA_MAX, build)
        return Topics(decode_metadata(response, time.time() * 1000.0))

    def _update_brokers(self, cluster: Cluster) -> None:
        previous, current = self._brokers, cluster.brokers
        for broker in sorted(set(previous) | set(current)):
            old, new = previous.get(broker), current.get(broker)
            was_up = old is not None and not old.fenced
            is_up = new is not None and not new.fenced
            if new is not None and new.fenced and (old is None or not old.fenced):
                self._emit(BrokerFenced(src=self.name, wall=cluster.wall, broker=broker))
            if was_up and not is_up:
                self._emit(BrokerDown(src=self.name, wall=cluster.wall, broker=broker))
            if new is not None and not new.fenced and old is not None and old.fenced:
                self._emit(BrokerUnfenced(src=self.name, wall=cluster.wall, broker=broker))
            if is_up and not was_up and new is not None:
                self._emit(BrokerUp(src=self.name, wall=cluster.wall, broker=broker, host=new.host, port=new.port))
        self._brokers = dict(current)

    def _update_partitions(self, topics: Topics, fenced_leaders: frozenset[int] = frozenset()) -> None:
        for topic, topic_id, partition, state, wall in topics.partitions:
            if (topic, topic_id) in self._retired:
                continue  # a lagging cache still shows a topic that was deleted and created again
            known = self._topic_ids.get(topic)
            if known != topic_id:
                if known is not None:
                    self._retired.add((topic, known))
                self._topic_ids[topic] = topic_id
            key = (topic, topic_id, partition)
            last = self._partitions.get(key)
            if last == state:
                continue
            if last is not None and state.leader_epoch < last.leader_epoch:
                self.stale_skipped += 1
                continue
            self._partitions[key] = state
            self._emit(state.event(self.name, wall, topic, partition, error=state.error,
                                   leader_fenced=True if state.leader in fenced_leaders else None))

    def _failed(self, broker: int, call: str, exc: Unanswered) -> None:
        if (broker, call, exc.kind) in self._errors_seen or self._stop.is_set():
            return
        self._errors_seen.add((broker, call, exc.kind))
        self._emit(ObserverError(src=self.name, wall=time.time() * 1000.0, observer=self.name, call=call,
                                 error=f"{call}: {exc.kind}",
                                 detail=f"broker {broker} at {self._conns[broker].address}: {exc.detail}",
                                 node=broker))

    @property
    def sink_errors(self) -> int:
        """Events the sink refused (each logged)."""
        return self._emit.sink_errors
