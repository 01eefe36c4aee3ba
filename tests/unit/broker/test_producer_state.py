"""Unit tests of idempotent-producer deduplication and sequence checks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.broker.producer_state import (
    INVALID_PRODUCER_EPOCH,
    NONE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PartitionProducers,
    ProducerIds,
)
from harness.broker.records import BatchHeader


def hdr(pid: int, epoch: int, seq: int, n: int) -> BatchHeader:
    return BatchHeader(0, 0, 61, -1, 2, 0, 0, n - 1, 0, 0, pid, epoch, seq, n)


def test_in_order_batches_are_accepted_and_a_retry_is_a_duplicate() -> None:
    """A retried batch (same pid/epoch/sequences) is answered with its first offset, not appended again."""
    s = PartitionProducers()
    for seq, base in ((0, 0), (5, 5), (10, 10)):
        assert s.check(hdr(7, 0, seq, 5)) == (NONE, None)
        s.update(hdr(7, 0, seq, 5), base)
    assert s.check(hdr(7, 0, 5, 5)) == (NONE, 5)


def test_sequence_gap_is_out_of_order() -> None:
    """A batch that skips sequence numbers gets OUT_OF_ORDER_SEQUENCE_NUMBER."""
    s = PartitionProducers()
    s.update(hdr(7, 0, 0, 5), 0)
    assert s.check(hdr(7, 0, 9, 1))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert s.check(hdr(8, 0, 3, 1))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER  # unknown producer not at 0


def test_old_epoch_is_fenced_and_new_epoch_restarts_at_zero() -> None:
    """An older epoch is INVALID_PRODUCER_EPOCH; a newer one must start at sequence 0."""
    s = PartitionProducers()
    s.update(hdr(7, 1, 0, 5), 0)
    assert s.check(hdr(7, 0, 5, 1))[0] == INVALID_PRODUCER_EPOCH
    assert s.check(hdr(7, 2, 3, 1))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert s.check(hdr(7, 2, 0, 1)) == (NONE, None)


def test_non_idempotent_batches_are_not_tracked() -> None:
    """Producer id -1 means no idempotence: always accepted."""
    s = PartitionProducers()
    s.update(hdr(-1, -1, -1, 3), 0)
    assert s.check(hdr(-1, -1, -1, 3)) == (NONE, None) and s.entries == {}


def test_producer_ids_without_zookeeper_never_repeat_across_restarts(tmp_path: Path) -> None:
    """Alone (no ZooKeeper), ids come in blocks persisted locally: a new allocator (restart) starts after the
    last block."""
    a = ProducerIds(tmp_path, 0)
    first = [asyncio.run(a.allocate()) for _ in range(3)]
    b = ProducerIds(tmp_path, 0)
    assert asyncio.run(b.allocate()) > max(first)
