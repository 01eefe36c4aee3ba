"""The leader's side of a controller ISR removal, without processes: a LeaderAndIsr that keeps this broker
leader at a higher leader epoch with a smaller ISR (the controller took a lost follower out of it, Kafka's
doRemoveReplicasFromIsr) must release the acks=all produces waiting on that follower at once, keep the other
followers' LEOs and re-time them as Kafka's Partition.makeLeader (isNewLeader = false) does; a LeaderAndIsr
naming no leader leaves the log whole."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

from harness.broker.config import BrokerConfig
from harness.broker.metadata import MetadataCache
from harness.broker.replica import Partition, ReplicaManager
from harness.broker.topics import TopicStore
from harness.model.isr import FollowerState


@dataclass
class _Log:
    log_end_offset: int
    high_watermark: int

    def truncate_to(self, offset: int) -> None:
        self.log_end_offset = min(self.log_end_offset, offset)
        self.high_watermark = min(self.high_watermark, offset)


@dataclass
class _Fetchers:
    fetching: dict[tuple[str, int], int] = field(default_factory=dict)

    def add(self, tp: tuple[str, int], leader: int, leader_epoch: int) -> None:
        self.fetching[tp] = leader

    def remove(self, tp: tuple[str, int]) -> None:
        self.fetching.pop(tp, None)


class _Groups:
    def on_leadership(self, tp: tuple[str, int], leading: bool) -> None:
        pass


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
    fetchers: _Fetchers = field(default_factory=_Fetchers)
    groups: _Groups = field(default_factory=_Groups)
    producers: dict[tuple[str, int], Any] = field(default_factory=dict)

    def now_ms(self) -> int:
        return self.now

    def replica_manager(self) -> ReplicaManager:
        """Wired as the broker wires it, with these fakes as its collaborators."""
        return ReplicaManager(BrokerConfig(broker_id=self.broker_id), cast(TopicStore, self.topics), MetadataCache(),
                              self.producers, self.fetchers, self.groups.on_leadership, lambda: None, self.now_ms)


def _entry(leader_epoch: int, isr: list[int], zk_version: int, leader: int = 1) -> dict[str, Any]:
    return {"topic": "t", "partition": 0, "leader": leader, "leader_epoch": leader_epoch, "isr": isr,
            "replicas": [1, 2, 3], "zk_version": zk_version, "controller_epoch": 2}


def test_isr_removal_by_the_controller_releases_waiting_acks_and_keeps_follower_leos() -> None:
    async def run() -> None:
        plog = _Log(log_end_offset=10, high_watermark=4)
        fake = _Broker(_Topics(plog))
        rm = fake.replica_manager()
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


def test_a_restarted_last_isr_member_told_no_leader_keeps_its_whole_log_and_leads_with_it() -> None:
    """LeaderAndIsr with leader -1 (offline partition, the restarted broker is the last ISR member) neither
    fetches nor truncates to the checkpointed HW (Kafka's makeFollowers: no follower of an unavailable
    leader); elected next, the broker leads with every record it had and its HW reaches its LEO."""
    async def run() -> None:
        plog = _Log(log_end_offset=42, high_watermark=40)  # HW read from a checkpoint written before 40, 41
        fake = _Broker(_Topics(plog))
        rm = fake.replica_manager()
        fake.fetchers.fetching[("t", 0)] = 2
        assert rm.apply(_entry(1, [1], 3, leader=-1)) == 0
        assert plog.log_end_offset == 42 and ("t", 0) not in fake.fetchers.fetching
        assert rm.apply(_entry(2, [1], 4, leader=1)) == 0
        assert rm.leading("t", 0) is not None
        assert (plog.log_end_offset, plog.high_watermark) == (42, 42)
        # A follower of a live new leader still truncates to its HW here (difference 6 of docs/apache-kafka.md).
        assert rm.apply(_entry(3, [2, 1], 5, leader=2)) == 0
        assert fake.fetchers.fetching[("t", 0)] == 2 and plog.log_end_offset == 42  # HW 42: nothing to cut
    asyncio.run(run())
