"""The consumer-group coordinator's server-side state machine (KAFKA-BEHAVIOUR.md §4), pure.

`GroupCoordinator` owns every group's members, generation, leader, protocol and assignment, and
the classic-protocol rules of ZooKeeper-mode Kafka's `GroupCoordinator`: join (MEMBER_ID_REQUIRED
for JoinGroup v4+, static members with `group.instance.id`), sync, heartbeat, leave, session
expiry, rebalance timeout, the initial rebalance delay, group-leader choice and protocol voting,
and generation fencing of heartbeats and commits.

It does no I/O and reads no clock: every call takes `now_ms` and returns the replies to deliver
(JoinGroup and SyncGroup answers may be owed to *other* members' pending requests, identified by
the caller's `ticket`) plus, through `next_deadline()`, when the caller must call `tick()` next.
Error codes are Kafka's numeric codes (see `Err`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum


class Err:
    """Kafka protocol error codes the coordinator answers with."""

    NONE = 0
    COORDINATOR_NOT_AVAILABLE = 15
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    GROUP_ID_NOT_FOUND = 69
    NON_EMPTY_GROUP = 68
    MEMBER_ID_REQUIRED = 79
    FENCED_INSTANCE_ID = 82
    INVALID_GROUP_ID = 24


class GroupState(Enum):
    """Server-side group states; `value` is the name DescribeGroups reports."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# A new member (never completed a join) waiting in a rebalance is dropped after this long (Kafka's value).
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Broker settings the coordinator obeys (Kafka property names in the comments)."""

    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """One JoinGroup request, as decoded by the broker."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    client_id: str = "client"
    client_host: str = "/127.0.0.1"
    require_known_member_id: bool = True  # JoinGroup v4+


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """A member as the leader's JoinGroup response lists it."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    """The JoinGroup response owed to one request."""

    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    """The SyncGroup response owed to one request."""

    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """Deliver `result` to the pending request the caller registered as `ticket`."""

    ticket: int
    result: JoinResult | SyncResult


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member as DescribeGroups reports it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """One group as DescribeGroups / ListGroups report it."""

    group_id: str
    state: GroupState
    generation_id: int
    protocol_type: str
    protocol_name: str
    leader_id: str
    members: tuple[MemberDescription, ...]


@dataclass(slots=True)
class _Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_seen_ms: int
    is_new: bool = True
    join_ticket: int | None = None
    sync_ticket: int | None = None
    assignment: bytes = b""

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def vote(self, candidates: set[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)

    def expiry_ms(self) -> int | None:
        if self.join_ticket is not None:
            return self.last_seen_ms + NEW_MEMBER_JOIN_TIMEOUT_MS if self.is_new else None
        if self.sync_ticket is not None:
            return None
        return self.last_seen_ms + self.session_timeout_ms


@dataclass(slots=True)
class _Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str = ""
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, _Member] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending: dict[str, int] = field(default_factory=dict)  # MEMBER_ID_REQUIRED ids -> expiry
    join_deadline_ms: int | None = None
    initial_delay: bool = False
    delay_remaining_ms: int = 0
    new_member_added: bool = False
    pending_sync: set[str] = field(default_factory=set)
    sync_deadline_ms: int | None = None

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return not self.pending and all(m.join_ticket is not None for m in self.members.values())

    def candidates(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its first candidate; most votes wins, ties go to the earliest vote."""
        votes: dict[str, int] = {}
        cands = self.candidates()
        for m in self.members.values():
            choice = m.vote(cands)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, n in votes.items() if n == best)

    def fenced(self, instance_id: str | None, member_id: str) -> bool:
        return instance_id is not None and self.static.get(instance_id, member_id) != member_id


def select_protocol(member_protocols: Iterable[Iterable[str]]) -> str:
    """Protocol voting on plain preference lists (the rule of KAFKA-BEHAVIOUR.md §4)."""
    group = _Group("vote")
    for i, prefs in enumerate(member_protocols):
        group.members[str(i)] = _Member(str(i), None, "", "", "consumer",
                                        tuple((p, b"") for p in prefs), 0, 0, 0)
    return group.select_protocol()


class GroupCoordinator:
    """Every group this broker coordinates; feed it requests and time, deliver what it returns."""

    def __init__(self, config: GroupConfig | None = None,
                 new_member_id: Callable[[str], str] | None = None) -> None:
        self.config = config or GroupConfig()
        self._groups: dict[str, _Group] = {}
        self._new_member_id = new_member_id or (lambda client_id: f"{client_id}-{uuid.uuid4()}")

    # ---- queries -------------------------------------------------------------------------
    def describe(self, group_id: str) -> GroupDescription:
        g = self._groups.get(group_id)
        if g is None:
            return GroupDescription(group_id, GroupState.DEAD, -1, "", "", "", ())
        members = tuple(
            MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host,
                              m.metadata_for(g.protocol_name), m.assignment)
            for m in g.members.values()) if g.state is not GroupState.DEAD else ()
        return GroupDescription(g.group_id, g.state, g.generation, g.protocol_type,
                                g.protocol_name or "", g.leader_id or "", members)

    def group_ids(self) -> list[str]:
        return [gid for gid, g in self._groups.items() if g.state is not GroupState.DEAD]

    def next_deadline(self) -> int | None:
        """The earliest `now_ms` at which `tick` has something to do, or None."""
        times: list[int] = []
        for g in self._groups.values():
            times.extend(t for t in (g.join_deadline_ms, g.sync_deadline_ms) if t is not None)
            times.extend(g.pending.values())
            times.extend(t for m in g.members.values() if (t := m.expiry_ms()) is not None)
        return min(times, default=None)

    # ---- persistence hooks ---------------------------------------------------------------
    def restore(self, group_id: str, generation: int, protocol_type: str = "") -> None:
        """Recreate a group loaded from the offsets log: Empty, members gone, generation kept."""
        self._groups[group_id] = _Group(group_id, generation=generation, protocol_type=protocol_type)

    def ensure_group(self, group_id: str) -> None:
        """Create an Empty group (an offsets-only group's first commit does this)."""
        g = self._groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            self._groups[group_id] = _Group(group_id)

    def delete(self, group_id: str) -> int:
        """DeleteGroups: only an Empty group can go (NON_EMPTY_GROUP otherwise)."""
        g = self._groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            return Err.GROUP_ID_NOT_FOUND
        if g.state is not GroupState.EMPTY:
            return Err.NON_EMPTY_GROUP
        g.state = GroupState.DEAD
        del self._groups[group_id]
        return Err.NONE

    # ---- events --------------------------------------------------------------------------
    def tick(self, now_ms: int) -> list[Reply]:
        """Fire every deadline due at `now_ms`: initial delay, rebalance timeout, expiries."""
        out: list[Reply] = []
        for g in list(self._groups.values()):
            self._tick_group(g, now_ms, out)
        return out

    def join(self, now_ms: int, ticket: int, req: JoinRequest) -> list[Reply]:
        """JoinGroup; the answer to `ticket` may come now or from a later call."""
        out = self.tick(now_ms)
        if not req.group_id:
            return [*out, Reply(ticket, JoinResult(Err.INVALID_GROUP_ID, req.member_id))]
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            return [*out, Reply(ticket, JoinResult(Err.INVALID_SESSION_TIMEOUT, req.member_id))]
        g = self._groups.get(req.group_id)
        if g is None:
            if req.member_id:
                return [*out, Reply(ticket, JoinResult(Err.UNKNOWN_MEMBER_ID, req.member_id))]
            g = self._groups[req.group_id] = _Group(req.group_id)
        if g.state is GroupState.DEAD:
            return [*out, Reply(ticket, JoinResult(Err.COORDINATOR_NOT_AVAILABLE, req.member_id))]
        if not self._supports(g, req):
            return [*out, Reply(ticket, JoinResult(Err.INCONSISTENT_GROUP_PROTOCOL, req.member_id))]
        if not req.member_id:
            self._join_unknown(g, now_ms, ticket, req, out)
        else:
            self._join_known(g, now_ms, ticket, req, out)
        self._try_complete_join(g, now_ms, out)
        out.extend(self.tick(now_ms))
        return out

    def sync(self, now_ms: int, ticket: int, group_id: str, member_id: str, generation: int,
             assignments: dict[str, bytes] | None = None, group_instance_id: str | None = None,
             protocol_type: str | None = None, protocol_name: str | None = None) -> list[Reply]:
        """SyncGroup; the leader passes `assignments` (member id -> bytes)."""
        out = self.tick(now_ms)
        g = self._groups.get(group_id)
        err = self._validate(g, member_id, generation, group_instance_id)
        if err == Err.NONE and g is not None and (
                (protocol_type is not None and protocol_type != g.protocol_type)
                or (protocol_name is not None and protocol_name != g.protocol_name)):
            err = Err.INCONSISTENT_GROUP_PROTOCOL
        if err != Err.NONE or g is None:
            return [*out, Reply(ticket, SyncResult(err))]
        if g.state is GroupState.EMPTY:
            return [*out, Reply(ticket, SyncResult(Err.UNKNOWN_MEMBER_ID))]
        if g.state is GroupState.PREPARING_REBALANCE:
            return [*out, Reply(ticket, SyncResult(Err.REBALANCE_IN_PROGRESS))]
        member = g.members[member_id]
        g.pending_sync.discard(member_id)
        if g.state is GroupState.STABLE:
            member.last_seen_ms = now_ms
            return [*out, Reply(ticket, SyncResult(Err.NONE, member.assignment, g.protocol_type,
                                                   g.protocol_name))]
        member.sync_ticket = ticket
        if member_id == g.leader_id:
            given = assignments or {}
            for m in g.members.values():
                m.assignment = given.get(m.member_id, b"")
            g.state = GroupState.STABLE
            for m in g.members.values():
                if m.sync_ticket is not None:
                    out.append(Reply(m.sync_ticket, SyncResult(Err.NONE, m.assignment, g.protocol_type,
                                                               g.protocol_name)))
                    m.sync_ticket = None
                    m.last_seen_ms = now_ms
        return out

    def heartbeat(self, now_ms: int, group_id: str, member_id: str, generation: int,
                  group_instance_id: str | None = None) -> tuple[int, list[Reply]]:
        """Heartbeat: the error code to answer now, plus replies due to others."""
        out = self.tick(now_ms)
        g = self._groups.get(group_id)
        err = self._validate(g, member_id, generation, group_instance_id)
        if err != Err.NONE or g is None:
            return err, out
        if g.state is GroupState.EMPTY:
            return Err.UNKNOWN_MEMBER_ID, out
        g.members[member_id].last_seen_ms = now_ms
        if g.state is GroupState.PREPARING_REBALANCE:
            return Err.REBALANCE_IN_PROGRESS, out
        return Err.NONE, out

    def leave(self, now_ms: int, group_id: str,
              members: Iterable[tuple[str, str | None]]) -> tuple[int, list[int], list[Reply]]:
        """LeaveGroup for (member id, group instance id) pairs: group error, per-member errors, replies."""
        out = self.tick(now_ms)
        g = self._groups.get(group_id)
        if g is None:
            return Err.NONE, [Err.UNKNOWN_MEMBER_ID for _ in members], out
        if g.state is GroupState.DEAD:
            return Err.COORDINATOR_NOT_AVAILABLE, [], out
        errors: list[int] = []
        for member_id, instance_id in members:
            mid = member_id or (g.static.get(instance_id, "") if instance_id else "")
            if g.fenced(instance_id, mid):
                errors.append(Err.FENCED_INSTANCE_ID)
            elif mid in g.pending:
                del g.pending[mid]
                errors.append(Err.NONE)
            elif mid not in g.members:
                errors.append(Err.UNKNOWN_MEMBER_ID)
            else:
                self._remove_member(g, g.members[mid], now_ms, out)
                errors.append(Err.NONE)
        self._try_complete_join(g, now_ms, out)
        return Err.NONE, errors, out

    def validate_commit(self, now_ms: int, group_id: str, member_id: str, generation: int,
                        group_instance_id: str | None = None) -> int:
        """OffsetCommit fencing: NONE to accept; a commit from a member also counts as a heartbeat."""
        g = self._groups.get(group_id)
        if g is None:
            if generation < 0:
                self.ensure_group(group_id)
                return Err.NONE
            return Err.ILLEGAL_GENERATION
        if g.state is GroupState.DEAD:
            return Err.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and g.state is GroupState.EMPTY:
            return Err.NONE
        if g.fenced(group_instance_id, member_id):
            return Err.FENCED_INSTANCE_ID
        if generation >= 0 or member_id or group_instance_id is not None:
            if member_id not in g.members:
                return Err.UNKNOWN_MEMBER_ID
            if generation != g.generation:
                return Err.ILLEGAL_GENERATION
        if g.state is GroupState.COMPLETING_REBALANCE:
            return Err.REBALANCE_IN_PROGRESS
        if member_id in g.members:
            g.members[member_id].last_seen_ms = now_ms
        return Err.NONE

    # ---- internals -----------------------------------------------------------------------
    def _validate(self, g: _Group | None, member_id: str, generation: int, instance_id: str | None) -> int:
        if g is None:
            return Err.UNKNOWN_MEMBER_ID
        if g.state is GroupState.DEAD:
            return Err.COORDINATOR_NOT_AVAILABLE
        if g.fenced(instance_id, member_id):
            return Err.FENCED_INSTANCE_ID
        if member_id not in g.members:
            return Err.UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return Err.ILLEGAL_GENERATION
        return Err.NONE

    @staticmethod
    def _supports(g: _Group, req: JoinRequest) -> bool:
        names = {name for name, _ in req.protocols}
        if not req.protocol_type or not names:
            return False
        if not g.members:
            return True
        if req.protocol_type != g.protocol_type:
            return False
        others = [m for m in g.members.values() if m.member_id != req.member_id]
        return any(all(n in {p for p, _ in m.protocols} for m in others) for n in names)

    def _join_unknown(self, g: _Group, now: int, ticket: int, req: JoinRequest, out: list[Reply]) -> None:
        new_id = self._new_member_id(req.client_id)
        if req.group_instance_id is not None:
            old_id = g.static.get(req.group_instance_id)
            if old_id is not None and old_id in g.members:
                self._replace_static(g, now, ticket, req, old_id, new_id, out)
            else:
                self._add_member(g, now, ticket, req, new_id, out)
        elif req.require_known_member_id:
            g.pending[new_id] = now + req.session_timeout_ms
            out.append(Reply(ticket, JoinResult(Err.MEMBER_ID_REQUIRED, new_id)))
        else:
            self._add_member(g, now, ticket, req, new_id, out)

    def _join_known(self, g: _Group, now: int, ticket: int, req: JoinRequest, out: list[Reply]) -> None:
        mid = req.member_id
        if mid in g.pending:
            del g.pending[mid]
            self._add_member(g, now, ticket, req, mid, out)
            return
        if g.fenced(req.group_instance_id, mid):
            out.append(Reply(ticket, JoinResult(Err.FENCED_INSTANCE_ID, mid)))
            return
        unknown_instance = req.group_instance_id is not None and req.group_instance_id not in g.static
        if mid not in g.members or unknown_instance:
            out.append(Reply(ticket, JoinResult(Err.UNKNOWN_MEMBER_ID, mid)))
            return
        m = g.members[mid]
        same = m.protocols == req.protocols
        if g.state is GroupState.PREPARING_REBALANCE:
            self._update_member(g, m, now, ticket, req, out)
        elif same and (g.state is GroupState.COMPLETING_REBALANCE
                       or (g.state is GroupState.STABLE and mid != g.leader_id)):
            # A known member re-joining unchanged (it lost the response) is answered at once.
            out.append(Reply(ticket, self._join_result(g, m)))
        elif g.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            self._update_member(g, m, now, ticket, req, out)
        else:
            out.append(Reply(ticket, JoinResult(Err.UNKNOWN_MEMBER_ID, mid)))

    def _join_result(self, g: _Group, m: _Member) -> JoinResult:
        members: tuple[JoinedMember, ...] = ()
        if m.member_id == g.leader_id:
            members = tuple(JoinedMember(x.member_id, x.instance_id, x.metadata_for(g.protocol_name))
                            for x in g.members.values())
        return JoinResult(Err.NONE, m.member_id, g.generation, g.protocol_type, g.protocol_name,
                          g.leader_id or "", members)

    def _add_member(self, g: _Group, now: int, ticket: int, req: JoinRequest, mid: str,
                    out: list[Reply]) -> None:
        m = _Member(mid, req.group_instance_id, req.client_id, req.client_host, req.protocol_type,
                    req.protocols, req.session_timeout_ms,
                    req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else req.session_timeout_ms,
                    now, is_new=True, join_ticket=ticket)
        if g.state is GroupState.PREPARING_REBALANCE and g.generation == 0:
            g.new_member_added = True
        if not g.members:
            g.protocol_type = req.protocol_type
        g.members[mid] = m
        if req.group_instance_id is not None:
            g.static[req.group_instance_id] = mid
        if g.leader_id is None:
            g.leader_id = mid
        self._maybe_prepare(g, now, out)

    def _update_member(self, g: _Group, m: _Member, now: int, ticket: int, req: JoinRequest,
                       out: list[Reply]) -> None:
        m.protocols = req.protocols
        m.session_timeout_ms = req.session_timeout_ms
        if req.rebalance_timeout_ms > 0:
            m.rebalance_timeout_ms = req.rebalance_timeout_ms
        if m.join_ticket is not None and m.join_ticket != ticket:
            out.append(Reply(m.join_ticket, JoinResult(Err.UNKNOWN_MEMBER_ID, m.member_id)))
        m.join_ticket = ticket
        m.last_seen_ms = now
        self._maybe_prepare(g, now, out)

    def _replace_static(self, g: _Group, now: int, ticket: int, req: JoinRequest, old_id: str,
                        new_id: str, out: list[Reply]) -> None:
        old_leader = g.leader_id
        m = g.members.pop(old_id)
        if m.join_ticket is not None:
            out.append(Reply(m.join_ticket, JoinResult(Err.FENCED_INSTANCE_ID, old_id)))
        if m.sync_ticket is not None:
            out.append(Reply(m.sync_ticket, SyncResult(Err.FENCED_INSTANCE_ID)))
        m.join_ticket = m.sync_ticket = None
        m.member_id = new_id
        g.members[new_id] = m
        g.static[req.group_instance_id or ""] = new_id
        g.pending_sync.discard(old_id)
        if g.leader_id == old_id:
            g.leader_id = new_id
        m.last_seen_ms = now
        same = m.protocols == req.protocols
        m.protocols, m.session_timeout_ms = req.protocols, req.session_timeout_ms
        if g.state is GroupState.STABLE:
            if same:
                # Kafka answers with the *old* leader id so nobody re-assigns a Stable group.
                out.append(Reply(ticket, JoinResult(Err.NONE, new_id, g.generation, g.protocol_type,
                                                    g.protocol_name, old_leader or "", ())))
                return
            m.join_ticket = ticket
            self._prepare_rebalance(g, now, out)
        elif g.state is GroupState.COMPLETING_REBALANCE:
            m.join_ticket = ticket
            self._prepare_rebalance(g, now, out)
        else:
            m.join_ticket = ticket

    def _maybe_prepare(self, g: _Group, now: int, out: list[Reply]) -> None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(g, now, out)

    def _prepare_rebalance(self, g: _Group, now: int, out: list[Reply]) -> None:
        if g.state is GroupState.COMPLETING_REBALANCE:
            for m in g.members.values():
                if m.sync_ticket is not None:
                    out.append(Reply(m.sync_ticket, SyncResult(Err.REBALANCE_IN_PROGRESS)))
                    m.sync_ticket = None
                m.assignment = b""
        g.pending_sync.clear()
        g.sync_deadline_ms = None
        delay = self.config.initial_rebalance_delay_ms
        if g.state is GroupState.EMPTY:
            g.initial_delay = True
            g.delay_remaining_ms = max(g.rebalance_timeout_ms() - delay, 0)
            g.join_deadline_ms = now + delay
        else:
            g.initial_delay = False
            g.join_deadline_ms = now + g.rebalance_timeout_ms()
        g.new_member_added = False
        g.state = GroupState.PREPARING_REBALANCE

    def _try_complete_join(self, g: _Group, now: int, out: list[Reply]) -> None:
        if g.state is GroupState.PREPARING_REBALANCE and not g.initial_delay and g.all_joined():
            self._complete_join(g, now, out)

    def _complete_join(self, g: _Group, now: int, out: list[Reply]) -> None:
        for m in [m for m in g.members.values() if m.join_ticket is None and m.instance_id is None]:
            self._drop(g, m)
        leader = g.members.get(g.leader_id or "")
        if leader is not None and leader.join_ticket is None:
            joined = next((mid for mid, m in g.members.items() if m.join_ticket is not None), None)
            if joined is None:
                g.join_deadline_ms = now + g.rebalance_timeout_ms()
                return
            g.leader_id = joined
        g.join_deadline_ms = None
        g.initial_delay = False
        g.generation += 1
        if not g.members:
            g.protocol_name = None
            g.leader_id = None
            g.state = GroupState.EMPTY
            return
        g.protocol_name = g.select_protocol()
        g.state = GroupState.COMPLETING_REBALANCE
        for m in g.members.values():
            if m.join_ticket is not None:
                out.append(Reply(m.join_ticket, self._join_result(g, m)))
                m.join_ticket = None
            m.last_seen_ms = now
            m.is_new = False
        g.pending_sync = set(g.members)
        g.sync_deadline_ms = now + g.rebalance_timeout_ms()

    def _drop(self, g: _Group, m: _Member) -> None:
        g.members.pop(m.member_id, None)
        if m.instance_id is not None and g.static.get(m.instance_id) == m.member_id:
            del g.static[m.instance_id]
        g.pending_sync.discard(m.member_id)
        if g.leader_id == m.member_id:
            g.leader_id = next(iter(g.members), None)

    def _remove_member(self, g: _Group, m: _Member, now: int, out: list[Reply]) -> None:
        if m.join_ticket is not None:
            out.append(Reply(m.join_ticket, JoinResult(Err.UNKNOWN_MEMBER_ID, "")))
        if m.sync_ticket is not None:
            out.append(Reply(m.sync_ticket, SyncResult(Err.UNKNOWN_MEMBER_ID)))
        self._drop(g, m)
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(g, now, out)

    def _tick_group(self, g: _Group, now: int, out: list[Reply]) -> None:
        for mid, expiry in list(g.pending.items()):
            if expiry <= now:
                del g.pending[mid]
        for m in list(g.members.values()):
            t = m.expiry_ms()
            if t is not None and t <= now and m.member_id in g.members:
                self._remove_member(g, m, now, out)
        if g.sync_deadline_ms is not None and g.sync_deadline_ms <= now:
            g.sync_deadline_ms = None
            late = [g.members[mid] for mid in g.pending_sync if mid in g.members]
            g.pending_sync.clear()
            if late and g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                for m in late:
                    self._drop(g, m)
                self._prepare_rebalance(g, now, out)
        if g.state is GroupState.PREPARING_REBALANCE and g.join_deadline_ms is not None:
            if g.join_deadline_ms <= now:
                if g.initial_delay and g.new_member_added and g.delay_remaining_ms > 0:
                    g.new_member_added = False
                    step = min(self.config.initial_rebalance_delay_ms, g.delay_remaining_ms)
                    g.delay_remaining_ms = max(g.delay_remaining_ms - step, 0)
                    g.join_deadline_ms = now + step
                else:
                    g.initial_delay = False
                    self._complete_join(g, now, out)
            else:
                self._try_complete_join(g, now, out)
