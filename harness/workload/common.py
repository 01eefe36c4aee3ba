"""Shared pieces of the workloads: errors, value/key encoding, timestamps, the decoding of
librdkafka's consumer-group metadata blob (the source of the generation of assign/revoke/commit), and the probe
that says whether a consumer's librdkafka main thread still answers (`answers`), the producers' `Pacer`, `is_fatal`
(a librdkafka error that ends a client) and `where` (the frames of a thread that would not end).
"""

from __future__ import annotations

import hashlib
import logging
import struct
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka

from harness.errors import HarnessError

LIBRDKAFKA_LOGGER = logging.getLogger("kafka_chaos.librdkafka")
"""Every harness client hands librdkafka's log lines to this logger (config `logger`), not to stderr;
the runner writes them to `clients.log` in the run directory."""
LIBRDKAFKA_LOGGER.propagate = False
LIBRDKAFKA_LOGGER.addHandler(logging.NullHandler())

_CGMD_MAGIC = b"CGMDv2:"


class WorkloadError(HarnessError):
    """A workload was configured or used wrongly, or one of its client threads failed."""


class WorkloadConfigError(WorkloadError):
    """A workload constructor argument is invalid: names the workload, the field and the bad value."""

    def __init__(self, workload: str, field: str, value: object, expected: str) -> None:
        self.workload = workload
        self.field = field
        self.value = value
        super().__init__(f"{workload}: {field}={value!r} is invalid; expected {expected}")


def wall_ms() -> int:
    """Epoch milliseconds now (passed as `wall` so the history keeps the observation time)."""
    return int(time.time() * 1000)


def txn_abort_drawn(seed: int, producer: str, txn: int, rate: float) -> bool:
    """Whether transaction `txn` of `producer` is aborted on purpose: the first 53 bits of SHA-256 of
    "seed:producer:txn" as a fraction of 1, below `rate`. A pure function of the seed, so both clients draw the same
    transactions (the Java worker's `TxnProducerRole.abortDrawn` computes the same number)."""
    digest = hashlib.sha256(f"{seed}:{producer}:{txn}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") >> 11) / 2.0**53 < rate


def encode_value(value: int) -> bytes:
    """Message value: the decimal integer as ASCII bytes."""
    return str(value).encode("ascii")


def key_for(n: int, keys: int) -> str | None:
    """Key of the n-th message: `k<n % keys>`, or None when keys == 0."""
    return None if keys <= 0 else f"k{n % keys}"


def decode_value(raw: bytes | str | None) -> int | str | None:
    """A consumed value back to its integer; anything that is not a decimal integer stays text."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        return int(text)
    except ValueError:
        return text


def decode_key(raw: bytes | str | None) -> str | None:
    if raw is None:
        return None
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """What librdkafka's serialized consumer-group metadata says at the moment it is read."""

    group: str
    generation: int | None
    member_id: str | None


def parse_group_metadata(blob: object) -> GroupMetadata | None:
    """Decode `Consumer.consumer_group_metadata()` (librdkafka's "CGMDv2:" serialization).

    Layout (librdkafka 1.4+): magic, int32 generation id in host byte order, then NUL-terminated
    group id and member id, then a flag byte (and the group.instance.id when set). A generation
    of -1 (no current generation) is returned as None. Returns None for an unknown layout.
    """
    if not isinstance(blob, (bytes, bytearray)) or not blob.startswith(_CGMD_MAGIC):
        return None
    body = bytes(blob[len(_CGMD_MAGIC) :])
    if len(body) < 4:
        return None
    (generation,) = struct.unpack("=i", body[:4])
    rest = body[4:]
    parts = rest.split(b"\x00", 2)
    if len(parts) < 2:
        return None
    group = parts[0].decode("utf-8", "replace")
    member = parts[1].decode("utf-8", "replace") or None
    return GroupMetadata(group=group, generation=None if generation < 0 else generation, member_id=member)


def answers(consumer: confluent_kafka.Consumer, partitions: Sequence[tuple[str, int]], timeout_s: float) -> bool:
    """Whether librdkafka's main thread still serves `consumer`. `committed()` is served there and, unlike
    `consumer_group_metadata()`, `position()`, the cached watermarks, `assignment()` or `unsubscribe()`, releases
    Python's GIL while it waits; so a client whose main thread is deadlocked (librdkafka 2.16.0, docs/apache-kafka.md
    "A librdkafka consumer that deadlocks") costs `timeout_s` here instead of freezing every thread of the harness.
    Any answer but a timeout, an error included, is an answer. `partitions`: one or more to ask about (any)."""
    try:
        consumer.committed([confluent_kafka.TopicPartition(t, p) for t, p in partitions], timeout=timeout_s)
    except confluent_kafka.KafkaException as exc:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], confluent_kafka.KafkaError) else None
        return err is None or err.code() != confluent_kafka.KafkaError._TIMED_OUT
    return True


MAX_LAG_S = 1.0
"""How far behind its rate a `Pacer` may fall before it resumes from now instead of bursting."""


def where(thread: threading.Thread) -> str:
    """Where a thread that would not end is: its innermost frames of this project, or 'unknown'."""
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return "unknown"
    ours = [f for f in traceback.extract_stack(frame) if "/harness/" in f.filename]
    return " <- ".join(f"{f.name} ({Path(f.filename).name}:{f.lineno})" for f in reversed(ours[-4:])) or "unknown"


class Pacer:
    """Paces sends at `rate` per second; after a stall it resumes the rate instead of bursting."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.next_at = time.monotonic()

    def wait(self, producer: confluent_kafka.Producer) -> bool:
        """True when the next send is due (and counts it as sent); else serves callbacks for up to 50 ms."""
        now = time.monotonic()
        if now < self.next_at:
            producer.poll(min(self.next_at - now, 0.05))
            return False
        self.next_at += self.interval
        if now - self.next_at > MAX_LAG_S:
            self.next_at = now
        return True


def is_fatal(exc: BaseException) -> bool:
    """A librdkafka error that leaves the client unusable (`KafkaError.fatal()`)."""
    kerr = exc.args[0] if exc.args and isinstance(exc.args[0], confluent_kafka.KafkaError) else None
    return isinstance(exc, confluent_kafka.KafkaException) and kerr is not None and kerr.fatal()
