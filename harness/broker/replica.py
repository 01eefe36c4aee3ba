"""Partition roles on this broker (leader or follower), the leader's replication state, HW and acks=all.

Owns `ReplicaManager`: applying LeaderAndIsr (become leader: follower states reset, HW kept,
idempotence state rebuilt from the log; stay leader at a new epoch: ISR taken, followers re-timed,
waiting acks kept; become follower of a new leader: truncate to the high watermark, as Kafka did
before KIP-101 -- no leader-epoch truncation, so the known divergence after two quick leader
changes remains possible -- and fetch from it; same leader at a new epoch: no truncation; no leader (-1):
no fetch and no truncation, as Kafka),
StopReplica, the leader's tracking of follower LEOs from their Fetch requests
(`harness.model.isr.on_follower_fetch`), the HW (`high_watermark` over the ISR), waiting produce
requests with acks=all (released when the HW passes their last offset, `acks_all_status`), ISR
shrink (`isr_to_shrink`, checked every replica.lag.time.max.ms / 2) and expand (`isr_to_expand`,
on follower fetches) written by the leader with a conditional write of the partition state znode
plus a sequential `/isr_change_notification/isr_change_` znode, and the HW checkpoint file
(`replication-offset-checkpoint` in each log dir) read at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.broker.clock import Clock, now_ms
from harness.model.isr import (
    FollowerState,
    acks_all_status,
    high_watermark,
    isr_to_expand,
    isr_to_shrink,
    on_follower_fetch,
)
from harness.model.partition_state import PartitionState, state_path
from harness.zk.notifications import IsrChangeNotification
from harness.zk.paths import isr_change_path

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from harness.broker.config import BrokerConfig
    from harness.broker.metadata import MetadataCache
    from harness.broker.producer_state import PartitionProducers
    from harness.broker.topics import TopicStore

log = logging.getLogger(__name__)
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
CHECKPOINT = "replication-offset-checkpoint"
TP = tuple[str, int]


class Followers(Protocol):
    """What the replica manager needs of the fetchers: which partitions to follow, from which leader."""

    def add(self, tp: TP, leader: int, leader_epoch: int) -> None: ...

    def remove(self, tp: TP) -> None: ...


@dataclass(slots=True)
class Partition:
    """One partition this broker hosts, as the last accepted LeaderAndIsr described it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int
    followers: dict[int, FollowerState] = field(default_factory=dict)
    acks: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)
    isr_busy: bool = False


class ReplicaManager:
    """Every hosted partition's role and replication state."""

    def __init__(self, config: BrokerConfig, topics: TopicStore, metadata: MetadataCache,
                 producers: MutableMapping[TP, PartitionProducers], followers: Followers,
                 on_leadership: Callable[[TP, bool], None], zk_client: Callable[[], KazooClient | None],
                 clock: Clock = now_ms) -> None:
        """`on_leadership(tp, leading)` hears every leadership change (the group coordinator service);
        `zk_client()` is None when standalone or not connected yet."""
        self.config = config
        self.topics = topics
        self.metadata = metadata
        self.producers = producers
        self.followers = followers
        self.on_leadership = on_leadership
        self.zk_client = zk_client
        self.now_ms = clock
        self.partitions: dict[TP, Partition] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._checkpointed: dict[TP, int] = {}

    def load_checkpoints(self) -> None:
        """After the logs are loaded: each HW from the checkpoint (0 when none was written)."""
        self._checkpointed = self._read_checkpoints()
        for tname, t in self.topics.topics.items():
            for p, plog in t.partitions.items():
                plog.high_watermark = min(self._checkpointed.get((tname, p), 0), plog.log_end_offset)

    # ---- queries ---------------------------------------------------------------------------
    def leading(self, topic: str, partition: int) -> Partition | None:
        p = self.partitions.get((topic, partition))
        return p if p is not None and p.leader == self.config.broker_id else None

    def initial_hw(self, topic: str, partition: int) -> int | None:
        return self._checkpointed.get((topic, partition))

    # ---- LeaderAndIsr / StopReplica --------------------------------------------------------
    def apply(self, d: dict[str, Any]) -> int:
        """One partition entry of an accepted LeaderAndIsr; the partition error code (0)."""
        tp = (str(d["topic"]), int(d["partition"]))
        configs = {str(k): str(v) for k, v in d.get("configs", {}).items()}
        self.topics.ensure_partition(tp[0], tp[1], configs)
        plog = self.topics.partition(*tp)
        assert plog is not None
        old = self.partitions.get(tp)
        new = Partition(tp[0], tp[1], int(d["leader"]), int(d["leader_epoch"]), tuple(d["isr"]),
                        tuple(d["replicas"]), int(d["zk_version"]), int(d["controller_epoch"]))
        if old is not None and old.leader_epoch > new.leader_epoch:
            return 0  # an older leader epoch: ignore (Kafka: STALE_CONTROLLER_EPOCH per partition)
        me = self.config.broker_id
        if new.leader == me:
            if old is not None and old.leader == me:
                self._stay_leader(old, new, plog.log_end_offset)
                self.topics.notify(*tp)
                return 0
            now = self.now_ms()
            new.followers = {r: FollowerState(r, plog.high_watermark, now, plog.log_end_offset, now)
                             for r in new.isr if r != me}
            self.producers.pop(tp, None)
            self.followers.remove(tp)
            self._fail_acks(old)
            self.partitions[tp] = new
            log.info("%s-%d: leader at epoch %d, ISR %s, LEO %d, HW %d", tp[0], tp[1], new.leader_epoch,
                     list(new.isr), plog.log_end_offset, plog.high_watermark)
            self.maybe_advance_hw(new)
            self.on_leadership(tp, True)
        else:
            changed = old is None or old.leader != new.leader or old.leader_epoch != new.leader_epoch
            self.partitions[tp] = new
            self._fail_acks(old)
            if changed and new.leader < 0:
                # No leader (an offline partition, unclean election disabled): nothing to fetch from and
                # nothing to truncate against. Kafka logs "cannot become follower since the new leader -1 is
                # unavailable" and keeps the log whole; a restarted last-ISR member must come back with every
                # record it had, not cut back to a checkpointed HW that may be seconds old.
                self.followers.remove(tp)
                log.info("%s-%d: no leader at epoch %d: log kept whole (LEO %d, HW %d)", tp[0], tp[1],
                         new.leader_epoch, plog.log_end_offset, plog.high_watermark)
            elif changed:
                if (old is None or old.leader != new.leader) and plog.log_end_offset > plog.high_watermark:
                    log.info("%s-%d: follower of %d at epoch %d: truncating %d -> HW %d", tp[0], tp[1],
                             new.leader, new.leader_epoch, plog.log_end_offset, plog.high_watermark)
                    plog.truncate_to(plog.high_watermark)
                self.followers.add(tp, new.leader, new.leader_epoch)
            self.on_leadership(tp, False)
        self.topics.notify(*tp)
        return 0

    def _stay_leader(self, part: Partition, new: Partition, leo: int) -> None:
        """Still the leader (Kafka's Partition.makeLeader with isNewLeader = false, e.g. the controller took a
        lost follower out of the ISR): take the ISR, AR and versions; on a new leader epoch only re-time the
        followers (Replica.resetReplicaState: caught up now if in the ISR, else never) -- their LEOs, the
        producer state and the waiting acks=all produces stay, and a smaller ISR may move the HW at once."""
        if new.leader_epoch > part.leader_epoch:
            now = self.now_ms()
            part.followers = {r: FollowerState(r, st.leo, now if r in new.isr else 0, leo, now)
                              for r, st in part.followers.items() if r in new.replicas}
            log.info("%s-%d: still leader, epoch %d -> %d, ISR %s -> %s", part.topic, part.partition,
                     part.leader_epoch, new.leader_epoch, list(part.isr), list(new.isr))
            part.leader_epoch = new.leader_epoch
        part.isr, part.replicas, part.zk_version = new.isr, new.replicas, new.zk_version
        part.controller_epoch = new.controller_epoch
        self.maybe_advance_hw(part)

    def stop(self, topic: str, partition: int, delete: bool) -> None:
        tp = (topic, partition)
        old = self.partitions.pop(tp, None)
        self._fail_acks(old)
        self.followers.remove(tp)
        self.on_leadership(tp, False)
        if delete:
            self.topics.remove_partition(topic, partition)
            self.producers.pop(tp, None)

    def _fail_acks(self, part: Partition | None) -> None:
        if part is None:
            return
        for _off, fut in part.acks:
            if not fut.done():
                fut.set_exception(_NotLeader())
        part.acks.clear()

    # ---- the leader's side of replication --------------------------------------------------
    def on_replica_fetch(self, part: Partition, replica: int, fetch_offset: int) -> None:
        plog = self.topics.partition(part.topic, part.partition)
        if plog is None or replica not in part.replicas:
            return
        now = self.now_ms()
        st = part.followers.get(replica) or FollowerState(replica, 0, 0, 0, 0)
        part.followers[replica] = on_follower_fetch(st, fetch_offset, plog.log_end_offset, now)
        # Only the replica that fetched can join (Kafka's Partition.updateFollowerFetchState -> maybeExpandIsr
        # of that follower): another follower's state may be stale, e.g. a dead broker's, kept across a new
        # leader epoch until its registration's loss reaches this broker's metadata.
        add = isr_to_expand(part.replicas, part.isr, part.followers, self.metadata.live_not_stopping(),
                            plog.high_watermark) & {replica}
        if add and not part.isr_busy:
            isr = tuple(r for r in part.replicas if r in set(part.isr) | add)
            self._spawn(self._write_isr(part, isr, "expand"))
        self.maybe_advance_hw(part)

    def maybe_advance_hw(self, part: Partition) -> None:
        plog = self.topics.partition(part.topic, part.partition)
        if plog is None:
            return
        me = self.config.broker_id
        leos = {r: (plog.log_end_offset if r == me else part.followers[r].leo if r in part.followers
                    else plog.high_watermark) for r in part.isr}
        if me not in leos:
            leos[me] = plog.log_end_offset
        hw = min(high_watermark(leos, leos, plog.high_watermark), plog.log_end_offset)
        if hw != plog.high_watermark:
            plog.high_watermark = hw
            self.topics.notify(part.topic, part.partition)
        if part.acks:
            keep = []
            for off, fut in part.acks:
                if fut.done():
                    continue
                if hw >= off:
                    fut.set_result(None)
                else:
                    keep.append((off, fut))
            part.acks = keep

    async def wait_replicated(self, part: Partition, required_offset: int, timeout_s: float, min_isr: int) -> int:
        """acks=all: wait until the HW reaches `required_offset`; the produce error code (0 = acked)."""
        plog = self.topics.partition(part.topic, part.partition)
        if plog is None:
            return NOT_LEADER_OR_FOLLOWER
        if plog.high_watermark < required_offset:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            part.acks.append((required_offset, fut))
            try:
                await asyncio.wait_for(fut, timeout_s)
            except TimeoutError:
                return REQUEST_TIMED_OUT
            except _NotLeader:
                return NOT_LEADER_OR_FOLLOWER
        status = acks_all_status(required_offset, plog.high_watermark, len(part.isr), min_isr)
        return status.error.value

    # ---- ISR changes, written by the leader ------------------------------------------------
    async def _write_isr(self, part: Partition, isr: tuple[int, ...], why: str) -> None:
        client = self.zk_client()
        if client is None:
            part.isr = isr
            return
        part.isr_busy = True
        try:
            state = PartitionState(part.leader, part.leader_epoch, isr, part.controller_epoch, part.zk_version)
            path = state_path(part.topic, part.partition)

            def write() -> int:
                stat = client.set(path, state.to_json(), version=part.zk_version)
                note = IsrChangeNotification(((part.topic, part.partition),)).encode()
                client.create(isr_change_path(), note, sequence=True)
                return int(stat.version)
            try:
                version = await asyncio.to_thread(write)
            except Exception as exc:
                log.info("%s-%d: ISR %s %s -> %s not written (%r); waiting for the controller", part.topic,
                         part.partition, why, list(part.isr), list(isr), exc)
                return
            if self.partitions.get((part.topic, part.partition)) is not part or part.zk_version >= version:
                return  # no longer leader, or a newer controller-written state was applied meanwhile
            log.info("%s-%d: ISR %s %s -> %s (zk version %d)", part.topic, part.partition, why, list(part.isr),
                     list(isr), version)
            part.isr, part.zk_version = isr, version
            self.maybe_advance_hw(part)
        finally:
            part.isr_busy = False

    async def isr_loop(self) -> None:
        lag = self.config.replica_lag_time_max_ms
        while True:
            await asyncio.sleep(max(lag / 2000, 0.05))
            now = self.now_ms()
            for part in list(self.partitions.values()):
                if part.leader != self.config.broker_id or part.isr_busy:
                    continue
                plog = self.topics.partition(part.topic, part.partition)
                if plog is None:
                    continue
                drop = isr_to_shrink(part.leader, part.isr, part.followers, plog.log_end_offset, now, lag)
                if drop:
                    await self._write_isr(part, tuple(r for r in part.isr if r not in drop), "shrink")

    # ---- HW checkpoints --------------------------------------------------------------------
    def _read_checkpoints(self) -> dict[TP, int]:
        out: dict[TP, int] = {}
        for d in self.topics.dirs:
            path = Path(d) / CHECKPOINT
            with contextlib.suppress(OSError, ValueError):
                lines = path.read_text().splitlines()
                for line in lines[2:2 + int(lines[1])]:
                    t, p, hw = line.split()
                    out[(t, int(p))] = int(hw)
        return out

    def checkpoint_text(self) -> str:
        entries = [f"{tname} {p} {plog.high_watermark}\n"
                   for tname, t in self.topics.topics.items() for p, plog in t.partitions.items()]
        return f"0\n{len(entries)}\n" + "".join(entries)

    def write_checkpoints(self, text: str | None = None) -> None:
        text = self.checkpoint_text() if text is None else text
        for d in self.topics.dirs:
            path = Path(d) / CHECKPOINT
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            os.replace(tmp, path)

    async def checkpoint_loop(self) -> None:
        every = max(self.config.replica_high_watermark_checkpoint_interval_ms, 100) / 1000
        while True:
            await asyncio.sleep(every)
            await asyncio.to_thread(self.write_checkpoints, self.checkpoint_text())

    # ---- tasks -----------------------------------------------------------------------------
    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self.isr_loop()))
        self._tasks.append(asyncio.create_task(self.checkpoint_loop()))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        self._tasks.clear()
        for part in self.partitions.values():
            self._fail_acks(part)
        with contextlib.suppress(Exception):
            self.write_checkpoints()


class _NotLeader(Exception):
    """Internal: a waiting acks=all produce lost its partition's leadership."""
