"""The read-process-write workload (exactly-once pipeline): one librdkafka consumer (read_committed, no
auto-commit) reads an input topic, and a transactional producer writes one output record per input record
and commits the consumed offsets in the same transaction (`send_offsets_to_transaction`, KIP-98/KIP-447),
the loop Kafka Streams and every exactly-once application run.

It is a `TransactionalProducerWorkload` whose sender thread consumes instead of pacing: each transaction holds
the records of one `consume()` batch (at most `records`), written to the output partition of the same number
(modulo the output's partition count). Events (src `pipeline:<id>`): `pipe.read` {pipeline, group, topic,
partition, offset, value, txn} per input record; `send`/`ack`/`send.error` of the output records add
`input_value` (the input value the record was made from; not `source`, which `controller` events use for their
observer); `txn.begin`, and `txn.commit` adds `offsets` ([[topic,
partition, next offset], …], what the transaction commits for the group). A transaction that does not commit
rewinds the consumer to the group's committed offsets, so its input is read again, as an exactly-once
application must; so does a new session after a fence (`txn.fenced`), whose new consumer starts from them. One
member per pipeline (its group has no rebalances of its own).

librdkafka's send_offsets_to_transaction ignores its timeout while the group coordinator is down, and blocks until
some broker changes state, which may be never (librdkafka#5456 and #5511, open; seen here when a kill took the
group coordinator away mid-call: 2.5 minutes, until teardown). The call therefore runs on a helper thread; when it
has not returned `HUNG_GRACE_S` after its timeout the session is given up, as an application's watchdog would:
`client.error` {error `_TIMED_OUT`, fatal false} names the hang, the transaction ends `aborted` (its commit was
never asked for; the next session's init_transactions aborts it) and a new session goes on from the committed
offsets. The stuck call keeps the old client alive until it returns. Before it, `position()` and
`consumer_group_metadata()` hold Python's GIL while they wait for the consumer's librdkafka main thread, so a
consumer whose main thread deadlocked (librdkafka 2.16.0; docs/apache-kafka.md "A librdkafka consumer that
deadlocks") would freeze the harness there: they are called only once `common.answers` has seen that thread answer
within the call timeout, and otherwise the session is given up the same way.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import confluent_kafka

from harness.history.events import PipeRead, Send
from harness.history.jsonl import EventSink
from harness.workload.common import LIBRDKAFKA_LOGGER, answers, decode_value, wall_ms
from harness.workload.txn_producer import CALL_TIMEOUT_S, TransactionalProducerWorkload

_COORDINATOR_MOVING = frozenset({
    confluent_kafka.KafkaError.NOT_COORDINATOR, confluent_kafka.KafkaError.COORDINATOR_NOT_AVAILABLE,
    confluent_kafka.KafkaError.COORDINATOR_LOAD_IN_PROGRESS, confluent_kafka.KafkaError._TIMED_OUT,
})
"""Answers of the committed-offsets lookup while the group's coordinator moves: asked again."""

HUNG_GRACE_S = 10.0
"""How long past its own timeout send_offsets_to_transaction may take before the session is given up."""


class HungCall(Exception):
    """A librdkafka call has not returned long after its own timeout."""


def call_bounded(call: Callable[[], object], limit_s: float, what: str) -> None:
    """`call()` on a helper thread, its exception re-raised here; `HungCall` when it has not returned within
    `limit_s` (the helper thread is left to finish on its own)."""
    done = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # re-raised on the caller's thread
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=f"call-{what}", daemon=True).start()
    if not done.wait(limit_s):
        raise HungCall(f"{what} has not returned within {limit_s:g}s")
    if failure:
        raise failure[0]


class PipelineWorkload(TransactionalProducerWorkload):
    """Consume `input_topic` as `group`, write to `output_topic` and commit offsets in one transaction."""

    def __init__(
        self,
        bootstrap_servers: str,
        sink: EventSink,
        *,
        pipeline_id: str,
        group: str,
        input_topic: str,
        output_topic: str,
        transactional_id: str,
        records: int = 10,
        timeout_s: float = 60.0,
        value_base: int = 0,
        extra_config: Mapping[str, str] | None = None,
        consumer_config: Mapping[str, str] | None = None,
    ) -> None:
        """`extra_config` goes to the output's producer, `consumer_config` to the input's consumer (a secured
        cluster's settings go to both)."""
        super().__init__(bootstrap_servers, sink, producer_id=pipeline_id, topic=output_topic, rate=1.0,
                         transactional_id=transactional_id, records=records, timeout_s=timeout_s,
                         value_base=value_base, extra_config=extra_config)
        self.name = f"pipeline:{pipeline_id}"
        self.group = group
        self.input_topic = input_topic
        self._consumer_config: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers, "group.id": group, "isolation.level": "read_committed",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "logger": LIBRDKAFKA_LOGGER,
            "client.id": f"{pipeline_id}-in", **dict(consumer_config or {})}
        self._source: int | None = None
        self._offsets: tuple[tuple[str | int, ...], ...] | None = None
        self.caught_up = threading.Event()
        """Set while the last consume() found nothing new and every transaction so far ended."""

    def _base(self, value: int, key: str | None) -> Send:
        base = super()._base(value, key)
        return base if self._source is None else dataclasses.replace(base, input_value=self._source)

    def _send_loop(self, producer: confluent_kafka.Producer) -> None:
        consumer = confluent_kafka.Consumer(cast(dict[str, Any], self._consumer_config))
        try:
            consumer.subscribe([self.input_topic])
            if not self._init(producer):
                return
            partitions = self._partition_count(producer)
            while not self._stop.is_set():
                batch = [m for m in consumer.consume(self.records, 0.2) if m.error() is None]
                if not batch:
                    self.caught_up.set()
                    producer.poll(0)
                    continue
                self.caught_up.clear()
                if not self._one_transaction(producer, consumer, batch, partitions):
                    self._renew = True  # the session was given up: `_run` goes on with a new one
                    return
        finally:
            consumer.close()

    def _one_transaction(self, producer: confluent_kafka.Producer, consumer: confluent_kafka.Consumer,
                         batch: list[confluent_kafka.Message], partitions: int) -> bool:
        """Read `batch`, write its outputs and commit them with the offsets; False when the session is given up."""
        self._begin(producer)
        assert self._open is not None
        txn = self._open[0]
        for msg in batch:
            value = decode_value(msg.value())
            self._sink(PipeRead(src=self.name, wall=wall_ms(), pipeline=self.producer_id, group=self.group,
                                topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), value=value,
                                txn=txn))
            self._source = value if isinstance(value, int) else None
            part = msg.partition()
            self._send_one(producer, part % partitions if partitions and part is not None else None)
        self._source = None
        if not answers(consumer, [(str(batch[0].topic()), int(batch[0].partition() or 0))], CALL_TIMEOUT_S):
            self._give_up(txn, f"the input's consumer did not answer committed() within {CALL_TIMEOUT_S:g}s: "
                          "librdkafka's main thread is wedged, and position() or consumer_group_metadata() would "
                          "freeze the harness holding the GIL (docs/apache-kafka.md, 'A librdkafka consumer that "
                          "deadlocks'); the client is given up")
            return False
        positions = consumer.position(consumer.assignment())
        self._offsets = tuple((tp.topic, tp.partition, tp.offset) for tp in positions if tp.offset >= 0)
        metadata = consumer.consumer_group_metadata()
        try:
            call_bounded(lambda: producer.send_offsets_to_transaction(positions, metadata, CALL_TIMEOUT_S),
                         CALL_TIMEOUT_S + HUNG_GRACE_S, "send_offsets_to_transaction")
        except HungCall as exc:
            self._give_up(txn, f"{exc} (its timeout is {CALL_TIMEOUT_S:g}s): librdkafka#5456/#5511, the call ignores "
                          "its timeout while the group coordinator is down; the client is given up")
            return False
        except confluent_kafka.KafkaException as exc:
            if not exc.args[0].txn_requires_abort() and not exc.args[0].retriable():
                raise
            self._open = (txn, True)  # it cannot commit: abort it, and read the batch again
        committed = self._end(producer) == "committed"
        self._offsets = None
        if not committed:
            self._rewind(consumer)
        return True

    def _give_up(self, txn: int, detail: str) -> None:
        """The session is abandoned with transaction `txn` open (see the module docstring)."""
        self._on_client_error(confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT, detail))
        assert self._open is not None
        self._record_end(txn, self._open[1], "aborted", "_TIMED_OUT",
                         f"{detail}; its commit was never asked for, and the next session's init_transactions "
                         "aborts it")
        self._open, self._offsets = None, None

    @staticmethod
    def _rewind(consumer: confluent_kafka.Consumer) -> None:
        """Seek every assigned partition back to the group's committed offset (the start, if none). While the
        group's coordinator moves (a fault on it), the offsets lookup answers NOT_COORDINATOR or the like: it is
        asked again, for up to CALL_TIMEOUT_S (seen in CI: the sender thread died of it)."""
        assigned = consumer.assignment()
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            try:
                committed = consumer.committed(assigned, timeout=CALL_TIMEOUT_S)
                break
            except confluent_kafka.KafkaException as exc:
                error = exc.args[0] if exc.args else None
                moving = isinstance(error, confluent_kafka.KafkaError) and (
                    error.retriable() or error.code() in _COORDINATOR_MOVING)
                if not moving or time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else confluent_kafka.OFFSET_BEGINNING
            consumer.seek(confluent_kafka.TopicPartition(tp.topic, tp.partition, offset))

    def _renew_session(self) -> None:
        self._source, self._offsets = None, None  # what the fenced session was doing is over
        super()._renew_session()

    def _end_offsets(self) -> tuple[tuple[str | int, ...], ...] | None:
        return self._offsets
