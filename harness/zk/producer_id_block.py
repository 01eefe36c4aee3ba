"""`/latest_producer_id_block`: the producer-id block a ZooKeeper-mode Kafka broker claimed last, and claiming the
next one, as Kafka's `ZkProducerIdManager` does (`ProducerIdBlockZNode`).

The znode holds `{"version":1,"broker":<id>,"block_start":"<n>","block_end":"<m>"}` (both inclusive, longs
written as strings). A broker claims the next block by reading the znode and its version, and writing the
block after the one it holds with a conditional set on that version, again on a version conflict; an empty
(or absent) znode means the first block starts at 0. So no two brokers, and no restart of a broker, ever hand
out the same producer id.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from harness.zk._json import ZnodeDecodeError, dumps, int_field, loads
from harness.zk.paths import LATEST_PRODUCER_ID_BLOCK_PATH

BLOCK_SIZE = 1000
"""`ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`."""
_WHAT = LATEST_PRODUCER_ID_BLOCK_PATH


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker: int
    start: int
    end: int
    """Inclusive."""

    def encode(self) -> bytes:
        return dumps({"version": 1, "broker": self.broker, "block_start": str(self.start),
                      "block_end": str(self.end)})

    @staticmethod
    def decode(data: bytes | str | None) -> ProducerIdBlock:
        obj = loads(_WHAT, data)
        block = ProducerIdBlock(int_field(_WHAT, obj, "broker", data), int_field(_WHAT, obj, "block_start", data),
                                int_field(_WHAT, obj, "block_end", data))
        if block.start < 0 or block.end < block.start:
            raise ZnodeDecodeError(_WHAT, f"block {block.start}..{block.end} is not a valid range", data)
        return block


def claim_block(client: Any, broker_id: int, size: int = BLOCK_SIZE) -> ProducerIdBlock:
    """Claim the next block for `broker_id` through `client` (a kazoo client; blocking)."""
    from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

    while True:
        try:
            data, stat = client.get(LATEST_PRODUCER_ID_BLOCK_PATH)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):  # another broker made it meanwhile
                client.create(LATEST_PRODUCER_ID_BLOCK_PATH, b"", makepath=True)
            continue
        start = ProducerIdBlock.decode(data).end + 1 if data else 0
        block = ProducerIdBlock(broker_id, start, start + size - 1)
        try:
            client.set(LATEST_PRODUCER_ID_BLOCK_PATH, block.encode(), version=stat.version)
            return block
        except BadVersionError:
            continue  # another broker claimed one meanwhile: read again
