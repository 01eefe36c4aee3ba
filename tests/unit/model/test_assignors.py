"""Assignors of KAFKA-BEHAVIOUR.md §5: librdkafka examples, and hypothesis properties for every assignor."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model.assignors import (
    StickyViolation,
    assignment_problems,
    is_balanced,
    max_retention,
    range_assign,
    retained_count,
    roundrobin_assign,
    sticky_assign,
    sticky_violations,
)


def _tps(topic: str, ps: range | list[int]) -> list[tuple[str, int]]:
    return [(topic, p) for p in ps]


def test_range_spec_examples_10_and_11_partitions_3_members() -> None:
    assert range_assign(["m2", "m0", "m1"], {"t": 10}) == {
        "m0": _tps("t", range(0, 4)), "m1": _tps("t", range(4, 7)), "m2": _tps("t", range(7, 10))}
    assert range_assign(["m0", "m1", "m2"], {"t": 11}) == {
        "m0": _tps("t", range(0, 4)), "m1": _tps("t", range(4, 8)), "m2": _tps("t", range(8, 11))}


def test_range_is_per_topic_so_first_member_gets_4_plus_4() -> None:
    got = range_assign(["a", "b", "c"], {"x": 10, "y": 10})
    assert [len(got[m]) for m in "abc"] == [8, 6, 6]


def test_range_librdkafka_doc_example_two_members_two_topics() -> None:
    """rdkafka_range_assignor.c header: C0: [t0p0, t0p1, t1p0, t1p1], C1: [t0p2, t1p2]."""
    assert range_assign(["C1", "C0"], {"t0": 3, "t1": 3}) == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}


def test_range_sorts_member_ids_bytewise_and_gives_extra_members_nothing() -> None:
    got = range_assign(["b", "B", "a"], {"t": 2})
    assert got == {"B": [("t", 0)], "a": [("t", 1)], "b": []}


def test_roundrobin_librdkafka_doc_example() -> None:
    """rdkafka_roundrobin_assignor.c header: C0: [t0p0, t0p2, t1p1], C1: [t0p1, t1p0, t1p2]."""
    assert roundrobin_assign(["C0", "C1"], {"t0": 3, "t1": 3}) == {
        "C0": [("t0", 0), ("t0", 2), ("t1", 1)], "C1": [("t0", 1), ("t1", 0), ("t1", 2)]}


def test_roundrobin_skips_unsubscribed_members_and_carries_cursor_across_topics() -> None:
    got = roundrobin_assign(["A", "B", "C"], {"t": 3, "u": 3}, {"A": ["t", "u"], "B": ["u"], "C": ["t", "u"]})
    assert got == {"A": [("t", 0), ("t", 2), ("u", 2)], "B": [("u", 0)], "C": [("t", 1), ("u", 1)]}


def test_unknown_subscribed_topics_are_ignored_and_unsubscribed_topics_unassigned() -> None:
    got = range_assign(["a"], {"t": 2, "u": 1}, {"a": ["t", "missing"]})
    assert got == {"a": [("t", 0), ("t", 1)]}


def test_sticky_keeps_previous_owners_when_a_member_joins() -> None:
    prev = {"a": _tps("t", range(0, 4)), "b": _tps("t", range(4, 7)), "c": _tps("t", range(7, 10))}
    cur = sticky_assign(["a", "b", "c", "d"], {"t": 10}, previous=prev)
    assert sorted(len(v) for v in cur.values()) == [2, 2, 3, 3]
    assert retained_count(prev, cur) == 8 == max_retention(["a", "b", "c", "d"], {"t": 10}, prev)


def test_sticky_violations_flags_needless_moves() -> None:
    prev = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}
    cur = {"a": [("t", 0)], "b": [("t", 1), ("t", 2), ("t", 3)]}
    assert sticky_violations(prev, cur) == [StickyViolation("move_to_larger", ("t", 1), "a", "b")]
    swapped = {"a": [("t", 0), ("t", 2)], "b": [("t", 1), ("t", 3)]}
    assert StickyViolation("swap", ("t", 1), "a", "b", ("t", 2)) in sticky_violations(prev, swapped)


def test_assignment_problems_reports_duplicates_gaps_and_foreign_topics() -> None:
    bad = {"a": [("t", 0), ("t", 0)], "b": [("u", 0), ("t", 5)]}
    problems = assignment_problems(bad, {"t": 2, "u": 1}, {"a": ["t"], "b": ["t"]})
    text = "\n".join(problems)
    assert "t/0 owned by 2" in text and "t/1 is subscribed but unassigned" in text
    assert "u/0 given to 'b'" in text and "t/5 does not exist" in text


def test_is_balanced_accepts_unequal_counts_forced_by_subscriptions() -> None:
    asg = {"a": _tps("t", range(5)), "b": [("u", 0)]}
    assert is_balanced(asg, {"a": ["t"], "b": ["u"]})
    assert not is_balanced(asg, {"a": ["t", "u"], "b": ["t", "u"]})


# ---- properties ------------------------------------------------------------------------------

Group = tuple[list[str], dict[str, int], dict[str, list[str]] | None]

MEMBER_IDS = st.lists(st.text("abcXYZ-0123", min_size=1, max_size=6), min_size=1, max_size=7, unique=True)
TOPICS = st.dictionaries(st.sampled_from(["t0", "t1", "t2", "orders"]), st.integers(0, 13), min_size=1)


@st.composite
def groups(draw: st.DrawFn, equal: bool = False) -> Group:
    members = draw(MEMBER_IDS)
    partitions = draw(TOPICS)
    if equal:
        return members, partitions, None
    topics = sorted(partitions)
    subs = {m: draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)) for m in members}
    return members, partitions, subs


@st.composite
def previous_of(
    draw: st.DrawFn, members: list[str], partitions: dict[str, int]
) -> dict[str, list[tuple[str, int]]]:
    """An arbitrary exclusive previous assignment over a superset of the members (some have left)."""
    old = [*members, "gone-1", "gone-2"]
    prev: dict[str, list[tuple[str, int]]] = {m: [] for m in old}
    for topic, count in partitions.items():
        for p in range(count + 2):  # a few partitions that no longer exist
            owner = draw(st.sampled_from([*old, None]))
            if owner is not None:
                prev[owner].append((topic, p))
    return prev


@settings(max_examples=150, deadline=None)
@given(groups())
def test_range_and_roundrobin_are_complete_and_exclusive(group: Group) -> None:
    members, partitions, subs = group
    for assign in (range_assign, roundrobin_assign):
        got = assign(members, partitions, subs)
        assert set(got) == set(members)
        assert assignment_problems(got, partitions, subs) == []
        assert all(v == sorted(v) for v in got.values())


@settings(max_examples=150, deadline=None)
@given(groups(equal=True))
def test_roundrobin_is_balanced_and_range_balanced_per_topic_with_equal_subscriptions(group: Group) -> None:
    members, partitions, _ = group
    rr = roundrobin_assign(members, partitions)
    counts = [len(v) for v in rr.values()]
    assert max(counts) - min(counts) <= 1
    rng = range_assign(members, partitions)
    for topic in partitions:
        per_topic = [sum(1 for tp in v if tp[0] == topic) for v in rng.values()]
        assert max(per_topic) - min(per_topic) <= 1


@settings(max_examples=150, deadline=None)
@given(groups(), st.data())
def test_sticky_is_complete_exclusive_balanced_and_deterministic(group: Group, data: st.DataObject) -> None:
    members, partitions, subs = group
    prev = data.draw(previous_of(members, partitions))
    got = sticky_assign(members, partitions, subs, prev)
    assert set(got) == set(members)
    assert assignment_problems(got, partitions, subs) == []
    assert is_balanced(got, subs)
    assert got == sticky_assign(list(reversed(members)), partitions, subs, prev)


@settings(max_examples=200, deadline=None)
@given(groups(equal=True), st.data())
def test_sticky_with_equal_subscriptions_is_tight_and_keeps_every_owner_balance_allows(
    group: Group, data: st.DataObject
) -> None:
    members, partitions, _ = group
    prev = data.draw(previous_of(members, partitions))
    got = sticky_assign(members, partitions, None, prev)
    counts = [len(v) for v in got.values()]
    assert max(counts) - min(counts) <= 1
    assert retained_count(prev, got) == max_retention(members, partitions, prev)
    assert sticky_violations(prev, got) == []


@settings(max_examples=100, deadline=None)
@given(groups(equal=True))
def test_sticky_is_stable_when_nothing_changes(group: Group) -> None:
    members, partitions, _ = group
    first = sticky_assign(members, partitions)
    assert sticky_assign(members, partitions, previous=first) == first
