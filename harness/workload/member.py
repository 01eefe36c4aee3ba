"""One consumer-group member: one confluent-kafka Consumer owned by one thread, for one incarnation.

Owns the member's poll loop and the events it records (src `consumer:<group>/<n>`, with
`consumer` = "<group>/<n>" and `member` = the Kafka member id the coordinator gave this client):
`poll` per record; `assign`/`revoke` per rebalance callback, with `partitions` as handed to the
callback, `incremental` (true for cooperative/KIP-848 deltas), `assignment` (the member's full
assignment afterwards) and `lost` on revoke (partitions lost, not revoked); `commit` per partition
and `commit.error`; `consumer.error` for errors polled from the client.

Generation: librdkafka does not pass it to the rebalance callbacks; it is read from
`Consumer.consumer_group_metadata()` (librdkafka's serialized group metadata) inside the
callback, i.e. the generation librdkafka holds at that instant. For the classic protocol that is
the JoinGroup generation whose assignment is being delivered (on assign) and the generation the
partitions were held in (on revoke), or null when librdkafka has already dropped it (-1, e.g.
after ILLEGAL_GENERATION or a lost session). For `group.protocol=consumer` it is the member
epoch. A commit carries the generation read just before it was made (async: delivered later through
`on_commit`), once `committed()` has shown that librdkafka answers (`_answers`); auto commits carry the last one
read. It is never read between polls otherwise:
`consumer_group_metadata()` waits for librdkafka's main thread while holding Python's GIL, so a client whose
main thread is deadlocked freezes every thread of the harness there, and no timeout or signal can end the run.
Seen on librdkafka 2.16.0 under explore (docs/apache-kafka.md, "A librdkafka consumer that deadlocks"): the main thread
handling an OffsetForLeaderEpoch answer held a partition's lock and waited for the handle's write lock, which a
broker thread failing its connection held for reading while it waited for that partition's lock (librdkafka
issue #5476's inversion). A deadlocked member now stops polling records, which the drain reports.

Ending: `close` = graceful (unsubscribe = LeaveGroup, revoke callbacks served, then close()); `kill` = the thread
drops its only reference without close(); confluent-kafka then destroys the handle with
RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE: no LeaveGroup, no final commit, sockets closed - the group
only notices after the session timeout, as after SIGKILL of a consumer process. `pause` = the
thread stops calling poll() (librdkafka keeps heartbeating in the background, so the member is
dropped after max.poll.interval.ms, not session.timeout.ms).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import confluent_kafka

from harness.history.events import (
    Assign,
    ClientError,
    Commit,
    CommitError,
    ConsumerError,
    Poll,
    Revoke,
)
from harness.history.jsonl import EventSink
from harness.waiting import poll_until
from harness.workload.common import (
    WorkloadError,
    answers,
    decode_key,
    decode_value,
    parse_group_metadata,
    wall_ms,
)
from harness.workload.ends import SideChannel

TopicPartitionKey = tuple[str, int]
COMMIT_MODES = ("auto", "sync", "async", "none")
_DRAIN_CHECK_INTERVAL_S = 0.5
_LEAVE_TIMEOUT_S = 5.0
_COMMITTED_QUERY_INTERVAL_S = 2.0
_QUIET_ERRORS = {confluent_kafka.KafkaError._PARTITION_EOF}


class Member:
    """One incarnation of slot `n` of a group; started by `start()`, ended by `end(mode)`."""

    def __init__(
        self,
        *,
        group: str,
        slot: int,
        topics: Sequence[str],
        config: dict[str, Any],
        commit: str,
        commit_interval_s: float,
        incremental: bool,
        sink: EventSink,
        poll_timeout_s: float = 0.1,
    ) -> None:
        self.group = group
        self.slot = slot
        self.consumer_id = f"{group}/{slot}"
        self.src = f"consumer:{self.consumer_id}"
        self.topics = list(topics)
        self._config = dict(config)
        self._config["on_commit"] = self._on_commit
        self._config["error_cb"] = self._on_client_error
        self._isolation = str(self._config.get("isolation.level", "read_committed"))
        self._side = SideChannel(self._config, self._isolation)
        self._commit = commit
        self._commit_interval_s = commit_interval_s
        self._incremental = incremental
        self._sink = sink
        self._poll_timeout_s = poll_timeout_s
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._end_mode: str | None = None
        self._paused = threading.Event()
        self._wake = threading.Event()
        self._draining = threading.Event()
        self.caught_up = False
        self.last_check_error: str | None = None
        self.failure: BaseException | None = None
        self._callback_failure: BaseException | None = None
        self.member_id: str | None = None
        self.generation: int | None = None
        self._assignment: set[TopicPartitionKey] = set()
        self._positions: dict[TopicPartitionKey, int] = {}
        self.known_partitions: set[TopicPartitionKey] = set()
        self._committed: dict[TopicPartitionKey, int] = {}
        self._committed_at = -_COMMITTED_QUERY_INTERVAL_S
        self.polled = 0
        self._dirty = False

    # -- control (any thread) ------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    @property
    def assignment(self) -> frozenset[TopicPartitionKey]:
        return frozenset(self._assignment)

    def start(self, timeout_s: float = 10.0) -> None:
        """Create the client on the member's thread; raises if the client cannot be created."""
        self._thread = threading.Thread(target=self._run, name=f"workload-{self.src}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise WorkloadError(f"{self.src}: client not created within {timeout_s}s")
        if self.failure is not None:
            failure, self.failure = self.failure, None
            self.join(timeout_s)
            raise WorkloadError(f"{self.src}: cannot create the consumer: {failure}") from failure

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()
        self._wake.set()

    def set_draining(self, on: bool) -> None:
        self.caught_up = False
        if on:
            self._draining.set()
        else:
            self._draining.clear()

    def end(self, mode: str) -> None:
        """Ask the thread to finish: 'close' (graceful) or 'kill' (abrupt); does not wait."""
        if mode not in ("close", "kill"):
            raise WorkloadError(f"{self.src}: end mode {mode!r} is not 'close' or 'kill'")
        if self._end_mode is None:
            self._end_mode = mode
        self._wake.set()

    def join(self, timeout_s: float) -> bool:
        """Wait for the thread; True when it has ended."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout_s)
        return not thread.is_alive()

    # -- the member thread ---------------------------------------------------------------------
    def _run(self) -> None:
        consumer: confluent_kafka.Consumer | None = None
        try:
            consumer = confluent_kafka.Consumer(self._config)
            consumer.subscribe(
                self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
            )
        except BaseException as exc:
            traceback.clear_frames(exc.__traceback__)  # keep the trace, not the clients in its frames
            self.failure = exc
            consumer = None
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop(consumer)
            if self._end_mode == "close":
                self._leave(consumer)
                consumer.close()  # final commit (auto) and the client's teardown
        except BaseException as exc:
            traceback.clear_frames(exc.__traceback__)  # keep the trace, not the clients in its frames
            self.failure = exc
        finally:
            if self.failure is None and self._callback_failure is not None:
                self.failure = self._callback_failure
            # Dropping the only reference: without a prior close() confluent-kafka destroys the
            # handle with NO_CONSUMER_CLOSE (no LeaveGroup, no commit) - the "kill" path.
            consumer = None
            self._side.close()

    def _loop(self, consumer: confluent_kafka.Consumer) -> None:
        last_commit = time.monotonic()
        last_drain_check = 0.0
        while self._end_mode is None:
            if self._paused.is_set():
                self._wake.wait(0.05)
                self._wake.clear()
                continue
            msg = consumer.poll(self._poll_timeout_s)
            if msg is not None:
                self._handle_message(msg)
            now = time.monotonic()
            if self._commit in ("sync", "async") and self._dirty and now - last_commit >= self._commit_interval_s:
                last_commit = now
                self._do_commit(consumer)
            if self._draining.is_set() and now - last_drain_check >= _DRAIN_CHECK_INTERVAL_S:
                last_drain_check = now
                self.caught_up = self._check_caught_up(consumer)

    def _leave(self, consumer: confluent_kafka.Consumer) -> None:
        """Unsubscribe (LeaveGroup) and serve the revocation before close().

        Closing while a rebalance callback is pending can hang librdkafka 2.x forever inside
        rd_kafka_assign() (librdkafka issues #4527/#4884), and confluent-kafka holds the GIL
        there, which would freeze the whole harness; unsubscribing and polling until the
        assignment is empty first is the workaround given upstream. A client that no longer answers
        (`_answers`) goes straight to close(): unsubscribe() and assignment() would hold the GIL forever.
        """
        if not self._answers(consumer, _LEAVE_TIMEOUT_S):
            logging.getLogger(__name__).warning("%s: librdkafka did not answer within %gs; closing without "
                                                "unsubscribing first", self.src, _LEAVE_TIMEOUT_S)
            return
        consumer.unsubscribe()

        def left() -> bool:
            msg = consumer.poll(0.1)  # the pause between checks
            if msg is not None:
                self._handle_message(msg)
                return False
            return not consumer.assignment()

        poll_until(left, _LEAVE_TIMEOUT_S, poll_s=0.0)

    def _refresh_metadata(self, consumer: confluent_kafka.Consumer) -> None:
        try:
            blob = consumer.consumer_group_metadata()
        except (RuntimeError, confluent_kafka.KafkaException):
            return  # "not available" (e.g. while closing): keep the last values seen
        md = parse_group_metadata(blob)
        if md is not None:
            self.generation = md.generation
            self.member_id = md.member_id or self.member_id

    def _who(self) -> tuple[str, str, str | None]:
        """(consumer, group, member id) as every event of this member names them."""
        return self.consumer_id, self.group, self.member_id

    def _handle_message(self, msg: confluent_kafka.Message) -> None:
        err = msg.error()
        if err is not None:
            if err.code() not in _QUIET_ERRORS:
                cid, group, member = self._who()
                self._sink(ConsumerError(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member,
                                         error=err.name(), error_detail=err.str(), fatal=err.fatal()))
            return
        topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
        cid, group, member = self._who()
        self._sink(Poll(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member, topic=topic,
                        partition=partition, offset=offset, value=decode_value(msg.value()),
                        key=decode_key(msg.key()), isolation=self._isolation))
        self.polled += 1
        if topic is not None and partition is not None and offset is not None:
            self._positions[(topic, partition)] = offset + 1
        self._dirty = True

    # -- rebalance callbacks (run inside poll()/close() on this thread) ------------------------
    def _rebalance(
        self,
        consumer: confluent_kafka.Consumer,
        parts: list[confluent_kafka.TopicPartition],
        type_: str,
        lost: bool = False,
    ) -> None:
        self._refresh_metadata(consumer)
        keys = sorted((p.topic, p.partition) for p in parts)
        self._committed.clear()
        self._committed_at = -_COMMITTED_QUERY_INTERVAL_S
        if type_ == "assign":
            after = set(keys) if not self._incremental else self._assignment | set(keys)
        else:
            after = self._assignment - set(keys)
        cid, group, member = self._who()
        # The event is in the history before `assignments()` shows the change: whoever sees the new
        # assignment finds the event that made it.
        self._sink((Assign if type_ == "assign" else Revoke)(
            src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member, generation=self.generation,
            partitions=tuple(keys), incremental=self._incremental, assignment=tuple(sorted(after)),
            lost=True if lost else None))
        if type_ != "assign":
            for key in keys:
                self._positions.pop(key, None)
        # A drain check judged the old assignment (one with none owned passes: an idle member of a larger group is
        # caught up); it says nothing of the new one, so it is cleared first, before the new set shows: a reader
        # that sees the new set sees the flag cleared (explore on 3.9.2: a member whose partitions were lost and
        # handed back got them with the empty set's pass, and the drain ended at once with 6,843 writes unread).
        self.caught_up = False
        self._assignment = after  # one rebinding: a reader sees the old set or the new one

    # An exception escaping a callback would be raised by confluent-kafka from the enclosing
    # poll()/close() (in some paths mangled into a SystemError), so callbacks never raise: the
    # first failure is kept and reported by `failure` once the thread ends.
    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:
            if self._callback_failure is None:
                traceback.clear_frames(exc.__traceback__)  # keep the trace, not the clients in its frames
                self._callback_failure = exc

    def _on_assign(self, consumer: confluent_kafka.Consumer, parts: list[confluent_kafka.TopicPartition]) -> None:
        self._guarded(lambda: self._rebalance(consumer, parts, "assign"))

    def _on_revoke(self, consumer: confluent_kafka.Consumer, parts: list[confluent_kafka.TopicPartition]) -> None:
        self._guarded(lambda: self._rebalance(consumer, parts, "revoke"))

    def _on_lost(self, consumer: confluent_kafka.Consumer, parts: list[confluent_kafka.TopicPartition]) -> None:
        self._guarded(lambda: self._rebalance(consumer, parts, "revoke", lost=True))

    # -- commits -------------------------------------------------------------------------------
    def _record_commits(self, parts: Sequence[confluent_kafka.TopicPartition], generation: int | None) -> None:
        failed: list[tuple[str | int | None, ...]] = []
        cid, group, member = self._who()
        for tp in parts:
            if tp.error is not None:
                failed.append((tp.topic, tp.partition, tp.error.name() if hasattr(tp.error, "name") else str(tp.error)))
            elif tp.offset is not None and tp.offset >= 0:
                self._sink(Commit(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member,
                                  generation=generation, topic=tp.topic, partition=tp.partition, offset=tp.offset))
        if failed:
            self._sink(CommitError(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member,
                                   generation=generation, error="partition errors", partitions=tuple(failed)))

    def _do_commit(self, consumer: confluent_kafka.Consumer) -> None:
        self._dirty = False
        if self._answers(consumer, 1.0):  # only then: see the module doc
            self._refresh_metadata(consumer)  # the generation this commit is made in
        if self._commit == "async":
            consumer.commit(asynchronous=True)  # results arrive through _on_commit
            return
        generation = self.generation
        try:
            result = consumer.commit(asynchronous=False)
        except confluent_kafka.KafkaException as exc:
            kerr = exc.args[0] if exc.args and isinstance(exc.args[0], confluent_kafka.KafkaError) else None
            if kerr is not None and kerr.code() == confluent_kafka.KafkaError._NO_OFFSET:
                return
            name = kerr.name() if kerr is not None else type(exc).__name__
            cid, group, member = self._who()
            self._sink(CommitError(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member,
                                   generation=generation, error=name, error_detail=str(exc)))
            return
        self._record_commits(result or [], generation)

    def _on_commit(self, err: confluent_kafka.KafkaError | None, parts: list[confluent_kafka.TopicPartition]) -> None:
        self._guarded(lambda: self._commit_result(err, parts))

    def _commit_result(
        self, err: confluent_kafka.KafkaError | None, parts: list[confluent_kafka.TopicPartition]
    ) -> None:
        if err is not None:
            if err.code() == confluent_kafka.KafkaError._NO_OFFSET:
                return
            cid, group, member = self._who()
            self._sink(CommitError(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member,
                                   generation=self.generation, error=err.name(), error_detail=err.str(),
                                   partitions=tuple((p.topic, p.partition, p.offset) for p in parts)))
            return
        self._record_commits(parts, self.generation)

    def _on_client_error(self, err: confluent_kafka.KafkaError) -> None:
        cid, group, member = self._who()
        event = ClientError(src=self.src, wall=wall_ms(), consumer=cid, group=group, member=member,
                            client=self.src, error=err.name(), error_detail=err.str(), fatal=err.fatal())
        self._guarded(lambda: self._sink(event))

    def _answers(self, consumer: confluent_kafka.Consumer, timeout_s: float) -> bool:
        """`common.answers`, asked about a partition the member owns (or its first topic's partition 0)."""
        return answers(consumer, sorted(self._assignment)[:1] or [(self.topics[0], 0)], timeout_s)

    # -- drain ---------------------------------------------------------------------------------
    @staticmethod
    def _position(consumer: confluent_kafka.Consumer, key: TopicPartitionKey) -> int:
        """librdkafka's own position (no request): past transaction markers and, read_committed, aborted
        records, which no poll returns."""
        (tp,) = consumer.position([confluent_kafka.TopicPartition(*key)])
        return tp.offset if tp.error is None else -1

    def _check_caught_up(self, consumer: confluent_kafka.Consumer) -> bool:
        """True when this member has read up to the high watermark of every partition it owns.

        Uses first what the client already knows (the high watermark of the last Fetch response,
        the member's own read position) so that the check seldom waits behind a Fetch long-poll
        on the broker connection, and asks the leaders only to confirm a pass; committed offsets
        are asked for only for owned partitions it has not read from (handed over already
        consumed), at most every 2 s. Each check first asks one committed offset (`_answers`): the
        client's own knowledge is read holding the GIL, which a deadlocked client would never give back.
        """
        try:
            if not self._answers(consumer, 1.0):
                self.last_check_error = "librdkafka did not answer within 1 s (its main thread busy or deadlocked)"
                return False
            if not self.known_partitions:  # on the side channel: the member's own connections wait behind Fetches
                self.known_partitions = self._side.partitions(self.topics, 1.0)
            owned = sorted(self._assignment)
            unread = [k for k in owned if k not in self._positions]
            now = time.monotonic()
            if unread and now - self._committed_at >= _COMMITTED_QUERY_INTERVAL_S:
                self._committed_at = now
                tps = [confluent_kafka.TopicPartition(t, p) for t, p in unread]
                for tp in consumer.committed(tps, timeout=1.0):
                    self._committed[(tp.topic, tp.partition)] = tp.offset
            for key in owned:
                low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(*key), cached=True)
                if high < 0:
                    self.last_check_error = f"{key[0]}/{key[1]}: no high watermark fetched yet"
                    return False
                read = self._read_up_to(consumer, key)
                if high > low and read < high:
                    self.last_check_error = f"{key[0]}/{key[1]}: read up to {read}, high watermark {high}"
                    return False
            return self._confirm_caught_up(consumer, owned)
        except (confluent_kafka.KafkaException, TimeoutError) as exc:
            self.last_check_error = str(exc) or f"no answer: {type(exc).__name__}"
            return False

    def _confirm_caught_up(self, consumer: confluent_kafka.Consumer, owned: list[TopicPartitionKey]) -> bool:
        """The cached high watermark is that of the partition's last Fetch response: a partition the client stopped
        fetching (a stuck client) keeps an old one, or none but an empty partition's, and would look read to the end
        (librdkafka 2.3.0 never fetched a partition whose first metadata said UNKNOWN_TOPIC_OR_PART). So a check
        that passes on the cached values is confirmed against the leaders' ends (ListOffsets), as the Java worker's
        `endOffsets`, asked on the side channel (`ends.SideChannel`: the member's own request would wait behind its
        Fetch long-poll), or with a confluent-kafka before 2.3 by the member's client. What the client raises,
        `_check_caught_up` reports."""
        if owned:
            side = self._side.ends(owned, 2.0)
            if side is None:  # one ListOffsets per leader: timestamp -1 asks for the end (the LSO under
                # read_committed, the isolation level the client sends)
                side = {(e.topic, e.partition): e.offset for e in consumer.offsets_for_times(
                    [confluent_kafka.TopicPartition(t, p, -1) for t, p in owned], timeout=2.0)}
            for key, end in side.items():
                read = self._read_up_to(consumer, key)
                if end > 0 and read < end:
                    self.last_check_error = f"{key[0]}/{key[1]}: read up to {read}, the leader's end {end}"
                    return False
        self.last_check_error = None
        return True

    def _read_up_to(self, consumer: confluent_kafka.Consumer, key: TopicPartitionKey) -> int:
        """How far this member has read `key`: its own polls, the committed offset of a partition handed over
        already consumed, or librdkafka's position, whichever is furthest."""
        return max(self._positions.get(key, -1), self._committed.get(key, -1), self._position(consumer, key))
