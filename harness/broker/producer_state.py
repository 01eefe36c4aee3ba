"""Idempotent-producer state: producer ids, epochs and sequence numbers per partition.

Owns the rules of Kafka's ProducerStateManager for non-transactional idempotent producers: the
last five batches of each producer id are remembered per partition; a retried batch matching
one of them is a duplicate and is answered with its original offset instead of being appended;
an older epoch is fenced (INVALID_PRODUCER_EPOCH); a new epoch must start at sequence 0; a gap
in sequence is OUT_OF_ORDER_SEQUENCE_NUMBER. State is rebuilt from the batch headers of the log
at start-up, so deduplication holds across a broker restart. Producer ids come in blocks of 1000 claimed in
ZooKeeper, as Kafka's brokers claim them (`ProducerIds`).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.broker.records import BatchHeader
from harness.zk.producer_id_block import BLOCK_SIZE, claim_block

NONE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
CACHED_BATCHES = 5


@dataclass(frozen=True, slots=True)
class CachedBatch:
    first_seq: int
    last_seq: int
    base_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[CachedBatch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class PartitionProducers:
    """Producer entries of one partition."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, h: BatchHeader) -> tuple[int, int | None]:
        """(error code, base offset of the original batch when `h` is a duplicate)."""
        if h.producer_id < 0:
            return NONE, None
        entry = self.entries.get(h.producer_id)
        if entry is None:
            return (NONE, None) if h.base_sequence == 0 else (OUT_OF_ORDER_SEQUENCE_NUMBER, None)
        if h.producer_epoch < entry.epoch:
            return INVALID_PRODUCER_EPOCH, None
        if h.producer_epoch > entry.epoch:
            return (NONE, None) if h.base_sequence == 0 else (OUT_OF_ORDER_SEQUENCE_NUMBER, None)
        for b in entry.batches:
            if b.first_seq == h.base_sequence and b.last_seq == h.last_sequence:
                return NONE, b.base_offset
        if h.base_sequence != (entry.last_seq + 1) % (2**31):
            return OUT_OF_ORDER_SEQUENCE_NUMBER, None
        return NONE, None

    def update(self, h: BatchHeader, base_offset: int) -> None:
        if h.producer_id < 0:
            return
        entry = self.entries.get(h.producer_id)
        if entry is None or h.producer_epoch > entry.epoch:
            entry = self.entries[h.producer_id] = ProducerEntry(h.producer_epoch)
        entry.batches.append(CachedBatch(h.base_sequence, h.last_sequence, base_offset))


class ProducerIds:
    """Allocates producer ids unique across the cluster and its restarts: blocks of 1000 claimed in
    ZooKeeper's `/latest_producer_id_block` (`harness.zk.producer_id_block`), as Kafka's broker does; without
    ZooKeeper (a broker tested alone), blocks persisted in `<directory>/producer-id-block`, unique across
    restarts of this broker only. `zk()` gives the broker's ZooKeeper client once it has one."""

    def __init__(self, directory: Path, broker_id: int, zk: Callable[[], Any] | None = None, *,
                 reuse: bool = False) -> None:
        self.path = directory / "producer-id-block"
        self.reuse = reuse
        """The `reuse_producer_ids` bug flag: every allocation is id 0."""
        self._next = 0
        self._end = 0
        self._broker_id = broker_id
        self._zk = zk or (lambda: None)
        self._lock = asyncio.Lock()

    async def allocate(self) -> int:
        if self.reuse:
            return 0
        async with self._lock:
            if self._next >= self._end:
                self._next, self._end = await asyncio.to_thread(self._claim)
            pid = self._next
            self._next += 1
            return pid

    def _claim(self) -> tuple[int, int]:
        """The next block as [start, end): from ZooKeeper, or the local file."""
        client = self._zk()
        if client is not None:
            block = claim_block(client, self._broker_id)
            return block.start, block.end + 1
        start = self._read()
        self._write(start + BLOCK_SIZE)
        return start, start + BLOCK_SIZE

    def _read(self) -> int:
        try:
            return int(self.path.read_text().strip() or "0")
        except FileNotFoundError:
            return 0

    def _write(self, value: int) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(str(value))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
