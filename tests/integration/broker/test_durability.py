"""Integration: kill -9 of a reference broker during acks=all produce loses nothing that was acknowledged.

Flush policy under test: `log.flush.interval.messages=1`, i.e. the broker fsyncs the partition's
active segment after every appended batch, before it sends the acknowledgement.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.fixtures.broker import ReferenceBroker

pytestmark = pytest.mark.integration


def test_kill9_during_acks_all_produce_then_restart_loses_no_acked_write(
        reference_broker_factory: Callable[..., ReferenceBroker]) -> None:
    """Every write acknowledged with acks=all on RF 1 is present at its acknowledged offset after
    SIGKILL + restart (fsync every batch), and idempotence leaves no duplicates across the restart."""
    broker = reference_broker_factory({"log.flush.interval.messages": "1"})
    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("durable", 3, 1)])["durable"].result(15)

    acked: dict[int, tuple[int, int]] = {}
    failed: list[str] = []
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "acks": "all", "linger.ms": 2,
                  "message.timeout.ms": 60000, "reconnect.backoff.max.ms": 200})

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked[int(msg.value())] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]

    stop = threading.Event()

    def produce_loop() -> None:
        i = 0
        while not stop.is_set():
            try:
                p.produce("durable", key=str(i % 31), value=str(i), on_delivery=on_delivery)
                i += 1
            except BufferError:
                p.poll(0.01)
            if i % 50 == 0:
                p.poll(0.001)

    thread = threading.Thread(target=produce_loop, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 5000 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(acked) >= 5000, f"only {len(acked)} acks before the kill"
        broker.kill()
        at_kill = len(acked)
        broker.start()
        deadline = time.monotonic() + 30
        while len(acked) < at_kill + 2000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(acked) >= at_kill + 2000, "producer did not resume after the restart"
    finally:
        stop.set()
        thread.join(10)
    assert p.flush(60) == 0
    assert not failed, failed[:5]

    c = Consumer({"bootstrap.servers": bs, "group.id": "audit", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    ends = {part: c.get_watermark_offsets(TopicPartition("durable", part), timeout=10)[1] for part in range(3)}
    c.subscribe(["durable"])
    found: dict[int, tuple[int, int]] = {}
    dupes = 0
    total = sum(ends.values())
    seen = 0
    deadline = time.monotonic() + 60
    while seen < total and time.monotonic() < deadline:
        for m in c.consume(2000, 0.5):
            assert m.error() is None, m.error()
            seen += 1
            v = int(m.value() or b"-1")
            dupes += v in found
            found[v] = (m.partition() or 0, m.offset() or 0)
    c.close()
    lost = [v for v, where in acked.items() if found.get(v) != where]
    assert not lost, f"{len(lost)} acknowledged writes lost or moved, e.g. {lost[:5]}"
    assert dupes == 0, f"{dupes} duplicates despite idempotence"
