"""The producer workload: one confluent-kafka (librdkafka) Producer on its own thread, sending
unique integer values at a target rate and recording every send, ack and error as history events.

Events (src `producer:<id>`): `send` {producer, value, key, topic, acks}; `ack` adds partition,
offset (None when the broker returns none, e.g. acks=0) and latency_ms (librdkafka's own
produce()-to-delivery-report latency); `send.error` adds error (librdkafka error name),
error_detail, retriable, fatal and definite, and, when it comes from a delivery report, the partition
(if the report names one) and latency_ms (so the failed write's send time is known);
`client.error` {client, error, error_detail, fatal} for librdkafka's global errors (all brokers
down, idempotence fatal errors). `restart()` (the `restart_producer` operation) replaces the client with a new
session that sends on from the next value, so values stay unique across sessions.

`definite` (the write certainly did not happen): librdkafka tracks a per-message persistence
status (NOT_PERSISTED / POSSIBLY_PERSISTED / PERSISTED, `rd_kafka_message_status()`), but
confluent-kafka 2.16 does not expose it on `Message`. So this workload is conservative:
`definite` is true only when `produce()` itself raised (BufferError: local queue full, or a
KafkaException such as an unknown partition or an oversized message) - the message was never
enqueued and so never left the process. Every error delivered in a delivery report (timeouts,
broker rejections after retries, purges at close) is `definite: false`, because an earlier
transmission of the same batch may have been written; the verifiers treat those as unknown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import traceback
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import confluent_kafka

from harness.errors import TeardownError
from harness.history.events import Ack, ClientError, Send, SendError
from harness.history.jsonl import EventSink
from harness.waiting import Deadline
from harness.workload.common import (
    LIBRDKAFKA_LOGGER,
    Pacer,
    WorkloadConfigError,
    WorkloadError,
    encode_value,
    is_fatal,
    key_for,
    wall_ms,
    where,
)

_ACKS = {"0": "0", "1": "1", "all": "all", "-1": "all"}
_JOIN_TIMEOUT_S = 10.0


class ProducerWorkload:
    """Sends `value_base + n` (n = 0, 1, …) to `topic` at `rate` messages/s until `stop()`.

    `start()` creates the client (config errors raise here) and the sender thread; `stop()` ends
    sending; `drain(timeout_s)` waits for outstanding delivery reports (never raises on timeout:
    what is still outstanding stays unresolved in the history, i.e. unknown); `close()` purges
    anything left, releases the client and joins the thread. Use as a context manager (exit
    closes; entering does not start).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        sink: EventSink,
        *,
        producer_id: str,
        topic: str,
        rate: float,
        acks: str = "all",
        idempotence: bool = True,
        keys: int = 0,
        value_base: int = 0,
        extra_config: Mapping[str, str] | None = None,
    ) -> None:
        who = f"ProducerWorkload({producer_id!r})"
        if not producer_id:
            raise WorkloadConfigError(who, "producer_id", producer_id, "a non-empty string")
        if not topic:
            raise WorkloadConfigError(who, "topic", topic, "a non-empty topic name")
        if not rate > 0:
            raise WorkloadConfigError(who, "rate", rate, "messages per second > 0")
        acks_s = str(acks).lower()
        if acks_s not in _ACKS:
            raise WorkloadConfigError(who, "acks", acks, "one of '0', '1', 'all' (or '-1')")
        if idempotence and _ACKS[acks_s] != "all":
            raise WorkloadConfigError(who, "acks", acks, "'all' when idempotence is on (librdkafka requires it)")
        if keys < 0:
            raise WorkloadConfigError(who, "keys", keys, "0 (no keys) or a positive key-space size")
        if value_base < 0:
            raise WorkloadConfigError(who, "value_base", value_base, "a non-negative integer")
        self.name = f"producer:{producer_id}"
        self.producer_id = producer_id
        self.topic = topic
        self.rate = float(rate)
        self.acks = _ACKS[acks_s]
        self.idempotence = idempotence
        self.keys = keys
        self.value_base = value_base
        self._sink = sink
        self._config: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "client.id": producer_id,
            "acks": self.acks,
            "enable.idempotence": idempotence,
            "logger": LIBRDKAFKA_LOGGER,
        }
        self._config.update(dict(extra_config or {}))
        self._config["error_cb"] = self._on_client_error
        self._producer: confluent_kafka.Producer | None = None
        self._settled = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._running = threading.Event()
        """Clear while the application is paused (the `pause` fault on `producer:<id>`)."""
        self._running.set()
        self._holding = threading.Event()
        """Set while the sender thread waits in `_hold`."""
        self._lock = threading.Lock()
        self._lifecycle = threading.Lock()
        """Held by `restart` and `close`: a restart never overlaps the teardown."""
        self._ended = False
        """`stop` or `close` was called: a restart under way starts no sending."""
        self._fatal_recorded = False
        """A fatal `client.error` is in the history for the current session."""
        self.sessions = 1
        """Client sessions so far (`restart` adds one)."""
        self._join_timeout_s = _JOIN_TIMEOUT_S
        """How long `stop`/`restart`/`close` wait for the sender thread to leave its loop."""
        self._failure: BaseException | None = None
        self.fatal_error: str | None = None
        """A fatal client error that ended sending (the cluster's doing, not the harness's), if any."""
        self._next_n = 0
        self._sent = 0
        self._acked = 0
        self._errors = 0

    # -- counters ------------------------------------------------------------------------------
    @property
    def sent(self) -> int:
        """Messages handed to produce() (including those that failed synchronously)."""
        return self._sent

    @property
    def acked(self) -> int:
        return self._acked

    @property
    def errors(self) -> int:
        return self._errors

    @property
    def in_flight(self) -> int:
        """Messages enqueued in librdkafka and not yet resolved by a delivery report."""
        producer = self._producer
        return len(producer) if producer is not None else 0

    @property
    def failure(self) -> BaseException | None:
        """The exception that ended the sender thread early, if any."""
        return self._failure

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._producer is not None or self._thread is not None:
            raise WorkloadError(f"{self.name}: start() called twice")
        try:
            self._producer = confluent_kafka.Producer(self._config)
        except (confluent_kafka.KafkaException, ValueError, TypeError) as exc:
            raise WorkloadError(f"{self.name}: cannot create the producer: {exc}") from exc
        self._thread = threading.Thread(target=self._run, name=f"workload-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End sending (idempotent); waits for the sender thread to leave its loop."""
        self._ended = True
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._join_timeout_s)

    def pause(self) -> None:
        """Hold the application's sending (the `pause` fault), as a long GC pause or a stalled application
        thread does: the sender thread waits before its next send (or the end of its open transaction) and
        serves no callbacks; librdkafka's own threads deliver what they were given meanwhile."""
        self._running.clear()

    def resume(self) -> None:
        """Let sending go on after `pause` (at the rate, not in a burst)."""
        self._running.set()

    @property
    def holding(self) -> bool:
        """The sender thread is held by `pause()`: it sends nothing more (nor ends its transaction) until `resume()`."""
        return self._holding.is_set()

    def _hold(self) -> None:
        """On the sender thread: wait while paused, until resumed or stopped."""
        if self._running.is_set():
            return
        self._holding.set()
        try:
            while not self._running.is_set() and not self._stop.is_set():
                self._running.wait(0.1)
        finally:
            self._holding.clear()

    def drain(self, timeout_s: float) -> None:
        """Serve delivery reports until none is outstanding or `timeout_s` passes (no raise)."""
        self.stop()
        self._settled = False
        producer = self._producer
        if producer is None:
            return
        deadline = Deadline.after(timeout_s)
        while len(producer) > 0:
            remaining = deadline.remaining()
            if remaining <= 0:
                return
            try:
                producer.flush(min(remaining, 0.5))
            except confluent_kafka.KafkaException as exc:
                if not is_fatal(exc):
                    raise
                return  # a fatal client error: nothing more will be delivered (close() purges the rest)
        self._settled = True

    @property
    def settled(self) -> bool:
        """The last `drain` ended with no message outstanding (`base.Settles`)."""
        return self._settled

    def restart(self, *, abrupt: bool = False, timeout_s: float = 30.0, zombie: bool = False) -> str:
        """A new client session, as an application redeploy makes: sending pauses; the old client delivers
        what it holds within `timeout_s` (abrupt: purges it at once), and what is left is purged (recorded
        as definite=false errors: unknown); a new client (an idempotent one gets a new producer id and
        epoch) sends on from the next value. What happened, in words."""
        if zombie:
            raise WorkloadError(f"{self.name}: only a transactional producer can be kept as a zombie")
        with self._lifecycle:
            old = self._halt_sender()
            held = left = len(old)
            try:
                if abrupt:
                    old.purge(in_queue=True, in_flight=True, blocking=False)
                left = old.flush(0.0 if abrupt else timeout_s)
                if left:
                    old.purge(in_queue=True, in_flight=True, blocking=False)
                old.flush(2.0)
            except confluent_kafka.KafkaException as exc:
                if not is_fatal(exc):  # a client a fatal error ended delivers nothing more: already recorded
                    raise
            self._producer = None
            del old  # librdkafka's handle goes before the new session starts
            self._new_session()
        purged = held if abrupt else left
        return (f"session {self.sessions}: {held} outstanding at the restart, "
                + (f"{purged} purged (outcome unknown)" if purged else "all delivered"))

    def _halt_sender(self) -> confluent_kafka.Producer:
        """For a restart (the lifecycle lock held): the running session's sender thread has left its loop; its
        client, still open."""
        thread = self._thread
        if thread is None or self._producer is None or self._ended:
            raise WorkloadError(f"{self.name}: restart() needs a running producer")
        self._stop.set()
        thread.join(self._join_timeout_s)
        if thread.is_alive():
            raise WorkloadError(f"{self.name}: the sender thread is alive after {self._join_timeout_s:g}s, "
                                f"in {where(thread)}")
        old = self._producer  # read after the join: a transactional session fenced meanwhile has a new client
        assert old is not None
        return old

    def _new_session(self) -> None:
        """For a restart (the lifecycle lock held): a new client and sender thread; a stop() that came
        meanwhile leaves the new client sending nothing."""
        self._new_client()
        self._stop.clear()
        if self._ended:
            self._stop.set()
        self._thread = threading.Thread(target=self._run, name=f"workload-{self.name}", daemon=True)
        self._thread.start()

    def _new_client(self) -> None:
        """The next session's client (the previous one already given up)."""
        self._producer = confluent_kafka.Producer(self._config)
        self._fatal_recorded = False
        self.sessions += 1

    def close(self) -> None:
        """Stop, purge whatever is unresolved (recorded as definite=false errors), free the client."""
        with self._lifecycle:
            self._close()

    def _close(self) -> None:
        failures: list[tuple[str, BaseException]] = []
        self._ended = True
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(self._join_timeout_s)
            if thread.is_alive():
                failures.append((f"{self.name}: join sender thread",
                                 TimeoutError(f"alive after {self._join_timeout_s:g}s, in {where(thread)}")))
        producer = self._producer
        if producer is not None:
            try:
                if len(producer) > 0:
                    producer.purge(in_queue=True, in_flight=True, blocking=False)
                    producer.flush(2.0)
            except Exception as exc:  # every teardown step is attempted
                if not is_fatal(exc):  # after a fatal client error the purge reports it again: already recorded
                    failures.append((f"{self.name}: purge outstanding messages", exc))
            self._producer = None
            del producer  # the last reference: librdkafka's handle and threads are destroyed here
        if self._failure is not None:
            failures.append((f"{self.name}: sender thread", self._failure))
            self._failure = None
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> ProducerWorkload:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the sender thread ---------------------------------------------------------------------
    def _run(self) -> None:
        producer = self._producer
        assert producer is not None
        try:
            self._send_loop(producer)
        except confluent_kafka.KafkaException as exc:
            if not is_fatal(exc):
                traceback.clear_frames(exc.__traceback__)
                self._failure = exc
                return
            self._fatal_end(producer, exc)
        except BaseException as exc:
            traceback.clear_frames(exc.__traceback__)  # keep the trace, not the clients in its frames
            self._failure = exc

    def _send_loop(self, producer: confluent_kafka.Producer) -> None:
        """Send at `rate` until `stop()`."""
        pace = Pacer(self.rate)
        while not self._stop.is_set():
            self._hold()
            if pace.wait(producer):
                self._send_one(producer)
                producer.poll(0)

    def _fatal_end(self, producer: confluent_kafka.Producer, exc: confluent_kafka.KafkaException) -> None:
        """A fatal client error (e.g. an idempotent producer's OUT_OF_ORDER_SEQUENCE_NUMBER when a broker
        lost what it had acknowledged): the client can send no more. That is the cluster's doing, recorded
        as `client.error` {fatal: true}; the producer stops sending, the run goes on. `error_cb` carries
        librdkafka's reason, but only from a poll: serve it now, and record the exception if it says nothing."""
        self.fatal_error = str(exc.args[0])
        with contextlib.suppress(Exception):
            producer.poll(0)
        if not self._fatal_recorded:
            self._on_client_error(exc.args[0])

    def _base(self, value: int, key: str | None) -> Send:
        """The `send` of a record, unstamped; its `ack` or `send.error` repeats its fields."""
        return Send(src=self.name, producer=self.producer_id, value=value, key=key, topic=self.topic, acks=self.acks)

    def _send_one(self, producer: confluent_kafka.Producer, partition: int | None = None) -> None:
        with self._lock:  # a zombie client (txn_producer) sends from another thread
            n = self._next_n
            self._next_n += 1
        value = self.value_base + n
        key = key_for(n, self.keys)
        base = self._base(value, key)
        self._sink(dataclasses.replace(base, wall=wall_ms()))
        with self._lock:
            self._sent += 1

        def on_delivery(err: confluent_kafka.KafkaError | None, msg: confluent_kafka.Message) -> None:
            self._on_delivery(base, err, msg)

        try:
            producer.produce(
                self.topic,
                value=encode_value(value),
                key=key.encode() if key is not None else None,
                partition=-1 if partition is None else partition,  # -1: RD_KAFKA_PARTITION_UA, the partitioner's
                on_delivery=on_delivery,
            )
        except BufferError as exc:
            self._record_error(base, "_QUEUE_FULL", str(exc), retriable=True, fatal=False, definite=True)
        except confluent_kafka.KafkaException as exc:
            kerr = exc.args[0] if exc.args and isinstance(exc.args[0], confluent_kafka.KafkaError) else None
            name = kerr.name() if kerr is not None else type(exc).__name__
            self._record_error(
                base,
                name,
                kerr.str() if kerr is not None else str(exc),
                retriable=bool(kerr and kerr.retriable()),
                fatal=bool(kerr and kerr.fatal()),
                definite=True,  # produce() failed before enqueueing: nothing was sent
            )

    def _on_delivery(self, base: Send, err: confluent_kafka.KafkaError | None, msg: confluent_kafka.Message) -> None:
        latency = msg.latency()
        latency_ms = round(latency * 1000.0, 3) if latency is not None else None
        if err is None:
            offset = msg.offset()
            self._sink(Ack(
                src=base.src, wall=wall_ms(), producer=base.producer, value=base.value, key=base.key,
                topic=base.topic, acks=base.acks, txn=base.txn, zombie=base.zombie, input_value=base.input_value,
                partition=msg.partition(), offset=offset if offset is not None and offset >= 0 else None,
                latency_ms=latency_ms,
            ))
            with self._lock:
                self._acked += 1
            return
        partition = msg.partition()
        self._record_error(
            base,
            err.name(),
            err.str(),
            retriable=err.retriable(),
            fatal=err.fatal(),
            definite=False,  # possibly transmitted: confluent-kafka hides librdkafka's persistence status
            partition=partition if partition is not None and partition >= 0 else None,
            latency_ms=latency_ms,
        )

    def _record_error(
        self, base: Send, name: str, detail: str, *, retriable: bool, fatal: bool, definite: bool,
        partition: int | None = None, latency_ms: float | None = None,
    ) -> None:
        self._sink(SendError(
            src=base.src, wall=wall_ms(), producer=base.producer, value=base.value, key=base.key, topic=base.topic,
            acks=base.acks, txn=base.txn, zombie=base.zombie, input_value=base.input_value, partition=partition,
            latency_ms=latency_ms, error=name, error_detail=detail, retriable=retriable, fatal=fatal,
            definite=definite,
        ))
        with self._lock:
            self._errors += 1

    def _on_client_error(self, err: confluent_kafka.KafkaError) -> None:
        if err.fatal():
            self._fatal_recorded = True
        self._sink(ClientError(src=self.name, wall=wall_ms(), client=self.name, error=err.name(),
                               error_detail=err.str(), fatal=err.fatal()))
