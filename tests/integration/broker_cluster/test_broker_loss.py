"""Loss of a broker that leads nothing: the controller takes it out of every ISR it was in, at once.

Kafka 3.9's ZooKeeper-mode controller moves every replica of a lost broker to OfflineReplica, and
that transition (ZkReplicaStateMachine.doHandleStateChanges -> removeReplicasFromIsr ->
doRemoveReplicasFromIsr) rewrites the state znode of every partition whose ISR holds the replica:
leader kept, ISR without it, leader_epoch + 1 (LeaderAndIsr.newLeaderAndIsr), one conditional write.
It happens on the BrokerChange path (KafkaController.onBrokerFailure -> onReplicasBecomeOffline)
and, when the lost broker was the controller itself, in the new controller's failover
(onControllerFailover -> ReplicaStateMachine.startup: offline replicas -> OfflineReplica).

`replica.lag.time.max.ms` is 120 s here, so a prompt removal can only be the controller's doing
(the leaders' own ISR shrink would take two minutes); deadlines are generous (60 s) for busy machines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.fixtures.broker import ReferenceCluster
from tests.integration.broker_cluster.clients import AckingProducer

pytestmark = pytest.mark.integration
LAG_MS = 120_000
DEADLINE_S = 60.0
TOPIC = "followed"


@pytest.mark.parametrize("victim_role", ["follower", "controller"])
def test_lost_broker_leaves_every_followed_isr_in_the_controllers_next_write(
        reference_cluster_factory: Callable[..., ReferenceCluster], victim_role: str) -> None:
    """kill -9 of a broker that follows every partition and leads none (a plain broker, or the controller):
    each partition's next state write (zk_version + 1) keeps the leader, drops the broker from the ISR and
    bumps leader_epoch by one, and acks=all (min ISR 2) resumes on every partition long before the lag time."""
    cluster = reference_cluster_factory(3, {"replica.lag.time.max.ms": str(LAG_MS)})
    controller, epoch = cluster.controller()
    victim = controller if victim_role == "controller" else max(b for b in cluster.brokers if b != controller)
    a, b = (i for i in sorted(cluster.brokers) if i != victim)
    layout = [[a, b, victim], [b, victim, a], [a, victim, b]]  # the victim is never AR[0]: it leads nothing
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, len(layout), replica_assignment=layout)])[TOPIC].result(30)
    parts = range(len(layout))

    def states_if(ok: Callable[[int, dict[str, Any]], bool]) -> dict[int, dict[str, Any]] | None:
        states = {p: cluster.partition_state(TOPIC, p) for p in parts}
        return states if all(ok(p, s) for p, s in states.items()) else None

    before: dict[int, dict[str, Any]] = cluster.wait_for(
        lambda: states_if(lambda p, s: s["leader"] == layout[p][0] and sorted(s["isr"]) == sorted(layout[p])),
        30, "every partition led by AR[0] with the full ISR")
    with AckingProducer(cluster.bootstrap_servers, TOPIC) as prod:
        cluster.wait_for(lambda: {p for _v, p, _o in prod.acked} >= set(parts), 30, "acks on every partition")
        t0 = time.monotonic()
        cluster[victim].kill()
        acked_at_kill = len(prod.acked)
        after: dict[int, dict[str, Any]] = cluster.wait_for(
            lambda: states_if(lambda p, s: s["zk_version"] > before[p]["zk_version"]), DEADLINE_S,
            f"a new state write of every partition after broker {victim} died")
        took = time.monotonic() - t0
        cluster.wait_for(lambda: {p for _v, p, _o in prod.acked[acked_at_kill:]} >= set(parts), DEADLINE_S,
                         "acks=all to resume on every partition")
        resumed = time.monotonic() - t0
    new_controller, new_epoch = cluster.controller()
    print(f"\nbroker {victim} ({victim_role}) killed: out of every ISR after {took:.2f} s, acks on every "
          f"partition after {resumed:.2f} s (replica.lag.time.max.ms {LAG_MS}); controller {controller}/{epoch} "
          f"-> {new_controller}/{new_epoch}")
    for p in parts:
        old, new = before[p], after[p]
        assert new["zk_version"] == old["zk_version"] + 1, (p, old, new)  # the first write after the kill ...
        assert new["isr"] == [r for r in old["isr"] if r != victim], (p, old, new)  # ... removed the victim
        assert new["leader"] == old["leader"] and new["leader_epoch"] == old["leader_epoch"] + 1, (p, old, new)
        assert new["controller_epoch"] == new_epoch, (p, new, new_epoch)
    assert took < LAG_MS / 1000 / 2 and resumed < LAG_MS / 1000 / 2
    assert not prod.errors, prod.errors[:3]
