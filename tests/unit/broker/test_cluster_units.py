"""Unit tests of the cluster pieces of the reference broker that need no process: replica assignment,
the private inter-broker framing, the metadata cache, and the `elect_outside_isr` bug flag."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from harness.broker import bugs
from harness.broker.assignment import AssignmentError, assign_replicas
from harness.broker.interbroker import (
    LEADER_AND_ISR,
    decode_private_request,
    encode_private_request,
    encode_private_response,
)
from harness.broker.metadata import MetadataCache, endpoints_from_json, endpoints_to_json
from harness.broker.protocol import api_version_entries, peek_header
from harness.model.controller import ClusterView, on_broker_failure
from harness.model.election import elect_leader
from harness.model.partition_state import PartitionState
from harness.zk.znodes import Endpoint


def test_assignment_matches_kafkas_rack_unaware_layout() -> None:
    """start index 0, shift 0 on brokers 1..3: p0=[1,2,3], p1=[2,3,1], p2=[3,1,2]; p3 shifts by one."""
    a = assign_replicas([3, 1, 2], 4, 3, start_index=0, replica_shift=0)
    assert a == {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2), 3: (1, 3, 2)}


def test_assignment_spreads_leaders_and_never_repeats_a_broker() -> None:
    """Random start: every partition has distinct replicas; preferred leaders are balanced."""
    a = assign_replicas(range(1, 4), 30, 3, rng=random.Random(7))
    assert all(len(set(r)) == 3 for r in a.values())
    assert set(Counter(r[0] for r in a.values()).values()) == {10}


def test_assignment_refuses_rf_above_brokers() -> None:
    """RF larger than the live brokers is an error naming both numbers."""
    with pytest.raises(AssignmentError, match="replication factor 4 larger than available brokers 3"):
        assign_replicas([1, 2, 3], 1, 4)


def test_private_requests_use_kafka_framing_and_are_not_advertised() -> None:
    """A LeaderAndIsr frame starts with Kafka's header (key, version, correlation id); ApiVersions omits it."""
    frame = encode_private_request(LEADER_AND_ISR, 42, "controller-1", {"controller_epoch": 3})
    body = frame[4:]
    assert int.from_bytes(frame[:4], "big") == len(body)
    head = peek_header(body)
    assert (head.api_key, head.correlation_id) == (LEADER_AND_ISR, 42)
    assert decode_private_request(body) == (LEADER_AND_ISR, 42, "controller-1", {"controller_epoch": 3})
    resp = encode_private_response(42, {"error_code": 11})
    assert int.from_bytes(resp[4:8], "big") == 42
    assert all(e.api_key < 10000 for e in api_version_entries())


def test_metadata_cache_applies_update_metadata_and_wakes_waiters() -> None:
    """UpdateMetadata replaces the live brokers and sets partition leaders; waiters are woken."""
    async def run() -> None:
        md = MetadataCache()
        waiter = asyncio.create_task(md.wait_changed(5))
        await asyncio.sleep(0)
        ep = Endpoint("FROM2", "127.0.0.1", 9001)
        md.apply_update({"brokers": [endpoints_to_json(2, [ep])], "partitions": [
            {"topic": "t", "partition": 0, "leader": 2, "leader_epoch": 4, "isr": [2], "replicas": [2, 3],
             "offline": [3]}]})
        await asyncio.wait_for(waiter, 1)
        assert md.live() == [2] and md.endpoint(2, "FROM2") == ep and md.endpoint(2, "FROM1") is None
        info = md.partition("t", 0)
        assert info is not None and (info.leader, info.leader_epoch, info.offline) == (2, 4, (3,))
        md.apply_update({"deleted_topics": ["t"]})
        assert md.partition("t", 0) is None and md.live() == [2]
    asyncio.run(run())
    assert endpoints_from_json(endpoints_to_json(1, [Endpoint("A", "h", 1)])) == (1, (Endpoint("A", "h", 1),))


def test_elect_outside_isr_bug_breaks_exactly_leader_in_isr_and_conformance() -> None:
    """With the bug, a leader failure elects a live replica the model would not pick, and it is not in the ISR."""
    tp = ("t", 0)
    view = ClusterView(frozenset({2, 3}), {tp: (1, 2, 3)}, {tp: PartitionState(1, 5, (1, 2, 3), 1, 7)})
    plan = on_broker_failure(view, [1], 2)
    honest = plan.changes[0].after
    assert honest.leader == elect_leader("offline", (1, 2, 3), (1, 2, 3), {2, 3}) == 2
    buggy = bugs.elect_outside_isr(plan.changes, view.assignments, {2, 3}, 2)[0].after
    assert buggy.leader == 3 and buggy.leader not in buggy.isr and buggy.leader_epoch == 6
    assert bugs.unknown_bugs(frozenset({"skip_epoch_bump", "nope"})) == ["nope"]
