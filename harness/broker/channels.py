"""The controller's channels to brokers (Kafka's ControllerChannelManager): one ordered queue per broker.

Owns building the LeaderAndIsr / UpdateMetadata / StopReplica bodies from the controller's state,
and one sender task per live broker that delivers them in order over the broker's endpoint named
by this broker's inter-broker listener (read from its `/brokers/ids/<id>` registration), retrying
a failed send until it succeeds, the broker is removed, or the controller resigns. A
STALE_CONTROLLER_EPOCH answer makes the controller re-check `/controller`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from harness.broker.interbroker import (
    LEADER_AND_ISR,
    PRIVATE_APIS,
    STALE_CONTROLLER_EPOCH,
    STOP_REPLICA,
    UPDATE_METADATA,
    PeerConnection,
    PeerError,
)
from harness.broker.metadata import PartitionInfo, endpoints_to_json, partition_to_json

if TYPE_CHECKING:
    from harness.broker.controller import Controller

log = logging.getLogger(__name__)
TP = tuple[str, int]


class ControllerChannels:
    """Per-broker request queues of the active controller."""

    def __init__(self, controller: Controller) -> None:
        self.c = controller
        self._queues: dict[int, asyncio.Queue[tuple[int, dict[str, Any]]]] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}

    # ---- bodies ----------------------------------------------------------------------------
    def _head(self) -> dict[str, Any]:
        return {"controller_id": self.c.broker_id, "controller_epoch": self.c.epoch}

    def _info(self, tp: TP) -> PartitionInfo:
        st = self.c.states.get(tp)
        ar = self.c.assignments.get(tp, ())
        live = self.c.live
        if st is None:
            return PartitionInfo(-1, -1, (), ar, tuple(r for r in ar if r not in live))
        return PartitionInfo(st.leader, st.leader_epoch, st.isr, ar, tuple(r for r in ar if r not in live))

    def _brokers_json(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        return [endpoints_to_json(i, self.c.live[i].endpoints) for i in sorted(ids) if i in self.c.live]

    def update_metadata(self, to: Iterable[int], tps: Iterable[TP] | None = None, full: bool = False,
                        deleted: Iterable[str] = ()) -> None:
        parts = sorted(self.c.assignments) if full or tps is None else sorted(tps)
        body = {**self._head(), "brokers": self._brokers_json(self.c.live),
                "shutting_down": sorted(self.c.shutting_down),
                "partitions": [partition_to_json(t, p, self._info((t, p))) for t, p in parts
                               if (t, p) in self.c.assignments],
                "deleted_topics": sorted(deleted)}
        for b in to:
            self._send(b, UPDATE_METADATA, body)

    def leader_and_isr(self, tps: Iterable[TP], only: int | None = None) -> None:
        by_broker: dict[int, list[dict[str, Any]]] = {}
        leaders: set[int] = set()
        for tp in tps:
            st, ar = self.c.states.get(tp), self.c.assignments.get(tp)
            if st is None or ar is None:
                continue
            entry = {"topic": tp[0], "partition": tp[1], "leader": st.leader, "leader_epoch": st.leader_epoch,
                     "isr": list(st.isr), "replicas": list(ar), "zk_version": st.zk_version,
                     "controller_epoch": st.controller_epoch, "configs": self.c.topic_configs.get(tp[0], {})}
            for r in ar:
                if r in self.c.live and r not in self.c.shutting_down and (only is None or r == only):
                    by_broker.setdefault(r, []).append(entry)
            leaders.add(st.leader)
        for b, entries in by_broker.items():
            self._send(b, LEADER_AND_ISR, {**self._head(), "partitions": entries,
                                           "leaders": self._brokers_json(leaders)})

    def stop_replica(self, to: Iterable[int], tps: Iterable[TP], delete: bool) -> None:
        body = {**self._head(), "delete": delete, "partitions": [list(tp) for tp in tps]}
        for b in to:
            self._send(b, STOP_REPLICA, body)

    # ---- delivery --------------------------------------------------------------------------
    def _send(self, broker: int, api: int, body: dict[str, Any]) -> None:
        if broker not in self._queues or self._tasks[broker].done():
            self._queues[broker] = asyncio.Queue()
            self._tasks[broker] = asyncio.create_task(self._sender(broker, self._queues[broker]))
        self._queues[broker].put_nowait((api, body))

    async def _sender(self, broker: int, queue: asyncio.Queue[tuple[int, dict[str, Any]]]) -> None:
        conn: PeerConnection | None = None
        listener = self.c.config.inter_broker_listener()
        timeout = self.c.config.controller_socket_timeout_ms / 1000
        try:
            while True:
                api, body = await queue.get()
                while True:
                    reg = self.c.live.get(broker)
                    if reg is None or not self.c.active:
                        return
                    ep = reg.endpoint(listener) or (reg.endpoints[0] if reg.endpoints else None)
                    if ep is None:
                        log.error("broker %d registers no endpoint; cannot send it %s", broker, PRIVATE_APIS[api])
                        return
                    if conn is None or (conn.host, conn.port) != (ep.host, ep.port):
                        if conn is not None:
                            conn.close()
                        conn = PeerConnection(ep.host, ep.port, f"controller-{self.c.broker_id}", timeout)
                    try:
                        resp = await conn.private(api, body)
                    except PeerError as exc:
                        log.info("controller -> broker %d %s failed (%s); retrying", broker, PRIVATE_APIS[api], exc)
                        await asyncio.sleep(0.2)
                        continue
                    if resp.get("error_code") == STALE_CONTROLLER_EPOCH:
                        log.warning("broker %d rejected our %s (epoch %d) as stale", broker, PRIVATE_APIS[api],
                                    self.c.epoch)
                        self.c.post("controller")
                    break
        finally:
            if conn is not None:
                conn.close()

    def remove(self, broker: int) -> None:
        task = self._tasks.pop(broker, None)
        self._queues.pop(broker, None)
        if task is not None:
            task.cancel()

    def close(self) -> None:
        for b in list(self._tasks):
            self.remove(b)

    async def drain(self, timeout_s: float) -> None:
        """Wait (bounded) until every queue is empty."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while any(not q.empty() for q in self._queues.values()):
            if asyncio.get_running_loop().time() > deadline:
                return
            with contextlib.suppress(Exception):
                await asyncio.sleep(0.02)
