"""Group coordination over the wire: the model's `GroupCoordinator` wired to asyncio timers and sockets.

Owns `GroupService` (pending JoinGroup/SyncGroup requests as futures keyed by ticket, one asyncio
timer set to the model's next deadline, persistence of each new generation to
`__consumer_offsets`) and the handlers FindCoordinator, JoinGroup (v0-5: MEMBER_ID_REQUIRED from
v4, static members from v5), SyncGroup, Heartbeat, LeaveGroup, OffsetCommit (generation fencing
by the model), OffsetFetch, DescribeGroups, ListGroups and DeleteGroups. With one broker, this
broker coordinates every group once `__consumer_offsets` can exist (COORDINATOR_NOT_AVAILABLE while
`offsets.topic.replication.factor` exceeds the live brokers, as in Kafka).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer import JoinGroupResponse, LeaveGroupResponse, OffsetCommitResponse, OffsetFetchResponse

from harness.broker.handlers_admin import live_brokers
from harness.broker.offsets import Committed
from harness.broker.protocol import build_response
from harness.model.group import (
    Err,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    JoinRequest,
    JoinResult,
    Reply,
    SyncResult,
)

if TYPE_CHECKING:
    from harness.broker.server import Broker, Ctx

UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
MAX_METADATA = 4096


class GroupService:
    """The model plus the machinery that turns its replies and deadlines into I/O."""

    def __init__(self, broker: Broker) -> None:
        cfg = broker.config
        self.broker = broker
        self.coordinator = GroupCoordinator(GroupConfig(cfg.group_initial_rebalance_delay_ms,
                                                        cfg.group_min_session_timeout_ms,
                                                        cfg.group_max_session_timeout_ms))
        self._tickets = itertools.count(1)
        self._pending: dict[int, asyncio.Future[JoinResult | SyncResult]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._stored: dict[str, int] = {}

    def available(self) -> bool:
        return self.broker.config.offsets_topic_replication_factor <= len(live_brokers(self.broker))

    def ticket(self) -> tuple[int, asyncio.Future[JoinResult | SyncResult]]:
        t = next(self._tickets)
        fut: asyncio.Future[JoinResult | SyncResult] = asyncio.get_running_loop().create_future()
        self._pending[t] = fut
        return t, fut

    def deliver(self, replies: list[Reply]) -> None:
        for r in replies:
            fut = self._pending.pop(r.ticket, None)
            if fut is not None and not fut.done():
                fut.set_result(r.result)
        self._persist()
        self._reschedule()

    def _persist(self) -> None:
        now = self.broker.wall_ms()
        for gid in self.coordinator.group_ids():
            d = self.coordinator.describe(gid)
            if self._stored.get(gid) != d.generation_id:
                self._stored[gid] = d.generation_id
                if d.generation_id > 0:
                    self.broker.offsets.store_group(d, now)

    def _reschedule(self) -> None:
        deadline = self.coordinator.next_deadline()
        if deadline == self._timer_at and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            delay = max(deadline - self.broker.now_ms() + 1, 0) / 1000
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, None
        self.deliver(self.coordinator.tick(self.broker.now_ms()))

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for fut in self._pending.values():
            fut.cancel()
        self._pending.clear()


async def find_coordinator(b: Broker, ctx: Ctx, req: Any) -> Any:
    key_type = getattr(req, "key_type", 0) if ctx.head.api_version >= 1 else 0
    if key_type != 0 or not b.groups.available():
        return build_response(ctx.head, throttle_time_ms=0, error_code=Err.COORDINATOR_NOT_AVAILABLE,
                              error_message="transactions are not implemented" if key_type else
                              "offsets.topic.replication.factor exceeds the live brokers",
                              node_id=-1, host="", port=-1)
    b.offsets.ensure_topic()
    me = b.advertised(ctx.listener)
    return build_response(ctx.head, throttle_time_ms=0, error_code=0, error_message=None,
                          node_id=b.broker_id, host=me.host, port=me.port)


async def join_group(b: Broker, ctx: Ctx, req: Any) -> Any:
    v = ctx.head.api_version
    svc = b.groups
    if not svc.available():
        res = JoinResult(Err.COORDINATOR_NOT_AVAILABLE, req.member_id)
    else:
        jr = JoinRequest(
            group_id=req.group_id, member_id=req.member_id, protocol_type=req.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else -1,
            group_instance_id=req.group_instance_id if v >= 5 else None,
            client_id=ctx.client_id, client_host=ctx.client_host, require_known_member_id=v >= 4)
        ticket, fut = svc.ticket()
        svc.deliver(svc.coordinator.join(b.now_ms(), ticket, jr))
        result = await fut
        assert isinstance(result, JoinResult)
        res = result
    M = JoinGroupResponse.JoinGroupResponseMember
    return build_response(ctx.head, throttle_time_ms=0, error_code=res.error, generation_id=res.generation_id,
                          protocol_name=res.protocol_name or "", leader=res.leader_id, member_id=res.member_id,
                          members=[M(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                     metadata=m.metadata) for m in res.members])


async def sync_group(b: Broker, ctx: Ctx, req: Any) -> Any:
    svc = b.groups
    instance = req.group_instance_id if ctx.head.api_version >= 3 else None
    ticket, fut = svc.ticket()
    assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
    svc.deliver(svc.coordinator.sync(b.now_ms(), ticket, req.group_id, req.member_id, req.generation_id,
                                     assignments, instance))
    res = await fut
    assert isinstance(res, SyncResult)
    return build_response(ctx.head, throttle_time_ms=0, error_code=res.error, assignment=res.assignment)


async def heartbeat(b: Broker, ctx: Ctx, req: Any) -> Any:
    instance = req.group_instance_id if ctx.head.api_version >= 3 else None
    err, replies = b.groups.coordinator.heartbeat(b.now_ms(), req.group_id, req.member_id, req.generation_id,
                                                  instance)
    b.groups.deliver(replies)
    return build_response(ctx.head, throttle_time_ms=0, error_code=err)


async def leave_group(b: Broker, ctx: Ctx, req: Any) -> Any:
    v = ctx.head.api_version
    members = [(m.member_id, m.group_instance_id) for m in req.members] if v >= 3 else [(req.member_id, None)]
    err, errors, replies = b.groups.coordinator.leave(b.now_ms(), req.group_id, members)
    b.groups.deliver(replies)
    if v < 3:
        return build_response(ctx.head, throttle_time_ms=0, error_code=err or (errors[0] if errors else 0))
    R = LeaveGroupResponse.MemberResponse
    return build_response(ctx.head, throttle_time_ms=0, error_code=err, members=[
        R(member_id=m, group_instance_id=i, error_code=e) for (m, i), e in zip(members, errors, strict=False)])


async def offset_commit(b: Broker, ctx: Ctx, req: Any) -> Any:
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    P = T.OffsetCommitResponsePartition
    v = ctx.head.api_version
    instance = req.group_instance_id if v >= 7 else None
    if not b.groups.available():
        err = Err.COORDINATOR_NOT_AVAILABLE
    else:
        err = b.groups.coordinator.validate_commit(b.now_ms(), req.group_id, req.member_id,
                                                   req.generation_id_or_member_epoch, instance)
        b.groups.deliver([])
    now = b.wall_ms()
    accepted: list[tuple[str, int, Committed]] = []
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            e = err
            if e == Err.NONE:
                if b.topics.partition(t.name, p.partition_index) is None:
                    e = UNKNOWN_TOPIC_OR_PARTITION
                elif p.committed_metadata is not None and len(p.committed_metadata) > MAX_METADATA:
                    e = OFFSET_METADATA_TOO_LARGE
                else:
                    epoch = p.committed_leader_epoch if v >= 6 else -1
                    accepted.append((t.name, p.partition_index,
                                     Committed(p.committed_offset, epoch, p.committed_metadata or "", now)))
            parts.append(P(partition_index=p.partition_index, error_code=e))
        out.append(T(name=t.name, partitions=parts))
    b.offsets.commit(req.group_id, accepted, now)
    return build_response(ctx.head, throttle_time_ms=0, topics=out)


async def offset_fetch(b: Broker, ctx: Ctx, req: Any) -> Any:
    T = OffsetFetchResponse.OffsetFetchResponseTopic
    P = T.OffsetFetchResponsePartition
    if not b.groups.available():
        return build_response(ctx.head, throttle_time_ms=0, topics=[], error_code=Err.COORDINATOR_NOT_AVAILABLE)
    committed = b.offsets.fetch(req.group_id)
    wanted: dict[str, list[int]] = {}
    if req.topics is None:
        for topic, part in sorted(committed):
            wanted.setdefault(topic, []).append(part)
    else:
        for t in req.topics:
            wanted[t.name] = list(t.partition_indexes)
    out = []
    for topic, parts in wanted.items():
        rows = []
        for p in parts:
            c = committed.get((topic, p))
            rows.append(P(partition_index=p, committed_offset=c.offset if c else -1,
                          committed_leader_epoch=c.leader_epoch if c else -1,
                          metadata=c.metadata if c else "", error_code=0))
        out.append(T(name=topic, partitions=rows))
    return build_response(ctx.head, throttle_time_ms=0, topics=out, error_code=0)


async def describe_groups(b: Broker, ctx: Ctx, req: Any) -> Any:
    G = DescribeGroupsResponse.DescribedGroup
    M = G.DescribedGroupMember
    out = []
    for gid in req.groups:
        d = b.groups.coordinator.describe(gid)
        stable = d.state is GroupState.STABLE
        members = [M(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                     client_host=m.client_host, member_metadata=m.metadata if stable else b"",
                     member_assignment=m.assignment if stable else b"") for m in d.members]
        out.append(G(error_code=0, group_id=gid, group_state=d.state.value, protocol_type=d.protocol_type,
                     protocol_data=d.protocol_name if stable else "", members=members))
    return build_response(ctx.head, throttle_time_ms=0, groups=out)


async def list_groups(b: Broker, ctx: Ctx, req: Any) -> Any:
    L = ListGroupsResponse.ListedGroup
    groups = [b.groups.coordinator.describe(g) for g in b.groups.coordinator.group_ids()]
    return build_response(ctx.head, throttle_time_ms=0, error_code=0,
                          groups=[L(group_id=d.group_id, protocol_type=d.protocol_type) for d in groups])


async def delete_groups(b: Broker, ctx: Ctx, req: Any) -> Any:
    R = DeleteGroupsResponse.DeletableGroupResult
    out = []
    for gid in req.groups_names:
        err = b.groups.coordinator.delete(gid)
        if err == Err.GROUP_ID_NOT_FOUND and gid in b.offsets.committed:
            err = Err.NONE
        if err == Err.NONE:
            b.offsets.delete_group(gid, b.wall_ms())
        out.append(R(group_id=gid, error_code=err))
    return build_response(ctx.head, throttle_time_ms=0, results=out)


HANDLERS = {
    10: find_coordinator,
    11: join_group,
    12: heartbeat,
    13: leave_group,
    14: sync_group,
    8: offset_commit,
    9: offset_fetch,
    15: describe_groups,
    16: list_groups,
    42: delete_groups,
}
