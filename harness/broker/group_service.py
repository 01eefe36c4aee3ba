"""The group coordinator service: one model `GroupCoordinator` per `__consumer_offsets` partition this broker leads.

Owns loading a partition when this broker becomes its leader (COORDINATOR_LOAD_IN_PROGRESS until
the replay finished; groups come back Empty with their last generation), unloading it when the
leadership goes (pending JoinGroup/SyncGroup requests of its groups are answered NOT_COORDINATOR,
members re-find the coordinator and re-join), pending requests as futures keyed by ticket, one
asyncio timer at the earliest model deadline, persisting each new generation to the group's
partition, and the two group bug flags (`generation_reuse`: a pinned first generation is reported
and mapped back; `double_assignment`: see `harness.broker.bugs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.broker import bugs
from harness.broker.clock import Clock, now_ms, wall_ms
from harness.broker.offsets import NotCoordinator
from harness.broker.topics import OFFSETS_TOPIC
from harness.model.group import Err, GroupConfig, GroupCoordinator, JoinResult, Reply, SyncResult

if TYPE_CHECKING:
    from harness.broker.config import BrokerConfig
    from harness.broker.offsets import OffsetStore

log = logging.getLogger(__name__)
NOT_COORDINATOR = 16
COORDINATOR_LOAD_IN_PROGRESS = 14
Result = JoinResult | SyncResult


class CoordinatorMoved(Exception):
    """The group's coordinator partition was unloaded while a request waited."""


class GroupService:
    """Coordinators of the loaded offsets partitions plus the I/O machinery around them."""

    def __init__(self, cfg: BrokerConfig, offsets: OffsetStore, clock: Clock = now_ms, wall: Clock = wall_ms) -> None:
        self.offsets = offsets
        self.now_ms = clock
        self.wall_ms = wall
        self.group_config = GroupConfig(cfg.group_initial_rebalance_delay_ms, cfg.group_min_session_timeout_ms,
                                        cfg.group_max_session_timeout_ms)
        self.coordinators: dict[int, GroupCoordinator] = {}
        self.loading: set[int] = set()
        self._tickets = itertools.count(1)
        self._pending: dict[int, tuple[int, asyncio.Future[Result]]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._stored: dict[str, int] = {}
        self.pinned: dict[str, int] = {}
        self.leader_assignment: dict[str, bytes] = {}
        self._bugs = cfg.reference_bugs

    # ---- lookup ----------------------------------------------------------------------------
    def partition_for(self, group: str) -> int:
        return self.offsets.partition_for(group)

    def lookup(self, group: str) -> tuple[int, GroupCoordinator | None]:
        p = self.partition_for(group)
        if p in self.loading:
            return COORDINATOR_LOAD_IN_PROGRESS, None
        c = self.coordinators.get(p)
        return (Err.NONE, c) if c is not None else (NOT_COORDINATOR, None)

    # ---- leadership of offsets partitions --------------------------------------------------
    def on_leadership(self, tp: tuple[str, int], leader: bool) -> None:
        if tp[0] != OFFSETS_TOPIC:
            return
        p = tp[1]
        if leader and p not in self.coordinators and p not in self.loading:
            self.loading.add(p)
            asyncio.get_running_loop().create_task(self._load(p))
        elif not leader:
            self.loading.discard(p)
            if p in self.coordinators:
                self._unload(p)

    async def _load(self, p: int) -> None:
        try:
            groups = await self.offsets.load_partition(p)
        except Exception:
            log.exception("loading __consumer_offsets-%d failed", p)
            self.loading.discard(p)
            return
        if p not in self.loading:
            return
        coord = GroupCoordinator(self.group_config)
        for group, meta in groups.items():
            if meta is not None:
                coord.restore(group, meta[0], meta[1])
                self._stored[group] = meta[0]
        self.coordinators[p] = coord
        self.loading.discard(p)
        log.info("coordinator for __consumer_offsets-%d loaded (%d groups)", p, len(coord.group_ids()))

    def _unload(self, p: int) -> None:
        coord = self.coordinators.pop(p)
        for t, (part, fut) in list(self._pending.items()):
            if part == p:
                self._pending.pop(t)
                if not fut.done():
                    fut.set_exception(CoordinatorMoved())
        for gid in coord.group_ids():
            self._stored.pop(gid, None)
        self.offsets.unload_partition(p)
        log.info("coordinator for __consumer_offsets-%d unloaded (leadership moved)", p)
        self._reschedule()

    # ---- requests and replies --------------------------------------------------------------
    def ticket(self, group: str) -> tuple[int, asyncio.Future[Result]]:
        t = next(self._tickets)
        fut: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending[t] = (self.partition_for(group), fut)
        return t, fut

    def deliver(self, replies: list[Reply]) -> None:
        for r in replies:
            entry = self._pending.pop(r.ticket, None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(r.result)
        self._persist()
        self._reschedule()

    def _persist(self) -> None:
        now = self.wall_ms()
        for coord in self.coordinators.values():
            for gid in coord.group_ids():
                d = coord.describe(gid)
                if self._stored.get(gid) != d.generation_id:
                    self._stored[gid] = d.generation_id
                    if d.generation_id > 0:
                        if bugs.GENERATION_REUSE in self._bugs:
                            d = replace(d, generation_id=self.pinned.setdefault(gid, d.generation_id))
                        with contextlib.suppress(NotCoordinator):
                            self.offsets.store_group(d, now)

    def _reschedule(self) -> None:
        deadline = min((d for c in self.coordinators.values() if (d := c.next_deadline()) is not None), default=None)
        if deadline == self._timer_at and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            delay = max(deadline - self.now_ms() + 1, 0) / 1000
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, None
        now = self.now_ms()
        replies: list[Reply] = []
        for coord in list(self.coordinators.values()):
            replies += coord.tick(now)
        self.deliver(replies)

    # ---- bug flags -------------------------------------------------------------------------
    def outgoing_generation(self, group: str, generation: int) -> int:
        if bugs.GENERATION_REUSE not in self._bugs or generation <= 0:
            return generation
        return self.pinned.setdefault(group, generation)

    def incoming_generation(self, coord: GroupCoordinator, group: str, generation: int) -> int:
        if bugs.GENERATION_REUSE in self._bugs and self.pinned.get(group) == generation:
            return coord.describe(group).generation_id
        return generation

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for _p, fut in self._pending.values():
            fut.cancel()
        self._pending.clear()
