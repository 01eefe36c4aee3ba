"""Unit tests of the pure group-coordinator state machine `harness.model.group.GroupCoordinator`."""

from __future__ import annotations

import itertools

from harness.model.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    Err,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    JoinRequest,
    JoinResult,
    Reply,
    SyncResult,
    select_protocol,
)

G = "g1"
DELAY = 3000
SESSION = 10_000
REBALANCE = 30_000
T0 = 2 * DELAY  # when stable_group's groups become Stable


def coordinator(delay: int = DELAY) -> GroupCoordinator:
    counter = itertools.count(1)
    return GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=delay),
                            new_member_id=lambda client: f"{client}-{next(counter)}")


def req(member_id: str = "", client: str = "c", protocols: tuple[str, ...] = ("range",),
        instance: str | None = None, v4: bool = True) -> JoinRequest:
    return JoinRequest(G, member_id, "consumer", tuple((p, p.encode()) for p in protocols), SESSION,
                       REBALANCE, group_instance_id=instance, client_id=client, require_known_member_id=v4)


def by_ticket(replies: list[Reply]) -> dict[int, JoinResult | SyncResult]:
    return {r.ticket: r.result for r in replies}


def join_result(replies: list[Reply], ticket: int) -> JoinResult:
    result = by_ticket(replies)[ticket]
    assert isinstance(result, JoinResult)
    return result


def new_member(c: GroupCoordinator, now: int, ticket: int, client: str, **kw: object) -> tuple[str, list[Reply]]:
    """MEMBER_ID_REQUIRED round trip; returns the member id and the replies of the second join."""
    first = join_result(c.join(now, ticket, req(client=client, **kw)), ticket)  # type: ignore[arg-type]
    assert first.error == Err.MEMBER_ID_REQUIRED
    return first.member_id, c.join(now, ticket + 1, req(first.member_id, client=client, **kw))  # type: ignore[arg-type]


def stable_group(c: GroupCoordinator, clients: tuple[str, ...] = ("a", "b")) -> list[str]:
    """Bring a group of members to Stable at generation 1; returns member ids in join order."""
    ids = []
    replies: list[Reply] = []
    for i, client in enumerate(clients):
        mid, r = new_member(c, 0, 10 * i + 1, client)
        ids.append(mid)
        replies += r
    replies += c.tick(DELAY) + c.tick(T0)  # later joiners extend the initial delay once
    leader_ticket = 2
    res = join_result(replies, leader_ticket)
    assert res.generation_id == 1
    c.sync(T0, 100, G, ids[0], 1, {m: m.encode() for m in ids})
    for i, mid in enumerate(ids[1:], start=1):
        c.sync(T0, 100 + i, G, mid, 1)
    assert c.describe(G).state is GroupState.STABLE
    return ids


def test_member_id_required_round_trip_then_first_member_becomes_leader() -> None:
    """v4+ join with an empty id gets MEMBER_ID_REQUIRED + an id; the re-join with it is accepted; first is leader."""
    c = coordinator()
    mid, replies = new_member(c, 0, 1, "a")
    assert mid == "a-1" and replies == []
    assert c.describe(G).state is GroupState.PREPARING_REBALANCE
    assert c.next_deadline() == DELAY
    res = join_result(c.tick(DELAY), 2)
    assert (res.error, res.member_id, res.leader_id, res.generation_id) == (Err.NONE, mid, mid, 1)
    assert [m.member_id for m in res.members] == [mid]
    assert c.describe(G).state is GroupState.COMPLETING_REBALANCE


def test_old_join_version_gets_member_id_without_round_trip() -> None:
    """JoinGroup v0-v3 (no require_known_member_id) adds the member straight away."""
    c = coordinator(delay=0)
    res = join_result(c.join(0, 1, req(client="a", v4=False)), 1)
    assert res.error == Err.NONE and res.member_id == "a-1" and res.generation_id == 1


def test_second_joiner_waits_for_the_initial_rebalance_delay() -> None:
    """A second member joining during group.initial.rebalance.delay.ms extends the delay; both answered after."""
    c = coordinator()
    a, _ = new_member(c, 0, 1, "a")
    _b, replies = new_member(c, 1000, 3, "b")
    assert replies == []
    assert c.tick(DELAY) == []  # a new member arrived during the delay: wait one more delay
    assert c.next_deadline() == 2 * DELAY
    out = by_ticket(c.tick(2 * DELAY))
    assert set(out) == {2, 4}
    ra, rb = out[2], out[4]
    assert isinstance(ra, JoinResult) and isinstance(rb, JoinResult)
    assert ra.leader_id == rb.leader_id == a and ra.generation_id == rb.generation_id == 1
    assert len(ra.members) == 2 and rb.members == ()


def test_known_member_rejoining_in_stable_group_is_answered_at_once() -> None:
    """A follower re-joining a Stable group with unchanged metadata gets the current generation immediately."""
    c = coordinator()
    _a, b = stable_group(c)
    res = join_result(c.join(5000, 50, req(b, client="b")), 50)
    assert (res.error, res.generation_id, res.members) == (Err.NONE, 1, ())
    assert c.describe(G).state is GroupState.STABLE


def test_rebalance_completes_as_soon_as_every_known_member_has_rejoined() -> None:
    """After the leader re-joins (forcing a rebalance), the follower's re-join completes it with no timeout wait."""
    c = coordinator()
    a, b = stable_group(c)
    assert c.join(5000, 50, req(a, client="a")) == []
    assert c.describe(G).state is GroupState.PREPARING_REBALANCE
    assert c.heartbeat(5001, G, b, 1) == (Err.REBALANCE_IN_PROGRESS, [])
    out = by_ticket(c.join(5002, 51, req(b, client="b")))
    assert set(out) == {50, 51}
    assert all(isinstance(r, JoinResult) and r.generation_id == 2 for r in out.values())


def test_leader_leaving_hands_leadership_to_the_next_member() -> None:
    """LeaveGroup by the leader starts a rebalance whose leader is the first remaining member."""
    c = coordinator()
    a, b, d = stable_group(c, ("a", "b", "d"))
    err, errors, _ = c.leave(5000, G, [(a, None)])
    assert (err, errors) == (Err.NONE, [Err.NONE])
    desc = c.describe(G)
    assert desc.state is GroupState.PREPARING_REBALANCE and desc.leader_id == b
    c.join(5001, 60, req(b, client="b"))
    out = c.join(5002, 61, req(d, client="d"))
    res_b, res_d = join_result(out, 60), join_result(out, 61)
    assert res_b.leader_id == res_d.leader_id == b and res_b.generation_id == 2
    assert {m.member_id for m in res_b.members} == {b, d}


def test_session_expiry_removes_the_silent_member_and_rebalances() -> None:
    """A member that stops heart-beating is dropped after session.timeout.ms; the others re-join without it."""
    c = coordinator()
    a, b = stable_group(c)
    assert c.heartbeat(T0 + 5000, G, a, 1) == (Err.NONE, [])
    c.tick(T0 + SESSION - 1)
    assert c.describe(G).state is GroupState.STABLE
    c.tick(T0 + SESSION)  # b's last sign of life was its sync at T0
    desc = c.describe(G)
    assert desc.state is GroupState.PREPARING_REBALANCE and [m.member_id for m in desc.members] == [a]
    assert c.heartbeat(T0 + SESSION + 1, G, b, 1)[0] == Err.UNKNOWN_MEMBER_ID
    res = join_result(c.join(T0 + SESSION + 2, 70, req(a, client="a")), 70)
    assert res.generation_id == 2 and [m.member_id for m in res.members] == [a]


def test_rebalance_timeout_drops_members_that_never_rejoin() -> None:
    """Members that do not re-join within the rebalance timeout are removed when it fires."""
    c = coordinator()
    a, _b = stable_group(c)
    c.join(5000, 50, req(a, client="a"))
    c.heartbeat(5000, G, _b, 1)
    out = c.tick(5000 + REBALANCE)
    res = join_result(out, 50)
    assert res.generation_id == 2 and [m.member_id for m in res.members] == [a]


def test_protocol_voting_picks_the_most_voted_common_protocol() -> None:
    """Only protocols every member supports are candidates; each votes for its first; most votes wins."""
    assert select_protocol([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin"]]) == "roundrobin"
    assert select_protocol([["sticky", "range"], ["range", "sticky"], ["sticky", "range"]]) == "sticky"
    assert select_protocol([["a", "b", "c"], ["c", "b"]]) == "b"  # a tie goes to the earliest vote
    c = coordinator(delay=0)
    join_result(c.join(0, 1, req(client="x", protocols=("range", "roundrobin"), v4=False)), 1)
    out = c.join(1, 2, req(client="y", protocols=("roundrobin", "range"), v4=False))
    out += c.join(1, 3, req(client="z", protocols=("roundrobin",), v4=False))
    c.join(2, 4, req("x-1", client="x", protocols=("range", "roundrobin")))
    assert c.describe(G).protocol_name == "roundrobin"


def test_inconsistent_protocols_are_rejected() -> None:
    """A joiner sharing no protocol with the current members gets INCONSISTENT_GROUP_PROTOCOL."""
    c = coordinator()
    stable_group(c)
    res = join_result(c.join(5000, 50, req(client="z", protocols=("other",))), 50)
    assert res.error == Err.INCONSISTENT_GROUP_PROTOCOL


def test_generation_fencing_of_heartbeat_sync_and_commit() -> None:
    """Old generations get ILLEGAL_GENERATION, unknown members UNKNOWN_MEMBER_ID; offsets-only commits pass."""
    c = coordinator()
    a, _b = stable_group(c)
    assert c.heartbeat(5000, G, a, 0)[0] == Err.ILLEGAL_GENERATION
    assert c.heartbeat(5000, G, "nobody", 1)[0] == Err.UNKNOWN_MEMBER_ID
    sync = by_ticket(c.sync(5000, 90, G, a, 7))[90]
    assert isinstance(sync, SyncResult) and sync.error == Err.ILLEGAL_GENERATION
    assert c.validate_commit(5000, G, a, 0) == Err.ILLEGAL_GENERATION
    assert c.validate_commit(5000, G, "nobody", 1) == Err.UNKNOWN_MEMBER_ID
    assert c.validate_commit(5000, G, a, 1) == Err.NONE
    assert c.validate_commit(5000, "standalone", "", -1) == Err.NONE
    assert c.validate_commit(5000, "other", "m", 3) == Err.ILLEGAL_GENERATION


def test_commit_during_rebalance_with_current_generation_is_accepted() -> None:
    """Eager consumers commit on revoke while the group prepares a rebalance: same generation is still valid."""
    c = coordinator()
    a, b = stable_group(c)
    c.join(5000, 50, req(a, client="a"))
    assert c.validate_commit(5001, G, b, 1) == Err.NONE


def test_sync_hands_every_member_its_assignment() -> None:
    """Followers' SyncGroup waits for the leader's; then each gets the bytes the leader assigned it."""
    c = coordinator()
    a, _ = new_member(c, 0, 1, "a")
    b, _ = new_member(c, 0, 3, "b")
    c.tick(DELAY)
    c.tick(2 * DELAY)
    assert c.sync(2 * DELAY, 10, G, b, 1) == []
    out = by_ticket(c.sync(2 * DELAY, 11, G, a, 1, {a: b"A", b: b"B"}))
    assert {t: r.assignment for t, r in out.items() if isinstance(r, SyncResult)} == {10: b"B", 11: b"A"}
    assert c.describe(G).state is GroupState.STABLE


def test_static_member_rejoin_keeps_generation_and_fences_the_old_id() -> None:
    """A static member re-joining with an empty id replaces its old id without a rebalance; the old id is fenced."""
    c = coordinator(delay=0)
    r = join_result(c.join(0, 1, req(client="s", instance="inst-1")), 1)
    assert r.error == Err.NONE and r.generation_id == 1  # static members skip MEMBER_ID_REQUIRED
    old = r.member_id
    c.sync(0, 2, G, old, 1, {old: b"A"})
    r2 = join_result(c.join(100, 3, req(client="s", instance="inst-1")), 3)
    assert r2.error == Err.NONE and r2.member_id != old and r2.generation_id == 1
    assert r2.leader_id == old and r2.members == ()
    assert c.describe(G).state is GroupState.STABLE
    assert c.heartbeat(200, G, old, 1, "inst-1")[0] == Err.FENCED_INSTANCE_ID
    sync = by_ticket(c.sync(200, 4, G, r2.member_id, 1, group_instance_id="inst-1"))[4]
    assert isinstance(sync, SyncResult) and sync.assignment == b"A"


def test_static_member_survives_rebalance_timeout_without_rejoining() -> None:
    """Static members that miss a rebalance are kept (dynamic ones are dropped)."""
    c = coordinator(delay=0)
    s = join_result(c.join(0, 1, req(client="s", instance="i1")), 1).member_id
    d, _ = new_member(c, 0, 2, "d")
    # d's join started a rebalance; s keeps heart-beating but never re-joins before the timeout
    for t in range(5000, REBALANCE, 5000):
        assert c.heartbeat(t, G, s, 1, "i1")[0] == Err.REBALANCE_IN_PROGRESS
    res = join_result(c.tick(REBALANCE), 3)
    assert res.generation_id == 2
    assert {m.member_id for m in c.describe(G).members} == {s, d}


def test_pending_member_id_expires_after_session_timeout() -> None:
    """An id handed out with MEMBER_ID_REQUIRED but never used is forgotten after session.timeout.ms."""
    c = coordinator()
    first = join_result(c.join(0, 1, req(client="a")), 1)
    c.tick(SESSION)
    res = join_result(c.join(SESSION + 1, 2, req(first.member_id, client="a")), 2)
    assert res.error == Err.UNKNOWN_MEMBER_ID


def test_new_member_waiting_in_a_long_rebalance_times_out() -> None:
    """A brand-new member stuck awaiting join is dropped after the new-member join timeout."""
    c = coordinator(delay=0)
    a = join_result(c.join(0, 1, req(client="a", v4=False)), 1).member_id
    c.sync(0, 2, G, a, 1, {})
    c.join(10, 3, req(client="b", v4=False))  # a never re-joins; b waits
    assert c.describe(G).state is GroupState.PREPARING_REBALANCE
    c.heartbeat(10, G, a, 1)
    assert c.next_deadline() is not None
    c.tick(NEW_MEMBER_JOIN_TIMEOUT_MS + 10)
    assert all(m.member_id != "b-2" for m in c.describe(G).members)


def test_invalid_session_timeout_rejected() -> None:
    """session.timeout.ms outside [group.min.session.timeout.ms, max] gets INVALID_SESSION_TIMEOUT."""
    c = coordinator()
    bad = JoinRequest(G, "", "consumer", (("range", b""),), 100, 1000)
    assert join_result(c.join(0, 1, bad), 1).error == Err.INVALID_SESSION_TIMEOUT


def test_empty_group_after_all_leave_and_delete() -> None:
    """All members leaving ends in Empty with a bumped generation; only an Empty group can be deleted."""
    c = coordinator()
    a, b = stable_group(c)
    assert c.delete(G) == Err.NON_EMPTY_GROUP
    c.leave(5000, G, [(a, None), (b, None)])
    desc = c.describe(G)
    assert desc.state is GroupState.EMPTY and desc.generation_id == 2
    assert c.delete(G) == Err.NONE and G not in c.group_ids()


def test_known_member_rejoining_before_the_leader_syncs_is_answered_at_once() -> None:
    """In CompletingRebalance (leader has not synced yet), a follower re-sending an unchanged JoinGroup
    (it lost the response) gets the current generation immediately, without a new rebalance."""
    c = coordinator()
    a, _ = new_member(c, 0, 1, "a")
    b, _ = new_member(c, 0, 3, "b")
    c.tick(DELAY)
    c.tick(T0)
    assert c.describe(G).state is GroupState.COMPLETING_REBALANCE
    res = join_result(c.join(T0 + 10, 40, req(b, client="b")), 40)
    assert (res.error, res.generation_id, res.leader_id, res.members) == (Err.NONE, 1, a, ())
    assert c.describe(G).state is GroupState.COMPLETING_REBALANCE


def test_random_event_sequences_keep_the_group_invariants() -> None:
    """Under random joins, leaves, heartbeats, syncs and time: generation never decreases, the leader is a
    member, Stable/CompletingRebalance groups have members, and Empty groups have none."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    ops = st.lists(st.tuples(st.sampled_from(["join", "rejoin", "leave", "hb", "sync", "tick"]),
                             st.integers(0, 3), st.integers(0, 20_000)), max_size=40)

    @settings(max_examples=150, deadline=None)
    @given(ops)
    def run(events: list[tuple[str, int, int]]) -> None:
        c = coordinator(delay=500)
        now, ticket, last_gen = 0, 1000, 0
        ids: dict[int, str] = {}
        for op, who, dt in events:
            now += dt
            ticket += 1
            d = c.describe(G)
            mid = ids.get(who, "")
            if op == "join":
                r = by_ticket(c.join(now, ticket, req(client=f"c{who}", v4=False))).get(ticket)
                if isinstance(r, JoinResult) and r.member_id:
                    ids[who] = r.member_id
            elif op == "rejoin" and mid:
                c.join(now, ticket, req(mid, client=f"c{who}"))
            elif op == "leave" and mid:
                c.leave(now, G, [(mid, None)])
            elif op == "hb" and mid:
                c.heartbeat(now, G, mid, d.generation_id)
            elif op == "sync" and mid:
                c.sync(now, ticket, G, mid, d.generation_id, {m.member_id: b"x" for m in d.members})
            else:
                c.tick(now)
            d = c.describe(G)
            if d.state is GroupState.DEAD:  # never created yet
                continue
            assert d.generation_id >= last_gen
            last_gen = max(last_gen, d.generation_id)
            members = {m.member_id for m in d.members}
            if d.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                assert members and d.leader_id in members
            if d.state is GroupState.EMPTY:
                assert not members
            if members:
                assert d.leader_id in members

    run()
