"""Partition reassignment through `/admin/reassign_partitions` (the legacy, pre-2.4 ZooKeeper path).

Owns the active controller's reassignment steps, as Kafka's `onPartitionReassignment`:
1. AR becomes RS = new replicas + the old ones not in it (written to `/brokers/topics/<t>` with
   `adding_replicas` / `removing_replicas`), the leader epoch is bumped and LeaderAndIsr goes to
   every replica of RS, so the new replicas start fetching;
2. once every new replica is in the ISR (re-checked on each ISR change notification): the leader
   is re-elected by the model's `reassignment_election` if it is not in the new AR, the replicas
   leaving are removed from the ISR (leader epoch bumped), AR becomes the new list, LeaderAndIsr
   goes to the new replicas, StopReplica (delete) to the removed ones, UpdateMetadata to all;
3. when nothing is pending the znode is deleted.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from harness.broker import bugs
from harness.model.controller import ClusterView, ControllerPlan, StateChange, reassignment_election
from harness.zk.notifications import ReassignPartitions
from harness.zk.paths import REASSIGN_PARTITIONS_PATH, topic_path
from harness.zk.znodes import TopicAssignment

if TYPE_CHECKING:
    from harness.broker.controller import Controller

log = logging.getLogger(__name__)
TP = tuple[str, int]


class Reassignments:
    """Pending reassignments of the active controller (tp -> target AR)."""

    def __init__(self, controller: Controller) -> None:
        self.c = controller
        self.pending: dict[TP, tuple[int, ...]] = {}
        self.original: dict[TP, tuple[int, ...]] = {}

    def reset(self) -> None:
        self.pending.clear()
        self.original.clear()

    # ---- ZooKeeper (worker threads) --------------------------------------------------------
    def _read_znode(self) -> list[tuple[str, int, tuple[int, ...]]] | None:
        client = self.c.client
        try:
            data, _ = client.get(REASSIGN_PARTITIONS_PATH)
        except NoNodeError:
            client.exists(REASSIGN_PARTITIONS_PATH, watch=self.c.watcher(REASSIGN_PARTITIONS_PATH))
            return None
        client.exists(REASSIGN_PARTITIONS_PATH, watch=self.c.watcher(REASSIGN_PARTITIONS_PATH))
        return list(ReassignPartitions.decode(data).assignments)

    def _write_assignment(self, tp: TP, ar: tuple[int, ...], adding: tuple[int, ...],
                          removing: tuple[int, ...]) -> None:
        client = self.c.client
        data, stat = client.get(topic_path(tp[0]))
        cur = TopicAssignment.decode(tp[0], data)
        parts = dict(cur.partitions)
        parts[tp[1]] = ar
        add = {p: r for p, r in cur.adding_replicas.items() if p != tp[1]}
        rem = {p: r for p, r in cur.removing_replicas.items() if p != tp[1]}
        if adding:
            add[tp[1]] = adding
        if removing:
            rem[tp[1]] = removing
        new = TopicAssignment(tp[0], parts, add, rem, cur.topic_id, max(cur.version, 2))
        client.set(topic_path(tp[0]), new.encode(), version=stat.version)

    def _delete_znode(self) -> None:
        with contextlib.suppress(NoNodeError):
            self.c.client.delete(REASSIGN_PARTITIONS_PATH)
        self.c.client.exists(REASSIGN_PARTITIONS_PATH, watch=self.c.watcher(REASSIGN_PARTITIONS_PATH))

    # ---- steps -----------------------------------------------------------------------------
    async def on_znode(self) -> None:
        c = self.c
        items = await c.zk(self._read_znode)
        for topic, partition, target in items or ():
            tp = (topic, partition)
            orig = c.assignments.get(tp)
            if orig is None or tp in self.pending or not target:
                continue
            if tuple(target) == orig:
                continue
            rs = tuple(target) + tuple(r for r in orig if r not in target)
            adding = tuple(r for r in target if r not in orig)
            removing = tuple(r for r in orig if r not in target)
            await c.zk(self._write_assignment, tp, rs, adding, removing)
            c.assignments[tp] = rs
            self.pending[tp], self.original[tp] = tuple(target), orig
            if tp in c.states:
                await c.decide(_bump(tp, f"reassignment {list(orig)} -> {list(target)}: start", c.epoch, None))
                if bugs.REASSIGN_IGNORES_ISR in c.config.reference_bugs:
                    await c.decide(_lead_at_once(tp, tuple(target), c.epoch))
            log.warning("controller %d: reassigning %s-%d %s -> %s (RS %s)", c.broker_id, topic, partition,
                        list(orig), list(target), list(rs))
            c.channels.leader_and_isr([tp])
            c.channels.update_metadata(c.live_ids(), [tp])
        await self.check()
        if items is not None and not self.pending:
            await c.zk(self._delete_znode)

    async def on_isr_change(self) -> None:
        if self.pending:
            await self.check()
            if not self.pending:
                await self.c.zk(self._delete_znode)

    async def check(self) -> None:
        c = self.c
        for tp, target in list(self.pending.items()):
            state = c.states.get(tp)
            if state is None or not set(target) <= set(state.isr):
                continue
            changes: list[StateChange] = []
            if reassignment_election(c.view(), tp, target, c.epoch) is not None:
                written, _ = await c.decide(_elect(tp, target, c.epoch))
                changes += written
            state = c.states[tp]
            if any(r not in target for r in state.isr) and state.leader in target:
                written, _ = await c.decide(_bump(tp, "reassignment: remove old replicas from ISR", c.epoch, target))
                changes += written
            removed = [r for r in c.assignments[tp] if r not in target]
            await c.zk(self._write_assignment, tp, target, (), ())
            c.assignments[tp] = target
            self.pending.pop(tp, None)
            self.original.pop(tp, None)
            c.channels.leader_and_isr([tp])
            c.channels.stop_replica([r for r in removed if r in c.live], [tp], delete=True)
            c.channels.update_metadata(c.live_ids(), [tp])
            log.warning("controller %d: reassignment of %s-%d to %s done (leader %d)", c.broker_id, tp[0], tp[1],
                        list(target), c.states[tp].leader)



def _elect(tp: TP, target: tuple[int, ...], epoch: int) -> Callable[[ClusterView], ControllerPlan]:
    """The model's reassignment election for `tp` (no change when the leader is in the new AR)."""
    def plan(v: ClusterView) -> ControllerPlan:
        ch = reassignment_election(v, tp, target, epoch)
        return ControllerPlan((ch,) if ch is not None else ())
    return plan


def _lead_at_once(tp: TP, target: tuple[int, ...], epoch: int) -> Callable[[ClusterView], ControllerPlan]:
    """The `reassign_ignores_isr` bug's write at the start of a reassignment."""
    return lambda v: bugs.reassign_ignores_isr(v, tp, target, epoch)


def _bump(tp: TP, reason: str, epoch: int, keep: tuple[int, ...] | None) -> Callable[[ClusterView], ControllerPlan]:
    """A plan of one write: same leader, ISR restricted to `keep` (None: unchanged), leader epoch + 1."""
    def plan(v: ClusterView) -> ControllerPlan:
        st = v.states[tp]
        isr = st.isr if keep is None else tuple(r for r in st.isr if r in keep)
        return ControllerPlan((StateChange(tp, reason, st, st.with_leader(st.leader, isr, epoch)),))
    return plan
