"""Partition reassignment through /admin/reassign_partitions on a 3-broker reference cluster."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.model.election import elect_leader
from tests.fixtures.broker import ReferenceCluster
from tests.integration.broker_cluster.clients import read_all

pytestmark = pytest.mark.integration


def test_reassignment_moves_replicas_elects_by_the_model_and_keeps_the_data(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """[1, 2] -> [3, 2]: broker 3 catches up and joins the ISR, the leader (1, not in the new AR) is replaced
    by the reassign strategy's pick, AR becomes [3, 2], broker 1 deletes its replica, no record is lost."""
    cluster = reference_cluster_factory(3, {"min.insync.replicas": "1"})
    bs = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("moving", 1, replica_assignment=[[1, 2]])])["moving"].result(30)
    cluster.wait_for(lambda: cluster.partition_state("moving", 0)["leader"] == 1, 10, "leader 1")
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(500):
        p.produce("moving", str(i).encode())
    p.flush(30)
    before = cluster.partition_state("moving", 0)
    t0 = time.monotonic()
    cluster.zk.create("/admin/reassign_partitions", json.dumps(
        {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [3, 2]}]}).encode(),
        makepath=True)
    cluster.wait_for(lambda: cluster.zk.exists("/admin/reassign_partitions") is None
                     and cluster.assignment("moving")[0] == [3, 2], 30, "the reassignment to finish")
    after = cluster.partition_state("moving", 0)
    print(f"\nreassignment [1, 2] -> [3, 2] took {time.monotonic() - t0:.2f} s: {before} -> {after}")
    assert after["leader"] == elect_leader("reassign", [3, 2], [1, 2, 3], [1, 2, 3])
    assert sorted(after["isr"]) == [2, 3] and after["leader_epoch"] > before["leader_epoch"]
    assert sorted(read_all(bs, "moving", 1)) == list(range(500))
    cluster.wait_for(lambda: not (cluster[1].work_dir / "logs" / "moving-0").exists(), 10,
                     "broker 1 to delete its replica")


def test_auto_leader_rebalance_returns_leadership_to_the_preferred_replica(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """auto.leader.rebalance.enable with a 1 s check: once the preferred replica is back in the ISR, the
    controller's rebalance task moves the leadership back to it (preferred election)."""
    cluster = reference_cluster_factory(3, {"auto.leader.rebalance.enable": "true",
                                            "leader.imbalance.check.interval.seconds": "1"})
    bs = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("bal", 1, replica_assignment=[[1, 2, 3]])])["bal"].result(30)
    cluster.wait_for(lambda: cluster.partition_state("bal", 0)["leader"] == 1, 10, "leader 1")
    cluster[1].stop()
    moved = cluster.wait_for(lambda: (s := cluster.partition_state("bal", 0))["leader"] not in (1, -1) and s, 10,
                             "the leadership to move off broker 1")
    t0 = time.monotonic()
    cluster[1].start()
    back = cluster.wait_for(lambda: (s := cluster.partition_state("bal", 0))["leader"] == 1 and s, 20,
                            "broker 1 to lead again")
    print(f"\nleader 1 -> {moved['leader']} -> 1 again {time.monotonic() - t0:.2f} s after restart: {back}")
    assert back["leader_epoch"] > moved["leader_epoch"] and 1 in back["isr"]
