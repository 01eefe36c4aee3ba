"""Group coordination over the wire: the handlers of the group APIs, on top of `group_service.GroupService`.

Owns FindCoordinator (the leader of the group's `__consumer_offsets` partition, from the metadata
cache; the topic is created on first use, COORDINATOR_NOT_AVAILABLE while
`offsets.topic.replication.factor` exceeds the live brokers or the partition has no leader; a transactional
id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a message naming Apache Kafka, which librdkafka
treats as fatal, since this broker has no transactions),
JoinGroup (v0-5: MEMBER_ID_REQUIRED from v4, static members from v5), SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit (generation fencing by the model; answered once the commit is
replicated), OffsetFetch, DescribeGroups, ListGroups and DeleteGroups. A broker that does not
lead the group's partition answers NOT_COORDINATOR; one still loading it
COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kafka.protocol.admin import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer import JoinGroupResponse, LeaveGroupResponse, OffsetCommitResponse, OffsetFetchResponse

from harness.broker import bugs
from harness.broker.clock import now_ms, wall_ms
from harness.broker.group_service import CoordinatorMoved, GroupService
from harness.broker.handlers_admin import AdminHost, ensure_offsets_topic
from harness.broker.offsets import Committed, NotCoordinator, OffsetStore
from harness.broker.protocol import build_response
from harness.broker.topics import OFFSETS_TOPIC
from harness.model.group import Err, GroupState, JoinRequest, JoinResult, SyncResult

if TYPE_CHECKING:
    from harness.broker.protocol import Ctx

UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
MAX_METADATA = 4096
NOT_COORDINATOR = 16
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
NO_TRANSACTIONS = ("the kafka-chaos reference broker does not implement transactions; run transactional workloads on "
                   "Apache Kafka (broker: apache-kafka)")
__all__ = ["HANDLERS", "GroupHost"]


class GroupHost(AdminHost, Protocol):
    """What the group and offset-commit handlers need of the broker (FindCoordinator may create the offsets topic)."""

    groups: GroupService
    offsets: OffsetStore


async def find_coordinator(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    key_type = getattr(req, "key_type", 0) if ctx.head.api_version >= 1 else 0

    def unavailable(msg: str, code: int = Err.COORDINATOR_NOT_AVAILABLE) -> Any:
        return build_response(ctx.head, throttle_time_ms=0, error_code=code, error_message=msg, node_id=-1,
                              host="", port=-1)
    if key_type != 0:  # transactions: refused at once (librdkafka retries COORDINATOR_NOT_AVAILABLE until timeout)
        return unavailable(NO_TRANSACTIONS, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if await ensure_offsets_topic(b):
        return unavailable("offsets.topic.replication.factor exceeds the live brokers")
    info = b.metadata.partition(OFFSETS_TOPIC, b.offsets.partition_for(req.key))
    ep = b.metadata.endpoint(info.leader, ctx.listener) if info is not None and info.leader >= 0 else None
    if info is None or ep is None:
        return unavailable("the group's __consumer_offsets partition has no leader yet")
    return build_response(ctx.head, throttle_time_ms=0, error_code=0, error_message=None,
                          node_id=info.leader, host=ep.host, port=ep.port)


async def join_group(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    v = ctx.head.api_version
    svc = b.groups
    err, coord = svc.lookup(req.group_id)
    res = JoinResult(err, req.member_id)
    if coord is not None:
        jr = JoinRequest(
            group_id=req.group_id, member_id=req.member_id, protocol_type=req.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else -1,
            group_instance_id=req.group_instance_id if v >= 5 else None,
            client_id=ctx.client_id, client_host=ctx.client_host, require_known_member_id=v >= 4)
        ticket, fut = svc.ticket(req.group_id)
        svc.deliver(coord.join(now_ms(), ticket, jr))
        try:
            result = await fut
        except CoordinatorMoved:
            result = JoinResult(NOT_COORDINATOR, req.member_id)
        assert isinstance(result, JoinResult)
        res = result
    M = JoinGroupResponse.JoinGroupResponseMember
    return build_response(ctx.head, throttle_time_ms=0, error_code=res.error,
                          generation_id=svc.outgoing_generation(req.group_id, res.generation_id),
                          protocol_name=res.protocol_name or "", leader=res.leader_id, member_id=res.member_id,
                          members=[M(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                     metadata=m.metadata) for m in res.members])


async def sync_group(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    svc = b.groups
    err, coord = svc.lookup(req.group_id)
    if coord is None:
        return build_response(ctx.head, throttle_time_ms=0, error_code=err, assignment=b"")
    instance = req.group_instance_id if ctx.head.api_version >= 3 else None
    ticket, fut = svc.ticket(req.group_id)
    assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
    if assignments.get(req.member_id):
        svc.leader_assignment[req.group_id] = assignments[req.member_id]
    generation = svc.incoming_generation(coord, req.group_id, req.generation_id)
    svc.deliver(coord.sync(now_ms(), ticket, req.group_id, req.member_id, generation, assignments, instance))
    try:
        res = await fut
    except CoordinatorMoved:
        res = SyncResult(NOT_COORDINATOR)
    assert isinstance(res, SyncResult)
    assignment = res.assignment
    if bugs.DOUBLE_ASSIGNMENT in b.config.reference_bugs and res.error == 0:
        assignment = svc.leader_assignment.get(req.group_id) or assignment
    return build_response(ctx.head, throttle_time_ms=0, error_code=res.error, assignment=assignment)


async def heartbeat(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    instance = req.group_instance_id if ctx.head.api_version >= 3 else None
    err, coord = b.groups.lookup(req.group_id)
    if coord is not None:
        gen = b.groups.incoming_generation(coord, req.group_id, req.generation_id)
        err, replies = coord.heartbeat(now_ms(), req.group_id, req.member_id, gen, instance)
        b.groups.deliver(replies)
    return build_response(ctx.head, throttle_time_ms=0, error_code=err)


async def leave_group(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    v = ctx.head.api_version
    members = [(m.member_id, m.group_instance_id) for m in req.members] if v >= 3 else [(req.member_id, None)]
    err, coord = b.groups.lookup(req.group_id)
    errors: list[int] = [err] * len(members)
    if coord is not None:
        err, errors, replies = coord.leave(now_ms(), req.group_id, members)
        b.groups.deliver(replies)
    if v < 3:
        return build_response(ctx.head, throttle_time_ms=0, error_code=err or (errors[0] if errors else 0))
    R = LeaveGroupResponse.MemberResponse
    return build_response(ctx.head, throttle_time_ms=0, error_code=err, members=[
        R(member_id=m, group_instance_id=i, error_code=e) for (m, i), e in zip(members, errors, strict=False)])


async def offset_commit(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    T = OffsetCommitResponse.OffsetCommitResponseTopic
    P = T.OffsetCommitResponsePartition
    v = ctx.head.api_version
    instance = req.group_instance_id if v >= 7 else None
    err, coord = b.groups.lookup(req.group_id)
    if coord is not None:
        gen = b.groups.incoming_generation(coord, req.group_id, req.generation_id_or_member_epoch)
        err = coord.validate_commit(now_ms(), req.group_id, req.member_id, gen, instance)
        b.groups.deliver([])
    now = wall_ms()
    accepted: list[tuple[str, int, Committed]] = []
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            e = err
            if e == Err.NONE:
                if b.metadata.partition(t.name, p.partition_index) is None:
                    e = UNKNOWN_TOPIC_OR_PARTITION
                elif p.committed_metadata is not None and len(p.committed_metadata) > MAX_METADATA:
                    e = OFFSET_METADATA_TOO_LARGE
                else:
                    epoch = p.committed_leader_epoch if v >= 6 else -1
                    accepted.append((t.name, p.partition_index,
                                     Committed(p.committed_offset, epoch, p.committed_metadata or "", now)))
            parts.append(P(partition_index=p.partition_index, error_code=e))
        out.append(T(name=t.name, partitions=parts))
    if accepted:
        try:
            code = await b.offsets.commit(req.group_id, accepted, now)
        except NotCoordinator:
            code = NOT_COORDINATOR
        if code:
            code = code if code == NOT_COORDINATOR else Err.COORDINATOR_NOT_AVAILABLE
            for t in out:
                for p in t.partitions:
                    if p.error_code == Err.NONE:
                        p.error_code = code
    return build_response(ctx.head, throttle_time_ms=0, topics=out)


async def offset_fetch(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    T = OffsetFetchResponse.OffsetFetchResponseTopic
    P = T.OffsetFetchResponsePartition
    err, _coord = b.groups.lookup(req.group_id)
    if err:
        return build_response(ctx.head, throttle_time_ms=0, topics=[], error_code=err)
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


async def describe_groups(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    G = DescribeGroupsResponse.DescribedGroup
    M = G.DescribedGroupMember
    out = []
    for gid in req.groups:
        err, coord = b.groups.lookup(gid)
        if coord is None:
            out.append(G(error_code=err, group_id=gid, group_state="", protocol_type="", protocol_data="",
                         members=[]))
            continue
        d = coord.describe(gid)
        stable = d.state is GroupState.STABLE
        members = [M(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                     client_host=m.client_host, member_metadata=m.metadata if stable else b"",
                     member_assignment=m.assignment if stable else b"") for m in d.members]
        out.append(G(error_code=0, group_id=gid, group_state=d.state.value, protocol_type=d.protocol_type,
                     protocol_data=d.protocol_name if stable else "", members=members))
    return build_response(ctx.head, throttle_time_ms=0, groups=out)


async def list_groups(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    L = ListGroupsResponse.ListedGroup
    groups = [c.describe(g) for c in b.groups.coordinators.values() for g in c.group_ids()]
    return build_response(ctx.head, throttle_time_ms=0, error_code=0,
                          groups=[L(group_id=d.group_id, protocol_type=d.protocol_type) for d in groups])


async def delete_groups(b: GroupHost, ctx: Ctx, req: Any) -> Any:
    R = DeleteGroupsResponse.DeletableGroupResult
    out = []
    for gid in req.groups_names:
        err, coord = b.groups.lookup(gid)
        if coord is not None:
            err = coord.delete(gid)
            if err == Err.GROUP_ID_NOT_FOUND and gid in b.offsets.committed:
                err = Err.NONE
            if err == Err.NONE:
                try:
                    b.offsets.delete_group(gid, wall_ms())
                except NotCoordinator:
                    err = NOT_COORDINATOR
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
