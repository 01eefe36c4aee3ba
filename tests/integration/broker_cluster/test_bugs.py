"""Each bug flag of the reference broker breaks exactly its guarantee (and the honest broker keeps it).

Cluster flags on 3 brokers (elect_outside_isr, skip_epoch_bump, ack_before_replication); data and
group flags on one broker (ignore_idempotence, double_assignment, generation_reuse).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from harness.model.election import elect_leader
from tests.fixtures.broker import ReferenceBroker, ReferenceCluster
from tests.integration.broker.test_groups import group_records
from tests.integration.broker_cluster.clients import AckingProducer, create_topic, read_all

pytestmark = pytest.mark.integration
SESSION_S = 3.0


def test_skip_epoch_bump_and_elect_outside_isr_flags(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """With skip_epoch_bump the next controller keeps the epoch; with elect_outside_isr the failed leader's
    partition gets a leader the offline strategy would not pick, outside the ISR it writes."""
    cluster = reference_cluster_factory(3, {"reference.bugs": "skip_epoch_bump,elect_outside_isr"})
    old, epoch = cluster.controller()
    ar = [old, *[b for b in (1, 2, 3) if b != old]]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("bugged", 1, replica_assignment=[ar])])["bugged"].result(30)
    cluster.wait_for(lambda: cluster.partition_state("bugged", 0)["leader"] == old, 10, "leader on the controller")
    before = cluster.partition_state("bugged", 0)
    cluster[old].kill()
    new, new_epoch = cluster.wait_for(lambda: (c := cluster.controller())[0] not in (-1, old) and c,
                                      SESSION_S + 10, "a new controller")
    after = cluster.wait_for(lambda: (s := cluster.partition_state("bugged", 0))["leader"] not in (old, -1) and s,
                             10, "a new leader")
    prescribed = elect_leader("offline", ar, before["isr"], [b for b in ar if b != old])
    print(f"\nepoch {epoch} -> {new_epoch} (controller {old} -> {new}); leader {old} -> {after['leader']} "
          f"(prescribed {prescribed}), ISR {after['isr']}")
    assert new_epoch == epoch
    assert after["leader"] != prescribed and after["leader"] not in after["isr"]


@pytest.mark.parametrize("bug", ["", "ack_before_replication"])
def test_ack_before_replication_loses_acked_writes_when_the_leader_dies(
        reference_cluster_factory: Callable[..., ReferenceCluster], bug: str) -> None:
    """Followers paused, acks=all writes, leader kill -9, followers resumed: the honest broker acked nothing
    while the followers were paused and loses nothing; with ack_before_replication acked writes vanish."""
    cluster = reference_cluster_factory(3, {"reference.bugs": bug})
    create_topic(cluster.bootstrap_servers, "acks", 1, 3)
    state = cluster.partition_state("acks", 0)
    leader = state["leader"]
    followers = [b for b in state["isr"] if b != leader]
    # Not idempotent: a lost acked batch would otherwise make librdkafka fail fatally (sequence gap).
    with AckingProducer(cluster.bootstrap_servers, "acks", **{"enable.idempotence": False}) as prod:
        prod.wait_acks(200)
        for f in followers:
            cluster[f].pause()
        try:
            time.sleep(0.3)  # acks of batches replicated before the pause arrive first
            start = len(prod.acked)
            time.sleep(0.8)
            acked_while_paused = len(prod.acked) - start
            cluster[leader].kill()
        finally:
            for f in followers:
                cluster[f].resume()
        cluster.wait_for(lambda: cluster.partition_state("acks", 0)["leader"] not in (leader, -1), SESSION_S + 10,
                         "a new leader")
        prod.wait_acks(100, timeout_s=40)
    seen = set(read_all(cluster.bootstrap_servers, "acks", 1))
    lost = [v for v, _p, _o in prod.acked if v not in seen]
    print(f"\nbug={bug or 'none'}: acked while followers paused {acked_while_paused}, acked {len(prod.acked)}, "
          f"lost {len(lost)}")
    if bug:
        assert acked_while_paused > 0 and lost
    else:
        assert acked_while_paused == 0 and not lost


def _produce_raw(port: int, batch: bytes, corr: int) -> int:
    req = ProduceRequest(version=8, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name="idem", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    req.with_header(correlation_id=corr, client_id="raw")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(bytes(req.encode(header=True, framed=True)))
        size = int.from_bytes(s.recv(4, socket.MSG_WAITALL), "big")
        resp = ProduceResponse.decode(s.recv(size, socket.MSG_WAITALL), version=8, header=True)
    return int(resp.responses[0].partition_responses[0].base_offset)


@pytest.mark.parametrize("bug", ["", "ignore_idempotence"])
def test_ignore_idempotence_writes_a_retried_batch_twice(
        reference_broker_factory: Callable[..., ReferenceBroker], bug: str) -> None:
    """The same idempotent batch (producer id, epoch, sequence 0) sent twice: deduplicated (same offset)
    by the honest broker, appended twice with ignore_idempotence."""
    broker = reference_broker_factory({"reference.bugs": bug})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("idem", 1, 1)])["idem"].result(15)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=4242,
                                        producer_epoch=0, base_sequence=0, batch_size=2**20)
    builder.append(0, timestamp=1, key=None, value=b"once", headers=[])
    batch = bytes(builder.build())
    offsets = [_produce_raw(broker.port, batch, 1), _produce_raw(broker.port, batch, 2)]
    assert offsets == ([0, 1] if bug else [0, 0])


def _assigned(consumers: list[Consumer], timeout_s: float) -> list[set[int]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        got = [{tp.partition for tp in c.assignment()} for c in consumers]
        if all(got) and sum(len(g) for g in got) >= 4:
            return got
    return [{tp.partition for tp in c.assignment()} for c in consumers]


@pytest.mark.parametrize("bug", ["", "double_assignment", "generation_reuse"])
def test_group_bug_flags(reference_broker_factory: Callable[..., ReferenceBroker], bug: str) -> None:
    """Two members of a range group over 4 partitions: the honest coordinator gives disjoint shares and stores
    generations 1, 2; double_assignment hands both members the same share; generation_reuse stores 1, 1."""
    broker = reference_broker_factory({"reference.bugs": bug})
    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("g", 4, 1)])["g"].result(15)
    conf = {"bootstrap.servers": bs, "group.id": "bugs", "partition.assignment.strategy": "range",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300}
    c1 = Consumer(conf)
    c2 = Consumer(conf)
    try:
        c1.subscribe(["g"])
        _assigned([c1], 20)
        c2.subscribe(["g"])
        got = _assigned([c1, c2], 30)
        gens = [r.generation for r in group_records(bs, "bugs")]
        print(f"\nbug={bug or 'none'}: assignments {got}, stored generations {gens}")
        if bug == "double_assignment":
            assert got[0] == got[1] and got[0]
        else:
            assert got[0].isdisjoint(got[1]) and got[0] | got[1] == {0, 1, 2, 3}
        if bug == "generation_reuse":
            assert len(gens) >= 2 and len(set(gens)) == 1
        else:
            assert gens == sorted(gens) and len(set(gens)) == len(gens) >= 2
    finally:
        c1.close()
        c2.close()

