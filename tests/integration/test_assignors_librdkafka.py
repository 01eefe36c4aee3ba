"""The model's range/roundrobin assignors give exactly what real librdkafka assigns in a live group.

Server used: librdkafka's built-in MOCK cluster (`tests.fixtures.librdkafka_mock.MockCluster`),
classic group protocol. The mock stands in only as the group coordinator (JoinGroup/SyncGroup);
the assignment under test is computed by the real librdkafka client of the group leader, which
is what `harness.model.assignors` models. Member ids are the ones the coordinator generated,
read with `Consumer.memberid()`, and fed to the model unchanged. Each case needs ~5-7 s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer

from harness.errors import HarnessTimeout, TeardownError
from harness.model.assignors import (
    Assignment,
    assignment_problems,
    is_balanced,
    max_retention,
    range_assign,
    retained_count,
    roundrobin_assign,
    sticky_violations,
)
from tests.fixtures.librdkafka_mock import MockCluster

pytestmark = pytest.mark.integration

PARTITIONS = {"orders": 7, "payments": 5}
SUBSCRIPTIONS = {"c0": ["orders", "payments"], "c1": ["payments"], "c2": ["orders", "payments"]}
EQUAL_SUBSCRIPTIONS = {name: ["orders", "payments"] for name in ("c0", "c1", "c2")}
STABLE_FOR_S = 1.5
TIMEOUT_S = 40.0


class _Member:
    """One real librdkafka consumer, its member id and its current assignment (read after each poll)."""

    def __init__(self, name: str, consumer: Consumer) -> None:
        self.name = name
        self.consumer = consumer
        self.member_id: str | None = None
        self.partitions: list[tuple[str, int]] | None = None
        self.changed_at = time.monotonic()
        self.closed = False

    def poll(self) -> None:
        self.consumer.poll(0.05)
        now = sorted((p.topic, p.partition) for p in self.consumer.assignment())
        member_id = self.consumer.memberid() or None
        if (member_id, now or None) != (self.member_id, self.partitions):
            self.member_id, self.partitions = member_id, now or None
            self.changed_at = time.monotonic()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


@contextmanager
def _group(
    cluster: MockCluster, group: str, strategy: str, subscriptions: dict[str, list[str]]
) -> Iterator[list[_Member]]:
    """Start one consumer per `subscriptions` entry; close every one of them on exit, even on failure."""
    members: list[_Member] = []
    try:
        for name, topics in subscriptions.items():
            consumer = Consumer({
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": group,
                "client.id": name,
                "group.protocol": "classic",
                "partition.assignment.strategy": strategy,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
                "log_level": 3,
            })
            member = _Member(name, consumer)
            members.append(member)
            consumer.subscribe(topics)
        yield members
    finally:
        failures: list[tuple[str, BaseException]] = []
        for m in members:
            try:
                m.close()
            except Exception as exc:
                failures.append((f"close consumer {m.name}", exc))
        if failures:
            raise TeardownError(failures)


def _stable_assignment(
    all_members: list[_Member], subscriptions: dict[str, list[str]]
) -> tuple[list[str], dict[str, list[str]], Assignment]:
    """Poll the open consumers until all hold a complete, disjoint assignment unchanged for STABLE_FOR_S.

    Returns the member ids, member id -> subscribed topics, and member id -> partitions.
    """
    members = [m for m in all_members if not m.closed]
    total = sum(PARTITIONS.values())
    deadline = time.monotonic() + TIMEOUT_S
    last: object = None
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        owned = [tp for m in members for tp in (m.partitions or [])]
        complete = all(m.partitions is not None and m.member_id for m in members)
        last = {m.name: (m.member_id, m.partitions) for m in members}
        quiet = time.monotonic() - max(m.changed_at for m in members) >= STABLE_FOR_S
        if complete and quiet and len(owned) == total == len(set(owned)):
            ids = [m.member_id or "" for m in members]
            subs = {m.member_id or "": subscriptions[m.name] for m in members}
            return ids, subs, {m.member_id or "": m.partitions or [] for m in members}
    raise HarnessTimeout(
        "a complete, stable group assignment from the librdkafka mock coordinator", TIMEOUT_S, last,
        "classic-protocol rebalances on the mock are slow to settle; check group timing",
    )


@pytest.mark.parametrize(("strategy", "model"), [("range", range_assign), ("roundrobin", roundrobin_assign)])
def test_model_assignor_equals_librdkafka_on_mock_cluster(
    strategy: str, model: Callable[..., Assignment]
) -> None:
    """3 real consumers (one subscribing to fewer topics) get exactly the model's assignment."""
    with MockCluster(brokers=1) as cluster:
        _mock(cluster)
        with _group(cluster, f"assignors-{strategy}", strategy, SUBSCRIPTIONS) as members:
            ids, subs, observed = _stable_assignment(members, SUBSCRIPTIONS)
    expected = model(ids, PARTITIONS, subs)
    assert assignment_problems(observed, PARTITIONS, subs) == []
    assert observed == expected, f"librdkafka {strategy} differs from the model (member ids {ids})"


def _mock(cluster: MockCluster) -> None:
    for topic, count in PARTITIONS.items():
        cluster.create_topic(topic, count, replication_factor=1)
    cluster.set_group_timing(session_timeout_ms=6000, heartbeat_interval_ms=500, initial_rebalance_delay_ms=0)


def test_librdkafka_cooperative_sticky_satisfies_model_sticky_properties_on_mock_cluster() -> None:
    """After a member leaves, real cooperative-sticky output passes the model's sticky checks (no false alarm)."""
    with MockCluster(brokers=1) as cluster:
        _mock(cluster)
        with _group(cluster, "assignors-sticky", "cooperative-sticky", EQUAL_SUBSCRIPTIONS) as members:
            _, _, before = _stable_assignment(members, EQUAL_SUBSCRIPTIONS)
            members[1].close()
            ids, subs, after = _stable_assignment(members, EQUAL_SUBSCRIPTIONS)
    assert assignment_problems(after, PARTITIONS, subs) == []
    assert is_balanced(after, subs)
    assert sticky_violations(before, after, subs) == []
    assert retained_count(before, after) == max_retention(ids, PARTITIONS, before)
