"""Group coordinator failover on a 3-broker reference cluster: offsets replicated in `__consumer_offsets`."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from harness.model.coordinator import coordinator_partition
from tests.fixtures.broker import ReferenceCluster
from tests.integration.broker_cluster.clients import create_topic

pytestmark = pytest.mark.integration
GROUP = "billing"


def _consume(c: Consumer, n: int, timeout_s: float) -> int:
    got, deadline = 0, time.monotonic() + timeout_s
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    return got


def test_coordinator_kill9_keeps_committed_offsets_and_the_member_rejoins(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """kill -9 of the group's coordinator (leader of its __consumer_offsets partition): the next leader loads
    the partition, the member finds it and carries on, and a new member sees every committed offset."""
    cluster = reference_cluster_factory(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "pay", 3, 3)
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True})
    for i in range(300):
        p.produce("pay", str(i).encode(), partition=i % 3)
    p.flush(30)
    c1 = Consumer({"bootstrap.servers": bs, "group.id": GROUP, "auto.offset.reset": "earliest",
                   "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    try:
        c1.subscribe(["pay"])
        t_start = time.monotonic()
        assert _consume(c1, 300, 30) == 300
        print(f"\nfirst 300 consumed after {time.monotonic() - t_start:.2f} s")
        c1.commit(asynchronous=False)
        part = coordinator_partition(GROUP, 3)
        coordinator = cluster.partition_state("__consumer_offsets", part)["leader"]
        t0 = time.monotonic()
        cluster[coordinator].kill()
        new = cluster.wait_for(lambda: (s := cluster.partition_state("__consumer_offsets", part))["leader"]
                               not in (coordinator, -1) and s["leader"], 15, "a new coordinator")
        print(f"\ncoordinator {coordinator} killed; broker {new} leads __consumer_offsets-{part} after "
              f"{time.monotonic() - t0:.2f} s")
        for i in range(300, 390):
            p.produce("pay", str(i).encode(), partition=i % 3)
        p.flush(30)
        t1 = time.monotonic()
        ends = {0: 130, 1: 130, 2: 130}  # 390 values, value i to partition i % 3, idempotent: no duplicates
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            c1.poll(0.5)
            pos = {tp.partition: tp.offset for tp in c1.position([TopicPartition("pay", q) for q in range(3)])}
            if pos == ends:
                break
        print(f"consumed up to {pos} {time.monotonic() - t1:.2f} s after the new coordinator")
        assert pos == ends
        c1.commit(asynchronous=False)
    finally:
        c1.close()
    c2 = Consumer({"bootstrap.servers": bs, "group.id": GROUP, "enable.auto.commit": False})
    try:
        committed = c2.committed([TopicPartition("pay", q) for q in range(3)], timeout=20)
        assert sorted((tp.partition, tp.offset) for tp in committed) == [(0, 130), (1, 130), (2, 130)]
    finally:
        c2.close()
