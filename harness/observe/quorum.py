"""The KRaft quorum observer: asks EACH controller (voter) on its own what the metadata quorum looks like.

Owns `QuorumObserver`; it talks to each voter with `kafka_wire.NodeConnection` (shared with `kraft_metadata`).

One poll thread and one connection per voter (its CONTROLLER listener, reached directly) sends DescribeQuorum
for `__cluster_metadata`/0 every `interval_s`. A dead, paused or cut-off voter delays only its own thread; the
connection is dropped after any failure and reopened on the next poll (at most every 0.25 s). Observed answers
of Apache Kafka 4.1:
- the quorum leader: error 0, leader_id = itself, leader_epoch, high_watermark (-1 until it commits in its
  new epoch), current_voters and observers (brokers) with log end offsets (-1 for a voter that has not
  fetched from it yet); ~1.5 ms median over a kept connection, tens of ms at worst on a loaded host;
- any other voter (follower, candidate, unattached): partition error NOT_LEADER_OR_FOLLOWER with placeholders
  leader_id 0, leader_epoch 0, high watermark 0 and no replicas: no leader hint;
- a broker (not polled here) forwards the request to the active controller and returns its answer verbatim;
  with no active controller it answers REQUEST_TIMED_OUT (top level) after 60 s.

Emitted (src = the observer's name, `wall` stamped when the answer arrived, never going back):
- `quorum.state` {voter, leader (-1 = none/unknown), epoch (null when the answer has none), role (leader |
  follower: NOT_LEADER_OR_FOLLOWER, or names another leader | unknown: other errors), high_watermark (null
  unless leader, and while unknown), voters and observers [{id, log_end_offset, lag}] (lag = the leader's log
  end offset minus the replica's; null unless leader or while an offset is unknown), error (Kafka's error
  name or null)} when the voter's (role, leader, epoch, error) changes, when it answers again after failing,
  and every `sample_s` (1 s) while it answers as leader, so the high watermark's progression is in the
  history (a leader cut off from the majority must not advance it);
- `controller` {broker, epoch, source: "describe_quorum"} when an error-free answer names a leader at a
  higher epoch than any emitted so far, or a second leader at the highest epoch (the split brain the checks
  look for); a lower epoch (a zombie leader) is never emitted, only in its voter's `quorum.state`;
- `observer.error` {observer, call, error, detail, node} once per (voter, kind of failure).

Versions: DescribeQuorum v0-v2 (ApiVersions picks the highest both sides have; v0 lacks the fetch timestamps,
which are not used), so any KRaft Kafka (3.3+); checked on Apache Kafka 4.1.2 and 4.4.0. `stop()` joins every
thread and closes every socket (TeardownError if a thread does not stop).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin.cluster import DescribeQuorumRequest, DescribeQuorumResponse

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.errors import HarnessError, HarnessTimeout, TeardownError
from harness.history.events import Controller, ObserverError, QuorumReplica, QuorumState
from harness.history.jsonl import EventSink
from harness.observe.base import OrderedEmitter, StartedByWith
from harness.observe.kafka_wire import NodeConnection, Unanswered, error_name

log = logging.getLogger(__name__)

QUORUM_TOPIC = "__cluster_metadata"
DESCRIBE_QUORUM_MAX = 2
"""The newest DescribeQuorum version whose answer this module was checked against."""
SAMPLE_S = 1.0
RETRY_S = 0.25
class QuorumObserverError(HarnessError):
    """The observer was misconfigured (bad address, interval or timeout) or started twice."""


@dataclass(frozen=True, slots=True)
class QuorumView:
    """One voter's DescribeQuorum answer, decoded: replicas are (id, log end offset) pairs."""

    voter: int
    error: str | None
    leader: int
    epoch: int | None
    high_watermark: int | None
    voters: tuple[tuple[int, int], ...] = ()
    observers: tuple[tuple[int, int], ...] = ()

    @property
    def role(self) -> str:
        if self.error is None:
            return "leader" if self.leader == self.voter else "follower"
        return "follower" if self.error == "NOT_LEADER_OR_FOLLOWER" else "unknown"

    def replicas(self, which: tuple[tuple[int, int], ...]) -> tuple[QuorumReplica, ...]:
        """[{id, log_end_offset, lag}] with lag against the leader's log end offset (when the voter leads)."""
        top = dict(self.voters).get(self.leader) if self.role == "leader" else None
        return tuple(QuorumReplica(rid, leo, top - leo if top is not None and top >= 0 and leo >= 0 else None)
                     for rid, leo in which)


def decode_quorum(voter: int, response: Any) -> QuorumView:
    """The QuorumView of a decoded DescribeQuorumResponse (any version); `Unanswered` if it lacks the partition."""
    top = error_name(int(response.error_code))
    if top is not None:
        return QuorumView(voter, top, -1, None, None)
    found = [p for t in response.topics if t.topic_name == QUORUM_TOPIC for p in t.partitions
             if p.partition_index == 0]
    if not found:
        raise Unanswered(voter, "BadAnswer", f"DescribeQuorum answer without {QUORUM_TOPIC}/0")
    part = found[0]
    error = error_name(int(part.error_code))
    if error is not None:  # Kafka 4.1 sends leader 0 / epoch 0 placeholders: keep only a real hint
        hint = int(part.leader_epoch) > 0 and int(part.leader_id) >= 0
        return QuorumView(voter, error, int(part.leader_id) if hint else -1,
                          int(part.leader_epoch) if hint else None, None)
    leader = int(part.leader_id) if int(part.leader_id) >= 0 else -1
    hw = int(part.high_watermark)
    return QuorumView(
        voter, None, leader, int(part.leader_epoch), hw if leader == voter and hw >= 0 else None,
        tuple((int(r.replica_id), int(r.log_end_offset)) for r in part.current_voters),
        tuple((int(r.replica_id), int(r.log_end_offset)) for r in part.observers),
    )


def _describe_quorum(version: int) -> Any:
    part = DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)
    return DescribeQuorumRequest(version=version, topics=[
        DescribeQuorumRequest.TopicData(topic_name=QUORUM_TOPIC, partitions=[part])])


def describe_quorum(conn: NodeConnection) -> QuorumView:
    """One DescribeQuorum round trip to the voter behind `conn`, decoded."""
    return decode_quorum(conn.node, conn.call(DescribeQuorumRequest, DescribeQuorumResponse, DESCRIBE_QUORUM_MAX,
                                              _describe_quorum))


class _Voter:
    """One voter's connection and what was last emitted for it; used only by its own thread."""

    def __init__(self, conn: NodeConnection) -> None:
        self.conn = conn
        self.answers = 0
        self.last_key: tuple[str, int, int | None, str | None] | None = None
        self.last_emit = 0.0
        self.errors_seen: set[str] = set()

    def ask(self) -> QuorumView:
        view = describe_quorum(self.conn)
        self.answers += 1
        return view


class QuorumObserver(StartedByWith):
    """Polls every voter's DescribeQuorum on its own thread; an `Observer` and a context manager.

    `voters` maps node id -> "host:port" of its CONTROLLER listener (reached directly).
    """

    def __init__(self, voters: Mapping[int, str], sink: EventSink, *, interval_s: float = 0.05,
                 timeout_s: float = 1.0, sample_s: float = SAMPLE_S, name: str = "quorum",
                 security: ClientSecurity = PLAINTEXT) -> None:
        if not voters:
            raise QuorumObserverError(f"QuorumObserver({name!r}): no voter addresses given")
        if not interval_s > 0 or not timeout_s > 0 or not sample_s > 0:
            raise QuorumObserverError(f"QuorumObserver({name!r}): interval_s={interval_s!r}, "
                                      f"timeout_s={timeout_s!r} and sample_s={sample_s!r} must be > 0")
        self.name = name
        self.interval_s, self.timeout_s, self.sample_s = interval_s, timeout_s, sample_s
        self._emit = OrderedEmitter(sink, name)
        self._voters = [_Voter(NodeConnection(v, a, timeout_s=timeout_s, client_id=f"observer-{name}-{v}",
                                                     security=security))
                        for v, a in sorted(voters.items())]
        self._threads: list[tuple[threading.Thread, _Voter]] = []
        self._stop = threading.Event()
        self._cond = threading.Condition()  # guards the fields below and orders every emit
        self._leader: tuple[int, int] | None = None
        self._emitted: set[tuple[int, int]] = set()
        self._failures: list[tuple[str, BaseException]] = []

    @property
    def answers(self) -> dict[int, int]:
        """How many DescribeQuorum answers each voter gave so far."""
        return {v.conn.node: v.answers for v in self._voters}

    @property
    def round_trips(self) -> dict[int, float | None]:
        """Each voter's last request-to-answer time in seconds (None before its first answer)."""
        return {v.conn.node: v.conn.rtt_s for v in self._voters}

    def leader(self) -> tuple[int, int] | None:
        """The latest (leader, epoch) emitted as `controller`, or None before any."""
        with self._cond:
            return self._leader

    def wait_leader(self, timeout_s: float, *, other_than: int | None = None) -> tuple[int, int]:
        """Wait until a leader (other than `other_than`) is known; (leader, epoch), or HarnessTimeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                current = self._leader
                if current is not None and current[0] != other_than:
                    return current
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    what = "a quorum leader" + (f" other than {other_than}" if other_than is not None else "")
                    raise HarnessTimeout(what, timeout_s, current,
                                         "are the voters' CONTROLLER addresses right and a majority up?")
                self._cond.wait(remaining)

    def start(self) -> None:
        if self._threads:
            raise QuorumObserverError(f"QuorumObserver({self.name!r}): start() called twice")
        self._stop.clear()
        for voter in self._voters:
            voter.conn.rearm()
        for voter in self._voters:
            thread = threading.Thread(target=self._run, args=(voter,), daemon=True,
                                      name=f"observer-{self.name}-{voter.conn.node}")
            self._threads.append((thread, voter))
            thread.start()

    def stop(self) -> None:
        """Stop polling: joins every thread, closes every socket (idempotent)."""
        self._stop.set()
        for _, voter in self._threads:
            voter.conn.close(wake=True)  # a thread waiting on a paused voter's answer returns now
        failures: list[tuple[str, BaseException]] = []
        for thread, _ in self._threads:
            if thread is threading.current_thread():
                continue
            thread.join(self.timeout_s * 3 + self.interval_s + RETRY_S + 2.0)
            if thread.is_alive():
                failures.append((f"QuorumObserver({self.name!r}): join {thread.name}",
                                 TimeoutError("poll thread still alive")))
        self._threads = []
        for voter in self._voters:
            voter.conn.close()  # never raises
        with self._cond:
            failures, self._failures = self._failures + failures, []
        if failures:
            raise TeardownError(failures)

    def _run(self, voter: _Voter) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                delay = self.interval_s
                try:
                    view = voter.ask()
                except Unanswered as exc:
                    log.debug("observer %s: %s", self.name, exc)
                    voter.last_key = None  # its next answer is recorded even if nothing changed
                    delay = max(self.interval_s, RETRY_S)
                    self._failed(voter, exc)
                else:
                    self._answered(voter, view, time.time() * 1000.0)
                self._stop.wait(max(0.0, delay - (time.monotonic() - started)))
        except BaseException as exc:
            with self._cond:
                self._failures.append((f"QuorumObserver({self.name!r}): voter {voter.conn.node} thread", exc))
        finally:
            voter.conn.close()

    def _answered(self, voter: _Voter, view: QuorumView, wall: float) -> None:
        key = (view.role, view.leader, view.epoch, view.error)
        now = time.monotonic()
        due = view.role == "leader" and now - voter.last_emit >= self.sample_s
        with self._cond:
            if key != voter.last_key or due:
                voter.last_key, voter.last_emit = key, now
                self._emit(QuorumState(src=self.name, wall=wall, voter=view.voter, leader=view.leader,
                                       epoch=view.epoch, role=view.role, high_watermark=view.high_watermark,
                                       voters=view.replicas(view.voters), observers=view.replicas(view.observers),
                                       error=view.error))
            if view.error is None and view.leader >= 0 and view.epoch is not None:
                self._consider(view.leader, view.epoch, wall)

    def _consider(self, leader: int, epoch: int, wall: float) -> None:
        """Emit `controller` for a newer epoch, or a second leader in the newest one (caller holds the lock)."""
        current = self._leader
        if (current is not None and epoch < current[1]) or (leader, epoch) in self._emitted:
            return
        self._leader = (leader, epoch)
        self._emitted.add((leader, epoch))
        self._emit(Controller(src=self.name, wall=wall, broker=leader, epoch=epoch, source="describe_quorum"))
        self._cond.notify_all()

    def _failed(self, voter: _Voter, exc: Unanswered) -> None:
        if exc.kind in voter.errors_seen or self._stop.is_set():  # stop() closing the socket is no error
            return
        voter.errors_seen.add(exc.kind)
        with self._cond:
            self._emit(ObserverError(src=self.name, wall=time.time() * 1000.0, observer=self.name,
                                     call="describe_quorum", error=f"describe_quorum: {exc.kind}",
                                     detail=f"voter {voter.conn.node} at {voter.conn.address}: {exc.detail}",
                                     node=voter.conn.node))

    @property
    def sink_errors(self) -> int:
        """Events the sink refused (each logged)."""
        return self._emit.sink_errors
