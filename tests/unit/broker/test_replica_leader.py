"""The leader's side of a controller ISR removal, without processes: a LeaderAndIsr that keeps this broker
leader at a higher leader epoch with a smaller ISR (the controller took a lost follower out of it, Kafka's
doRemoveReplicasFromIsr) must release the acks=all produces waiting on that follower at once, keep the other
followers' LEOs and re-time them as Kafka's Partition.makeLeader (isNewLeader = false) does."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

from harness.broker.replica import Partition, ReplicaManager
from harness.broker.server import Broker
from harness.model.isr import FollowerState


@dataclass
class _Log:
    log_end_offset: int
    high_watermark: int


@dataclass
class _Topics:
    plog: _Log
    notified: list[tuple[str, int]] = field(default_factory=list)

    def ensure_partition(self, topic: str, partition: int, configs: dict[str, str]) -> None:
        pass

    def partition(self, topic: str, partition: int) -> _Log:
        return self.plog

    def notify(self, topic: str, partition: int) -> None:
        self.notified.append((topic, partition))


@dataclass
class _Broker:
    topics: _Topics
    broker_id: int = 1
    now: int = 50_000

    def now_ms(self) -> int:
        return self.now


def _entry(leader_epoch: int, isr: list[int], zk_version: int) -> dict[str, Any]:
    return {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": leader_epoch, "isr": isr,
            "replicas": [1, 2, 3], "zk_version": zk_version, "controller_epoch": 2}


def test_isr_removal_by_the_controller_releases_waiting_acks_and_keeps_follower_leos() -> None:
    async def run() -> None:
        plog = _Log(log_end_offset=10, high_watermark=4)
        fake = _Broker(_Topics(plog))
        rm = ReplicaManager(cast(Broker, fake))
        part = Partition("t", 0, 1, 3, (1, 2, 3), (1, 2, 3), 7, 1, followers={
            2: FollowerState(2, leo=10, last_caught_up_ms=49_000, last_fetch_leader_leo=10, last_fetch_ms=49_000),
            3: FollowerState(3, leo=4, last_caught_up_ms=40_000, last_fetch_leader_leo=4, last_fetch_ms=40_000)})
        rm.partitions[("t", 0)] = part
        waiting: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        part.acks.append((10, waiting))  # acks=all up to offset 10: broker 3 (dead) holds it back
        assert rm.apply(_entry(4, [1, 2], 8)) == 0
        assert rm.partitions[("t", 0)] is part, "still the same leader partition (no become-leader reset)"
        assert (part.leader_epoch, part.isr, part.zk_version, part.controller_epoch) == (4, (1, 2), 8, 2)
        assert plog.high_watermark == 10 and waiting.done() and waiting.exception() is None
        assert part.followers[2] == FollowerState(2, 10, 50_000, 10, 50_000)
        assert part.followers[3] == FollowerState(3, 4, 0, 10, 50_000), "out of the ISR: never caught up"
        # The same epoch again (a re-sent LeaderAndIsr) changes nothing but what it carries.
        assert rm.apply(_entry(4, [1, 2], 8)) == 0 and part.followers[2].last_caught_up_ms == 50_000
        # An older epoch is ignored.
        assert rm.apply(_entry(3, [1, 2, 3], 7)) == 0 and part.isr == (1, 2)
    asyncio.run(run())
