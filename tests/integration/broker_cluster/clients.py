"""Client helpers for the cluster tests: a background acks=all producer that records acks, and a reader."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.errors import HarnessTimeout


def create_topic(bootstrap: str, name: str, partitions: int = 1, rf: int = 3,
                 config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(name, partitions, rf, config=config or {})]).values():
        fut.result(30)


class AckingProducer:
    """Produces unique integer values to `topic` in a thread; `acked` holds (value, partition, offset)."""

    def __init__(self, bootstrap: str, topic: str, **conf: Any) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 2, "message.timeout.ms": 30000, "retry.backoff.ms": 50,
                                  "topic.metadata.refresh.interval.ms": 1000, **conf})
        self.acked: list[tuple[int, int, int]] = []
        self.errors: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)

    def _cb(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.acked.append((int(msg.value()), msg.partition(), msg.offset()))
        else:
            self.errors.append(str(err))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.producer.produce(self.topic, value=str(self.sent).encode(), on_delivery=self._cb)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.002)

    def __enter__(self) -> AckingProducer:
        self._thread.start()
        return self

    def wait_acks(self, n: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        target = len(self.acked) + n
        while len(self.acked) < target:
            if time.monotonic() > deadline:
                raise HarnessTimeout(f"{n} more acks on {self.topic}", timeout_s, len(self.acked),
                                     str(self.errors[-3:]))
            time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(30)


def read_all(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> list[int]:
    """Every value in `topic` from the start up to the current high watermarks."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
        ends = {p: _high_watermark(c, topic, p, timeout_s) for p in range(partitions)}
        c.assign(tps)
        seen: list[int] = []
        pos = {p: 0 for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while any(pos[p] < ends[p] for p in pos) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            seen.append(int(m.value() or b"-1"))
            pos[int(m.partition() or 0)] = int(m.offset() or 0) + 1
        return seen
    finally:
        c.close()


def _high_watermark(c: Consumer, topic: str, partition: int, timeout_s: float) -> int:
    """The partition's high watermark, asked again while the client's metadata still names a broker that no
    longer leads it (NOT_LEADER_FOR_PARTITION right after a leader move, until librdkafka refreshes)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return int(c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
