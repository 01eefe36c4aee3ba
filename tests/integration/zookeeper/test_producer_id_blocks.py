"""Producer-id blocks claimed in a real ZooKeeper (`/latest_producer_id_block`, as Kafka's ZkProducerIdManager
claims them): brokers claiming at the same time get disjoint, consecutive blocks, and a broker's allocator hands
out ids from the blocks it claims, never one another broker holds."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.broker.producer_state import ProducerIds
from harness.zk.producer_id_block import BLOCK_SIZE, claim_block

pytestmark = pytest.mark.integration


def test_brokers_claiming_at_once_get_disjoint_consecutive_blocks(zk_connect: str) -> None:
    claimed: list[tuple[int, int, int]] = []
    clients = [KazooClient(hosts=zk_connect, timeout=5.0) for _ in range(3)]

    def claim(broker: int, client: KazooClient) -> None:
        for _ in range(5):
            b = claim_block(client, broker)
            claimed.append((b.start, b.end, b.broker))

    try:
        for c in clients:
            c.start(timeout=10)
        threads = [threading.Thread(target=claim, args=(i + 1, c)) for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        for c in clients:
            c.stop()
            c.close()
    starts = sorted(s for s, _e, _b in claimed)
    assert starts == [i * BLOCK_SIZE for i in range(15)]
    assert all(e == s + BLOCK_SIZE - 1 for s, e, _b in claimed)
    assert sorted(b for _s, _e, b in claimed) == [1] * 5 + [2] * 5 + [3] * 5


def test_two_brokers_allocators_never_hand_out_the_same_id(zk_client: KazooClient, tmp_path: Path) -> None:
    one = ProducerIds(tmp_path / "1", 1, lambda: zk_client)
    two = ProducerIds(tmp_path / "2", 2, lambda: zk_client)

    async def allocate() -> list[int]:
        return [await ids.allocate() for _ in range(3) for ids in (one, two)]

    got = asyncio.run(allocate())
    assert len(set(got)) == len(got)
    assert sorted(got) == [0, 1, 2, 1000, 1001, 1002]
