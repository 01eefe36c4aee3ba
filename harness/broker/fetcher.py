"""Follower replication: one fetcher task per leader broker, pulling with the standard Fetch API.

Owns `FetcherManager`: which partitions this broker follows and from which leader (at which leader
epoch), and one asyncio task per leader that sends Fetch v11 with `replica_id` = this broker's id
over this broker's inter-broker listener (the leader's endpoint of that name, from the metadata
cache), appends the returned batches to the local log keeping the leader's offsets and epochs,
and moves the local HW to min(leader HW, local LEO). OFFSET_OUT_OF_RANGE truncates to the
leader's HW; NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH (the leader has not applied the same
LeaderAndIsr yet, or this one is stale) park the partition for a back-off, or until the next
LeaderAndIsr. Connection failures back off and retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from kafka.protocol.consumer import FetchRequest, FetchResponse

from harness.broker.interbroker import PeerConnection, PeerError
from harness.broker.records import iter_headers
from harness.errors import ProtocolError

if TYPE_CHECKING:
    from harness.broker.config import BrokerConfig
    from harness.broker.metadata import MetadataCache
    from harness.broker.topics import TopicStore

log = logging.getLogger(__name__)
FETCH_VERSION = 11
OFFSET_OUT_OF_RANGE = 1
PARK_S = 0.5
TP = tuple[str, int]


class FetcherManager:
    """Followed partitions grouped by leader, one fetch loop per leader."""

    def __init__(self, config: BrokerConfig, topics: TopicStore, metadata: MetadataCache) -> None:
        self.config = config
        self.topics = topics
        self.metadata = metadata
        self.follow: dict[TP, tuple[int, int]] = {}
        self.parked: dict[TP, float] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}

    def add(self, tp: TP, leader: int, leader_epoch: int) -> None:
        old = self.follow.get(tp)
        self.follow[tp] = (leader, leader_epoch)
        self.parked.pop(tp, None)
        if leader < 0:
            return
        if leader not in self._tasks or self._tasks[leader].done():
            self._wake[leader] = asyncio.Event()
            self._tasks[leader] = asyncio.create_task(self._run(leader))
        self._wake[leader].set()
        if old is not None and old[0] != leader and old[0] in self._wake:
            self._wake[old[0]].set()

    def remove(self, tp: TP) -> None:
        self.follow.pop(tp, None)
        self.parked.pop(tp, None)

    def _mine(self, leader: int) -> list[tuple[TP, int]]:
        now = asyncio.get_running_loop().time()
        for tp in [tp for tp, until in self.parked.items() if until <= now]:
            del self.parked[tp]
        return [(tp, ep) for tp, (ld, ep) in self.follow.items() if ld == leader and tp not in self.parked]

    def _listener(self) -> str:
        return self.config.inter_broker_listener()

    async def _run(self, leader: int) -> None:
        conn: PeerConnection | None = None
        backoff = 0.05
        try:
            while True:
                mine = self._mine(leader)
                if not mine:
                    if not any(ld == leader for ld, _ in self.follow.values()):
                        return
                    wake = self._wake[leader]
                    wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), PARK_S)
                    continue
                ep = self.metadata.endpoint(leader, self._listener())
                if ep is None:
                    await asyncio.sleep(0.2)
                    continue
                if conn is None or (conn.host, conn.port) != (ep.host, ep.port):
                    if conn is not None:
                        conn.close()
                    conn = PeerConnection(ep.host, ep.port, f"replica-fetcher-{self.config.broker_id}",
                                          self.config.controller_socket_timeout_ms / 1000)
                try:
                    await self._fetch_once(conn, mine)
                    backoff = 0.05
                except PeerError as exc:
                    log.debug("fetch from broker %d failed: %s", leader, exc)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 1.0)
        finally:
            if conn is not None:
                conn.close()
            self._tasks.pop(leader, None)

    async def _fetch_once(self, conn: PeerConnection, mine: list[tuple[TP, int]]) -> None:
        cfg = self.config
        FT = FetchRequest.FetchTopic
        FP = FT.FetchPartition
        by_topic: dict[str, list[object]] = {}
        for (topic, p), epoch in mine:
            plog = self.topics.partition(topic, p)
            if plog is None:
                continue
            by_topic.setdefault(topic, []).append(FP(
                partition=p, current_leader_epoch=epoch, fetch_offset=plog.log_end_offset,
                log_start_offset=plog.log_start_offset, partition_max_bytes=cfg.replica_fetch_max_bytes))
        req = FetchRequest(version=FETCH_VERSION, replica_id=self.config.broker_id,
                           max_wait_ms=cfg.replica_fetch_wait_max_ms, min_bytes=1,
                           max_bytes=max(cfg.replica_fetch_max_bytes, 1 << 20) * 4, isolation_level=0,
                           session_id=0, session_epoch=-1,
                           topics=[FT(topic=t, partitions=ps) for t, ps in by_topic.items()],
                           forgotten_topics_data=[], rack_id="")
        timeout_s = (cfg.replica_fetch_wait_max_ms + cfg.controller_socket_timeout_ms) / 1000
        resp = await conn.kafka(req, FetchResponse, FETCH_VERSION, timeout_s=timeout_s)
        for t in resp.responses:
            for pd in t.partitions:
                self._apply(t.topic, pd)

    def _apply(self, topic: str, pd: object) -> None:
        tp = (topic, int(pd.partition_index))  # type: ignore[attr-defined]
        if tp not in self.follow:
            return
        plog = self.topics.partition(*tp)
        if plog is None:
            return
        err = int(pd.error_code)  # type: ignore[attr-defined]
        hw = int(pd.high_watermark)  # type: ignore[attr-defined]
        if err == OFFSET_OUT_OF_RANGE:
            target = max(min(hw, plog.log_end_offset), 0)
            log.warning("%s-%d: fetch offset %d out of range on the leader; truncating to %d", topic, tp[1],
                        plog.log_end_offset, target)
            plog.truncate_to(target)
            return
        if err:
            log.info("%s-%d: leader answered error %d; retrying in %.1f s or on the next LeaderAndIsr", topic,
                     tp[1], err, PARK_S)
            self.parked[tp] = asyncio.get_running_loop().time() + PARK_S
            return
        records = pd.records or b""  # type: ignore[attr-defined]
        if records:
            buf = bytearray(records)
            try:
                headers = list(iter_headers(buf))
            except ProtocolError as exc:
                log.warning("%s-%d: malformed batch from the leader: %s", topic, tp[1], exc)
                return
            for h in headers:
                if h.next_offset <= plog.log_end_offset:
                    continue
                if h.base_offset != plog.log_end_offset:
                    log.warning("%s-%d: leader batch at %d does not continue local LEO %d; refetching", topic,
                                tp[1], h.base_offset, plog.log_end_offset)
                    break
                plog.append(bytearray(buf[h.position:h.position + h.length]), h.leader_epoch, h.count)
        new_hw = min(hw, plog.log_end_offset)
        if new_hw > plog.high_watermark:
            plog.high_watermark = new_hw
        self.topics.notify(*tp)

    def close(self) -> None:
        for t in self._tasks.values():
            t.cancel()
        self._tasks.clear()

