"""The transactional producer workload: librdkafka's transactional API (through confluent-kafka) on the
producer workload's sender thread, recording each transaction's begin and end and its outcome.

Each transaction holds `records` records, sent at the producer's rate to the topic's partitions in turn
(record i of a transaction goes to partition i mod the partition count), so one transaction spans several
partitions. Whether a transaction is meant to be aborted is drawn from the seed when it begins
(`abort_rate`; `common.txn_abort_drawn`, which the Java client's worker computes too). Events (src
`producer:<id>`), besides the producer workload's `send`/`ack`/`send.error`, which carry `txn` here:
- `txn.begin` {producer, transactional_id, txn}: `txn` numbers the producer's transactions 0, 1, 2, …
  across client sessions.
- `txn.commit` / `txn.abort` {producer, transactional_id, txn, outcome, definite, error, error_detail}: the end
  of a transaction meant to be committed / aborted. `outcome` is `committed` (commit_transaction returned),
  `aborted` (abort_transaction returned, after an abort on purpose or a commit that failed with an error that
  requires an abort, or the next session's init_transactions aborted a transaction an abrupt restart left
  open), or `unknown` (a fatal error, or the run ended while the end was still being retried: Jepsen's
  indefinite `info`). `definite` is outcome != unknown.

A zombie restart (`restart(zombie=True)`) keeps the old client alive with a transaction open; once the new
session's init_transactions has fenced it (and aborted that transaction), it writes `records` more records into
it (`send`/`ack`/`send.error` with `zombie: true`) and tries to commit: `txn.zombie` {producer, transactional_id,
txn, outcome (fenced, refused, committed), error, error_detail} records Kafka's answer.

Retriable errors of commit and abort are retried until they succeed; once `stop()` is called the retries
end after the transaction timeout. The producer blocks meanwhile, as a transactional application does.

`pause()` (the `pause` fault on `producer:<id>`) holds the sender thread after its next record, so a transaction
is always open, with a record the coordinator knows, while the application is paused.

A fence (librdkafka's fatal `_FENCED`: the producer's epoch is stale) is what Kafka does to a producer whose
transaction stayed open past `transaction.timeout.ms`: the coordinator aborts the transaction and bumps the
epoch (a paused application meets it when it goes on; a commit that reaches the coordinator while it aborts the
transaction is answered INVALID_TXN_STATE, fatal too, and taken the same way when the transaction had outlived
its timeout). It is recorded as `txn.fenced` {producer,
transactional_id, txn (the open transaction, or None), error, error_detail, open_ms (how long that transaction
had been open, by the client's clock), timeout_ms}, not as a fatal `client.error`; the open transaction ends
`aborted` when the fence explains its end (open_ms >= timeout_ms) or its commit was never asked for, else
`unknown`; and the producer starts a new session (init_transactions), as a transactional application that
handles ProducerFencedException by making a new producer does. A transaction ends `aborted` after any fatal
error as long as its commit was never asked for: only EndTxn(COMMIT) commits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Mapping
from typing import Any, cast

import confluent_kafka

from harness.history.events import Send, TxnAbort, TxnBegin, TxnCommit, TxnFenced, TxnZombie
from harness.history.jsonl import EventSink
from harness.waiting import Deadline
from harness.workload.common import Pacer, WorkloadConfigError, is_fatal, txn_abort_drawn, wall_ms
from harness.workload.producer import ProducerWorkload

CALL_TIMEOUT_S = 10.0
"""The timeout of each init_transactions/commit_transaction/abort_transaction call (retried after it)."""
CLIENT_RAISES = cast(tuple[type[BaseException], ...], (confluent_kafka.KafkaException, confluent_kafka.KafkaError))
"""What a confluent-kafka call on a fenced client may raise: a KafkaException, or the fatal KafkaError itself, which
is no Exception subclass (its type is raisable, but `except Exception` misses it). Seen on a loaded make test: a
zombie's flush raised KafkaError{FATAL,_FENCED}, and the restart_producer operation's thread died with it."""
ZOMBIE_FLUSH_RAISES: tuple[type[BaseException], ...] = (*CLIENT_RAISES, Exception)
"""What a fenced client's flush may raise besides CLIENT_RAISES. confluent-kafka can serve its delivery reports with
the fatal error still set as Python's pending exception; a callback run that way fails in CPython's own machinery
(seen in CI: AttributeError for `_on_delivery`, which CPython 3.11's type lookup reports when it finds an exception
already set), and flush raises that. The zombie's records are fenced whatever its reports say: it is its outcome."""
FENCE_ERRORS = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})


def _error_of(exc: BaseException) -> confluent_kafka.KafkaError:
    """The KafkaError a CLIENT_RAISES exception carries (a raised KafkaError is its own)."""
    if isinstance(exc, confluent_kafka.KafkaError):
        return exc
    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, confluent_kafka.KafkaError) else confluent_kafka.KafkaError(
        confluent_kafka.KafkaError._FAIL, str(exc))


def give_up(client: confluent_kafka.Producer) -> None:
    """A fenced client gives up what it holds: purged (recorded as unknown), its reports served for a second."""
    with contextlib.suppress(Exception, *CLIENT_RAISES):
        client.purge(in_queue=True, in_flight=True, blocking=False)
        client.flush(1.0)


def is_fence(err: confluent_kafka.KafkaError) -> bool:
    """Whether a fatal error fenced the producer: its epoch is stale (librdkafka's `_FENCED`; its error callback
    reports it as `_FATAL` with the reason in the text)."""
    return err.name() in FENCE_ERRORS or (err.name() == "_FATAL" and "fenced" in err.str().lower())


class TransactionalProducerWorkload(ProducerWorkload):
    """A `ProducerWorkload` whose records go out in transactions (see the module docstring)."""

    def __init__(
        self,
        bootstrap_servers: str,
        sink: EventSink,
        *,
        producer_id: str,
        topic: str,
        rate: float,
        transactional_id: str,
        records: int = 10,
        abort_rate: float = 0.0,
        timeout_s: float = 60.0,
        seed: int = 0,
        keys: int = 0,
        value_base: int = 0,
        extra_config: Mapping[str, str] | None = None,
    ) -> None:
        who = f"TransactionalProducerWorkload({producer_id!r})"
        if not transactional_id:
            raise WorkloadConfigError(who, "transactional_id", transactional_id, "a non-empty string")
        if records < 1:
            raise WorkloadConfigError(who, "records", records, "at least 1 record per transaction")
        if not 0.0 <= abort_rate <= 1.0:
            raise WorkloadConfigError(who, "abort_rate", abort_rate, "a share between 0 and 1")
        if not timeout_s > 0:
            raise WorkloadConfigError(who, "timeout_s", timeout_s, "seconds > 0")
        super().__init__(bootstrap_servers, sink, producer_id=producer_id, topic=topic, rate=rate, acks="all",
                         idempotence=True, keys=keys, value_base=value_base, extra_config=extra_config)
        self.transactional_id = transactional_id
        self.records = records
        self.abort_rate = abort_rate
        self.timeout_s = timeout_s
        self._config["transactional.id"] = transactional_id
        self._config["transaction.timeout.ms"] = str(int(timeout_s * 1000))
        self._join_timeout_s = timeout_s + 3 * CALL_TIMEOUT_S
        self._give_up_at: float | None = None
        """When ending the open transaction stops being retried: the transaction timeout after `stop()`."""
        self._seed = seed
        self._next_txn = 0
        self._open: tuple[int, bool] | None = None
        """The transaction under way: (txn, meant to be aborted)."""
        self._abandon = False
        """An abrupt restart is under way: the sender thread leaves the open transaction as it is."""
        self._abandoned: tuple[int, bool] | None = None
        """The transaction an abrupt restart left open; the next session's init_transactions aborts it."""
        self._partitions = 0
        self._fenced = threading.Event()
        """Set once a session's init_transactions has succeeded (it fenced every earlier one)."""
        self._zombie: tuple[threading.Thread, int] | None = None
        """(the thread, the transaction) of a zombie client writing after it was fenced."""
        self._zombie_error: confluent_kafka.KafkaError | None = None
        self._opened_at = 0.0
        """When the open transaction began (monotonic)."""
        self._committing = False
        """The open transaction's commit has been asked for."""
        self._fence: tuple[confluent_kafka.KafkaError, int | None] | None = None
        """This session was fenced (`txn.fenced` recorded): the error, and how long the open transaction had been
        open then (ms)."""
        self._renew = False
        """The sender thread goes on with a new session (after a fence)."""
        self.outcomes: dict[str, int] = {"committed": 0, "aborted": 0, "unknown": 0}

    @property
    def settled(self) -> bool:
        """Never (`base.Settles`): a record becomes an acknowledged write when its transaction commits, and the last
        stable offset moves once the coordinator has written the markers, after `commit_transaction` returned; the
        drain waits its time for such a producer, as before."""
        return False

    def restart(self, *, abrupt: bool = False, timeout_s: float = 30.0, zombie: bool = False) -> str:
        """As `ProducerWorkload.restart`; a clean restart ends the open transaction first, an abrupt one leaves
        it open for the new session's init_transactions to abort (Kafka bumps the epoch and aborts it). With
        `zombie` the old client stays alive with a transaction open and, once the new session has fenced it,
        writes `records` more records into that transaction and tries to commit it (`txn.zombie` records what
        Kafka answered; its writes carry `zombie: true`)."""
        if zombie:
            return self._zombie_restart(timeout_s)
        self._abandon = abrupt
        try:
            return super().restart(abrupt=abrupt, timeout_s=timeout_s)
        finally:
            self._abandon = False

    def _zombie_restart(self, timeout_s: float) -> str:
        with self._lifecycle:
            old, txn = self.hold_open(timeout_s)
            self._fenced.clear()
            self._new_session()
        try:
            if not self._fenced.wait(timeout_s):
                return (f"session {self.sessions}: its init_transactions did not succeed within {timeout_s:g}s, so "
                        f"the zombie (transaction {txn}) wrote nothing")
            outcome, n = self.zombie_writes(old, txn)
        finally:
            give_up(old)
            del old
        return (f"session {self.sessions}: the old client, fenced with transaction {txn} open, wrote {n} more "
                f"records and its commit was {outcome}")

    def hold_open(self, timeout_s: float) -> tuple[confluent_kafka.Producer, int]:
        """A zombie restart's first half (the lifecycle lock held, or no other caller: a worker's session): the
        sender thread halted with a transaction left open (one opened if it stopped between transactions), one
        more record in it that the coordinator has seen, so the transaction is ongoing, and everything delivered
        within `timeout_s`; (the old client, that transaction). The transaction is `_abandoned`: a next session's
        init_transactions aborts it."""
        self._abandon = True
        try:
            old = self._halt_sender()
        finally:
            self._abandon = False
        if self._abandoned is None:
            self._begin(old)
            self._abandoned, self._open = self._open, None
        assert self._abandoned is not None
        self._open = self._abandoned
        self._send_one(old, 0 if self._partitions else None)
        self._open = None
        old.flush(timeout_s)
        return old, self._abandoned[0]

    def zombie_writes(self, old: confluent_kafka.Producer, txn: int) -> tuple[str, int]:
        """A zombie restart's second half, once a new session has fenced `old`: the fenced client writes `records`
        more records into its open transaction `txn` and commits; `txn.zombie` records Kafka's answer; (that
        answer, records written)."""
        self._zombie, self._zombie_error = (threading.current_thread(), txn), None
        sent = 0
        try:
            for i in range(self.records):
                self._send_one(old, i % self._partitions if self._partitions else None)
                sent += 1
            try:
                old.commit_transaction(CALL_TIMEOUT_S)
                outcome, err = "committed", None
            except CLIENT_RAISES as exc:
                err = _error_of(exc)
                fenced = err.fatal() or err.name() in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED")
                outcome = "fenced" if fenced else "refused"
            try:
                old.flush(CALL_TIMEOUT_S)
            except ZOMBIE_FLUSH_RAISES as exc:  # the fence, raised again from the delivery reports' poll
                err = err or _error_of(exc)
            err = err or self._zombie_error
        finally:
            self._zombie = None
        self._sink(TxnZombie(src=self.name, wall=wall_ms(), producer=self.producer_id,
                             transactional_id=self.transactional_id, txn=txn, outcome=outcome,
                             error=err.name() if err is not None else None,
                             error_detail=err.str() if err is not None else None))
        return outcome, sent

    def _on_client_error(self, err: confluent_kafka.KafkaError) -> None:
        """A zombie's errors (it is fenced) are its own outcome, not the producer's: `txn.zombie` holds them."""
        zombie = self._zombie
        if zombie is not None and threading.current_thread() is zombie[0]:
            self._zombie_error = self._zombie_error or err
            return
        if not (err.fatal() and self._ended_by_coordinator(err)):
            super()._on_client_error(err)
            return
        if self._fatal_recorded:
            return
        opened = self._open
        open_ms = int((time.monotonic() - self._opened_at) * 1000) if opened is not None else None
        self._fatal_recorded, self._fence = True, (err, open_ms)
        self._sink(TxnFenced(src=self.name, wall=wall_ms(), producer=self.producer_id,
                             transactional_id=self.transactional_id, txn=opened[0] if opened is not None else None,
                             error=err.name(), error_detail=err.str(), open_ms=open_ms,
                             timeout_ms=int(self.timeout_s * 1000)))

    def _ended_by_coordinator(self, err: confluent_kafka.KafkaError) -> bool:
        """A fence, or INVALID_TXN_STATE for a transaction open past its timeout: the coordinator was aborting it
        when the commit came (seen on Apache Kafka 3.9.2 with a 2 s timeout and a commit stalled past it)."""
        if is_fence(err):
            return True
        invalid = err.name() == "INVALID_TXN_STATE" or "invalid state" in err.str()
        return invalid and self._open is not None and time.monotonic() - self._opened_at >= self.timeout_s

    # -- the sender thread ---------------------------------------------------------------------
    def _run(self) -> None:
        """Sessions one after another on this thread: a fenced one is followed by a new one until `stop()`."""
        while True:
            self._renew = False
            super()._run()
            if not self._renew or self._stop.is_set():
                return
            try:
                self._renew_session()
            except BaseException as exc:  # the new client could not be made: the sender thread ends with it
                self._failure = exc
                return

    def _renew_session(self) -> None:
        """After a fence: the fenced client gives up what it holds (recorded as unknown) and a new one takes over."""
        old = self._producer
        if old is not None:
            give_up(old)
        del old
        self._new_client()
        self._fence = None

    def _base(self, value: int, key: str | None) -> Send:
        base = super()._base(value, key)
        zombie = self._zombie
        if zombie is not None and threading.current_thread() is zombie[0]:
            return dataclasses.replace(base, txn=zombie[1], zombie=True)
        if self._open is not None:
            return dataclasses.replace(base, txn=self._open[0])
        return base

    def _send_loop(self, producer: confluent_kafka.Producer) -> None:
        if not self._init(producer):
            return
        partitions = self._partitions = self._partition_count(producer)
        pace = Pacer(self.rate)
        while not self._stop.is_set():
            self._begin(producer)
            sent = 0
            while sent < self.records and not self._stop.is_set():
                if pace.wait(producer):
                    self._send_one(producer, sent % partitions if partitions else None)
                    sent += 1
                    producer.poll(0)
                    self._hold()  # after a record: a pause always leaves a transaction open that Kafka knows
            if self._stop.is_set() and self._abandon:
                self._abandoned, self._open = self._open, None
                return
            self._end(producer)

    def _init(self, producer: confluent_kafka.Producer) -> bool:
        """init_transactions, retried while retriable until it succeeds or `stop()`; False when stopped."""
        while not self._stop.is_set():
            try:
                producer.init_transactions(CALL_TIMEOUT_S)
                break
            except confluent_kafka.KafkaException as exc:
                if is_fatal(exc) or not exc.args[0].retriable():
                    raise
        else:
            return False
        self._fenced.set()
        if self._abandoned is not None:
            txn, abort = self._abandoned
            self._abandoned = None
            self._record_end(txn, abort, "aborted", "_ABANDONED", "left open by an abrupt or zombie restart; "
                             "the new session's init_transactions aborted it")
        return True

    def _partition_count(self, producer: confluent_kafka.Producer) -> int:
        """The topic's partitions (from Metadata), or 0 when unknown (the partitioner then chooses)."""
        try:
            topic = producer.list_topics(self.topic, timeout=CALL_TIMEOUT_S).topics.get(self.topic)
        except confluent_kafka.KafkaException:
            return 0
        return len(topic.partitions) if topic is not None and topic.error is None else 0

    def _begin(self, producer: confluent_kafka.Producer) -> None:
        producer.begin_transaction()
        txn = self._next_txn
        self._next_txn += 1
        self._open = (txn, txn_abort_drawn(self._seed, self.producer_id, txn, self.abort_rate))
        self._opened_at, self._committing = time.monotonic(), False
        self._sink(TxnBegin(src=self.name, wall=wall_ms(), producer=self.producer_id,
                            transactional_id=self.transactional_id, txn=txn))

    def _end(self, producer: confluent_kafka.Producer) -> str:
        """Commit or abort the open transaction (as drawn at its begin), record the outcome and return it."""
        assert self._open is not None
        txn, abort = self._open
        self._give_up_at = None
        if abort:
            self._deliver_all(producer)
        self._committing = not abort
        outcome, error, detail = self._attempt(producer.abort_transaction if abort else producer.commit_transaction,
                                               "aborted" if abort else "committed")
        if outcome == "requires-abort":
            outcome, abort_error, abort_detail = self._attempt(producer.abort_transaction, "aborted")
            error, detail = (error, detail) if outcome == "aborted" else (abort_error, f"{detail}; {abort_detail}")
        self._open = None
        self._record_end(txn, abort, outcome, error, detail)
        return outcome

    def _deliver_all(self, producer: confluent_kafka.Producer) -> None:
        """Before an abort on purpose: every record delivered (or failed), so the aborted records are in the log
        and librdkafka's AddPartitionsToTxn has been answered. Aborting while the first produce is in flight
        lets EndTxn overtake AddPartitionsToTxn, which the coordinator refuses with a fatal INVALID_TXN_STATE
        (librdkafka#4849, open; seen here on Apache Kafka 3.9.2). Bounded by the transaction timeout."""
        deadline = Deadline.after(self.timeout_s)
        while len(producer) > 0 and not deadline.expired() and not self._giving_up():
            producer.flush(min(CALL_TIMEOUT_S, deadline.remaining()))

    def _giving_up(self) -> bool:
        """After `stop()`, ending the open transaction may take the transaction timeout, in all (so the sender
        thread ends within `_join_timeout_s`: that, the call under way and a pipeline's rewind)."""
        if not self._stop.is_set():
            return False
        if self._give_up_at is None:
            self._give_up_at = time.monotonic() + self.timeout_s
        return time.monotonic() > self._give_up_at

    def _attempt(self, call: Any, done: str) -> tuple[str, str | None, str | None]:
        """(outcome, error name, error text): `done` when `call` returns, `requires-abort` when the
        transaction must be aborted, `unknown` after the retries end; raises a fatal error (`_fatal_end`)."""
        while True:
            try:
                call(CALL_TIMEOUT_S)
                return done, None, None
            except confluent_kafka.KafkaException as exc:
                err = exc.args[0]
                if is_fatal(exc):
                    raise
                if err.txn_requires_abort():
                    return "requires-abort", err.name(), err.str()
                if not err.retriable():
                    return "unknown", err.name(), err.str()
                if self._giving_up():
                    return "unknown", err.name(), f"{err.str()} (still failing when the run ended)"

    def _fatal_end(self, producer: confluent_kafka.Producer, exc: confluent_kafka.KafkaException) -> None:
        """A fatal error ends the open transaction: `aborted` if its commit was never asked for or a fence explains
        its end, else `unknown`. A fence is `txn.fenced` and a new session follows; any other fatal error ends
        sending, as in any producer."""
        err = exc.args[0]
        with contextlib.suppress(Exception):
            producer.poll(0)  # serves the error callback: `txn.fenced` (or `client.error`) is recorded first
        if self._fence is None and self._ended_by_coordinator(err) and not self._fatal_recorded:
            self._on_client_error(err)
        fence = self._fence
        if self._open is not None:
            txn, abort = self._open
            explained = fence is not None and (fence[1] or 0) >= self.timeout_s * 1000
            outcome = "aborted" if not self._committing or explained else "unknown"
            self._record_end(txn, abort, outcome, err.name(), err.str())
            self._open = None
        if fence is None:
            super()._fatal_end(producer, exc)
        elif not self._stop.is_set():
            self._renew = True

    def _record_end(self, txn: int, abort: bool, outcome: str, error: str | None, detail: str | None) -> None:
        self.outcomes[outcome] += 1
        self._sink((TxnAbort if abort else TxnCommit)(
            src=self.name, wall=wall_ms(), producer=self.producer_id, transactional_id=self.transactional_id,
            txn=txn, outcome=outcome, definite=outcome != "unknown", error=error, error_detail=detail,
            offsets=self._end_offsets()))

    def _end_offsets(self) -> tuple[tuple[str | int, ...], ...] | None:
        """What a subclass adds to `txn.commit`/`txn.abort` (the pipeline: the offsets it commits)."""
        return None
