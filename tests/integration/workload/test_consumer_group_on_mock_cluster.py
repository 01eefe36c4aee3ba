"""ConsumerGroupWorkload against librdkafka's mock cluster.

Real part: every member is a real confluent-kafka/librdkafka Consumer over loopback TCP.
Stand-in: the brokers and the group coordinator are librdkafka's in-process mock cluster, not
Kafka. Most tests use `group.protocol=consumer` (KIP-848), which the mock coordinates reliably;
one uses the classic protocol (eager `range`) with short timeouts, where the mock is slower.
The same checks run against Apache Kafka in test_workload_on_apache_kafka.py.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest

from harness.workload import ConsumerGroupWorkload, ProducerWorkload
from harness.workload.base import Workload
from tests.fixtures.librdkafka_mock import MockCluster
from tests.integration.workload.support import Events, ThreadCheck, wait_until

pytestmark = pytest.mark.integration

KIP848 = {"group.protocol": "consumer"}
ALL = {("t", p) for p in range(4)}


@pytest.fixture
def mock() -> Iterator[MockCluster]:
    """3 mock brokers, topic t with 4 partitions, 2 s KIP-848 session timeout."""
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("t", 4, 3)
        cluster.set_group_timing(session_timeout_ms=2000, heartbeat_interval_ms=300)
        yield cluster


def produce(mock: MockCluster, events: Events, count: int) -> None:
    with ProducerWorkload(mock.bootstrap_servers, events, producer_id="feed", topic="t", rate=500, keys=11) as p:
        p.start()
        wait_until(lambda: p.acked >= count, 10.0, f"{count} acks", lambda: p.acked)
        p.stop()
        p.drain(5.0)


def stable(group: ConsumerGroupWorkload, members: int) -> bool:
    owned = group.assignments()
    parts = [p for a in owned.values() for p in a]
    return len(owned) == members and all(owned.values()) and sorted(parts) == sorted(ALL)


def test_group_records_assignments_polls_and_commits_on_mock_cluster(mock: MockCluster) -> None:
    """Members own disjoint partitions covering the topic; every acked record is polled at its offset;
    commits carry offsets no later than what was read; no thread remains after close()."""
    events = Events()
    threads = ThreadCheck()
    produce(mock, events, 120)
    with ConsumerGroupWorkload(
        mock.bootstrap_servers, events, group="g1", topics=["t"], members=2, commit="sync", extra_config=KIP848
    ) as group:
        assert isinstance(group, Workload)
        group.start()
        wait_until(lambda: stable(group, 2), 15.0, "2 members owning all partitions", group.assignments)
        group.stop()
        group.drain(15.0)
        assert group.last_drain_complete, str(group.drain_report())
        assert group.member_count == 2
        wait_until(lambda: len(events.of("commit")) >= 2, 5.0, "sync commits")
    threads.assert_back()

    acked = {(e["partition"], e["offset"]): e["value"] for e in events.of("ack")}
    polled = {(e["partition"], e["offset"]): e["value"] for e in events.of("poll")}
    assert acked.items() <= polled.items()
    assert {e["consumer"] for e in events.of("poll")} == {"g1/0", "g1/1"}
    for e in events.of("assign") + events.of("revoke"):
        assert isinstance(e["generation"], int) and e["member"] and e["src"] == f"consumer:{e['consumer']}"
    last_read: dict[tuple[str, int], int] = {}
    for e in events.of("poll"):
        last_read[(e["topic"], e["partition"])] = max(last_read.get((e["topic"], e["partition"]), -1), e["offset"])
    for c in events.of("commit"):
        assert 0 < c["offset"] <= last_read[(c["topic"], c["partition"])] + 1


def test_classic_eager_range_rebalance_records_revocations_and_generations_on_mock_cluster(
    mock: MockCluster,
) -> None:
    """Classic protocol, eager range: a join revokes everything, then assigns range shares in a newer
    generation; a graceful stop revokes the leaver's partitions and the survivor gets all of them."""
    events = Events()
    classic = {"session.timeout.ms": "2000", "heartbeat.interval.ms": "300", "max.poll.interval.ms": "3000"}
    with ConsumerGroupWorkload(
        mock.bootstrap_servers, events, group="g2", topics=["t"], members=2, strategy="range", extra_config=classic
    ) as group:
        group.start()
        wait_until(lambda: stable(group, 2), 20.0, "2 members with range shares", group.assignments)
        shares = sorted(sorted(a) for a in group.assignments().values())
        assert shares == [[("t", 0), ("t", 1)], [("t", 2), ("t", 3)]]
        shares_gen = {events.of("assign", consumer=c)[-1]["generation"] for c in ("g2/0", "g2/1")}
        assert len(shares_gen) == 1  # both current shares come from one generation
        (gen,) = shares_gen
        group.stop_member(1)
        assert group.member_count == 1
        wait_until(lambda: group.assignments().get(0) == frozenset(ALL), 20.0, "survivor owns all", group.assignments)

    leaver = events.of("revoke", consumer="g2/1")
    assert leaver and leaver[-1]["generation"] >= gen and leaver[-1]["assignment"] == []
    final = events.of("assign", consumer="g2/0")[-1]
    assert final["generation"] > leaver[-1]["generation"]
    assert sorted(map(tuple, final["partitions"])) == sorted(ALL)
    assert all(e["incremental"] is False for e in events.of("assign"))
    # Eager: before every assignment after the first, the member revoked everything it held.
    for consumer in ("g2/0", "g2/1"):
        kinds = [e["type"] for e in events.all if e.get("consumer") == consumer and e["type"] in ("assign", "revoke")]
        assert all(a != b for a, b in itertools.pairwise(kinds)), kinds


def test_killed_member_neither_revokes_nor_leaves_and_a_restart_rejoins_on_mock_cluster(mock: MockCluster) -> None:
    """kill_member models SIGKILL: no revoke callback, no LeaveGroup, so its partitions move only after the
    (2 s) session timeout; restart_member joins with a new member id and gets partitions again."""
    events = Events()
    threads = ThreadCheck()
    with ConsumerGroupWorkload(
        mock.bootstrap_servers, events, group="g3", topics=["t"], members=2, extra_config=KIP848
    ) as group:
        group.start()
        wait_until(lambda: stable(group, 2), 15.0, "2 members owning all partitions", group.assignments)
        old_id = group.member(0).member_id
        killed_at = time.time() * 1000
        group.kill_member(0)
        assert group.member_count == 1
        wait_until(lambda: group.assignments().get(1) == frozenset(ALL), 15.0, "survivor owns all", group.assignments)
        moved = next(e for e in events.of("assign", consumer="g3/1") if e["wall"] > killed_at)
        assert moved["wall"] - killed_at >= 1000  # waited for the session timeout, not a LeaveGroup
        assert not [e for e in events.of("revoke", consumer="g3/0") if e["wall"] >= killed_at]
        group.restart_member(0)
        wait_until(lambda: stable(group, 2), 15.0, "restarted member owns partitions", group.assignments)
        new_id = group.member(0).member_id
        assert new_id and new_id != old_id
    threads.assert_back()
    assert events.of("assign", consumer="g3/0", member=new_id)


def test_paused_member_stops_polling_until_resumed_on_mock_cluster(mock: MockCluster) -> None:
    """pause_member stops the member's poll loop (no poll events); resume_member makes it poll again."""
    events = Events()
    with (
        ConsumerGroupWorkload(
            mock.bootstrap_servers, events, group="g4", topics=["t"], members=1, extra_config=KIP848
        ) as group,
        ProducerWorkload(mock.bootstrap_servers, events, producer_id="live", topic="t", rate=100) as producer,
    ):
        group.start()
        producer.start()
        wait_until(lambda: len(events.of("poll")) >= 10, 15.0, "polls before the pause")
        group.pause_member(0)
        time.sleep(0.3)  # let an in-progress poll() return
        frozen = len(events.of("poll"))
        time.sleep(0.7)
        assert len(events.of("poll")) == frozen
        group.resume_member(0)
        wait_until(lambda: len(events.of("poll")) >= frozen + 10, 10.0, "polls after resume")


def test_scaling_the_group_starts_new_members_and_ends_the_highest_numbered_on_mock_cluster(mock: MockCluster) -> None:
    """scale_to grows the group with new slots (new clients that get partitions) and shrinks it from the
    highest-numbered live member: cleanly (a revoke, then LeaveGroup) or abruptly (no revoke)."""
    events = Events()
    threads = ThreadCheck()
    with ConsumerGroupWorkload(
        mock.bootstrap_servers, events, group="g5", topics=["t"], members=1, extra_config=KIP848
    ) as group:
        group.start()
        wait_until(lambda: stable(group, 1), 15.0, "1 member owning all partitions", group.assignments)
        assert group.scale_to(3) == "1 -> 3 members: started g5/1, g5/2"
        wait_until(lambda: stable(group, 3), 15.0, "3 members owning all partitions", group.assignments)
        assert group.scale_to(2) == "3 -> 2 members: closed g5/2"
        assert events.of("revoke", consumer="g5/2")
        revokes = len(events.of("revoke", consumer="g5/1"))
        assert group.scale_to(1, abrupt=True) == "2 -> 1 members: killed g5/1"
        assert len(events.of("revoke", consumer="g5/1")) == revokes
        wait_until(lambda: group.assignments() == {0: frozenset(ALL)}, 15.0, "g5/0 owning all", group.assignments)
        assert group.scale_to(1) == "1 members already"
    threads.assert_back()
