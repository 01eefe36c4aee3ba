"""Replication on a 3-broker reference cluster: leader failover by the model, acks=all durability, ISR, min ISR."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.zookeeper import ZooKeeperEnsemble
from harness.model.election import check_election, elect_leader
from harness.observe.zookeeper import ZooKeeperObserver
from tests.fixtures.broker import ReferenceCluster
from tests.fixtures.zookeeper import EventCollector
from tests.integration.broker_cluster.clients import AckingProducer, create_topic, read_all

pytestmark = pytest.mark.integration
SESSION_S = 3.0


def test_kill9_of_partition_leader_elects_the_model_leader_and_loses_no_acked_write(
        reference_cluster_factory: Callable[..., ReferenceCluster], zookeeper: ZooKeeperEnsemble, zk_chroot: str,
        zk_events: EventCollector) -> None:
    """kill -9 of a partition leader under acks=all load (min.insync.replicas=2): the new leader is
    elect_leader('offline', AR, ISR, live) of the state just before (also as the ZooKeeper observer saw
    it), and every acked value is read back."""
    cluster = reference_cluster_factory(3)
    create_topic(cluster.bootstrap_servers, "orders", 1, 3)
    observer = ZooKeeperObserver(zookeeper.connect_string, zk_events, chroot=zk_chroot)
    with observer, AckingProducer(cluster.bootstrap_servers, "orders") as prod:
        prod.wait_acks(500)
        before = cluster.partition_state("orders", 0)
        ar = cluster.assignment("orders")[0]
        leader = before["leader"]
        live = [b for b in cluster.live_ids() if b != leader]
        expected = elect_leader("offline", ar, before["isr"], live)
        t0 = time.monotonic()
        cluster[leader].kill()
        after = cluster.wait_for(lambda: (s := cluster.partition_state("orders", 0))["leader"] not in (leader, -1)
                                 and s, SESSION_S + 10, "a new leader of orders-0")
        took = time.monotonic() - t0
        acked_at_kill = len(prod.acked)
        prod.wait_acks(500, timeout_s=30)
        print(f"\nleader {leader} of orders-0 killed: new leader {after['leader']} after {took:.2f} s "
              f"(AR {ar}, ISR before {before['isr']}); acks at kill {acked_at_kill}")
        seen_states = [e for e in zk_events.of("partition.state") if e["topic"] == "orders"]
        i = next(n for n, e in enumerate(seen_states) if e["leader"] not in (leader, -1) and n > 0)
        last_led = max(n for n, e in enumerate(seen_states[:i]) if e["leader"] == leader)
        check = check_election(seen_states[i]["leader"], leader, seen_states[i]["replicas"],
                               seen_states[last_led]["isr"], live)
        assert check.ok, check
        epochs = [e["leader_epoch"] for e in seen_states]
        assert epochs == sorted(epochs)
    assert after["leader"] == expected
    assert after["leader_epoch"] > before["leader_epoch"] and after["leader"] in after["isr"]
    seen = set(read_all(cluster.bootstrap_servers, "orders", 1))
    lost = [v for v, _p, _o in prod.acked if v not in seen]
    print(f"acked {len(prod.acked)}, read {len(seen)}, lost {len(lost)}")
    assert not lost


def test_isr_shrinks_on_stopped_followers_then_acks_all_fails_and_isr_expands_after_resume(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """Followers paused past replica.lag.time.max.ms leave the ISR (leader's conditional write); acks=all then
    fails with NOT_ENOUGH_REPLICAS (min ISR 2) while acks=1 works; resumed followers rejoin the ISR."""
    cluster = reference_cluster_factory(3, {"zookeeper.session.timeout.ms": "20000"})
    create_topic(cluster.bootstrap_servers, "isr", 1, 3)
    state = cluster.partition_state("isr", 0)
    leader = state["leader"]
    followers = [b for b in state["isr"] if b != leader]
    # Clients bootstrap from the leader alone and have its metadata before the pause: a paused broker in the
    # bootstrap list can hold a first produce back until the paused brokers' sessions expire, and then the
    # controller (not the leader's shrink) takes them out of the ISR, bumping the leader epoch.
    p1 = Producer({"bootstrap.servers": cluster[leader].bootstrap_servers, "acks": "1"})
    p1.produce("isr", b"warm-up")
    assert p1.flush(10) == 0
    for f in followers:
        cluster[f].pause()
    try:
        p1.produce("isr", b"lagging")  # followers behind the leader's LEO: out of sync after the lag time
        p1.flush(10)
        t0 = time.monotonic()
        shrunk = cluster.wait_for(lambda: (s := cluster.partition_state("isr", 0))["isr"] == [leader] and s,
                                  15, "the ISR to shrink to the leader")
        print(f"\nISR {state['isr']} -> {shrunk['isr']} after {time.monotonic() - t0:.2f} s")
        assert shrunk["leader_epoch"] == state["leader_epoch"] and shrunk["zk_version"] > state["zk_version"]
        assert shrunk["controller_epoch"] == state["controller_epoch"]
        p = Producer({"bootstrap.servers": cluster[leader].bootstrap_servers, "acks": "all", "message.timeout.ms": 3000,
                      "retries": 0})
        errors: list[str] = []
        p.produce("isr", b"x", on_delivery=lambda err, _m: errors.append(err.name() if err else "OK"))
        p.flush(10)
        assert errors == ["NOT_ENOUGH_REPLICAS"]
        p1.produce("isr", b"y", on_delivery=lambda err, _m: errors.append(err.name() if err else "OK"))
        p1.flush(10)
        assert errors[-1] == "OK"
    finally:
        for f in followers:
            cluster[f].resume()
    cluster.wait_for(lambda: sorted(cluster.partition_state("isr", 0)["isr"]) == sorted(state["isr"]), 15,
                     "the ISR to expand again")


def test_sigterm_moves_leaderships_before_the_broker_exits(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """SIGTERM: controlled shutdown -- the controller moves every leadership of the broker (by the
    controlled-shutdown strategy) and drops it from the ISRs before it deregisters and exits 0."""
    cluster = reference_cluster_factory(3)
    create_topic(cluster.bootstrap_servers, "cs", 3, 3)
    states = {p: cluster.partition_state("cs", p) for p in range(3)}
    victim = states[0]["leader"]
    seen_led_while_registered: list[dict[int, dict[str, Any]]] = []

    def check() -> bool:
        if victim in cluster.live_ids():
            now = {p: cluster.partition_state("cs", p) for p in range(3)}
            if all(s["leader"] != victim for s in now.values()):
                seen_led_while_registered.append(now)
        return not cluster[victim].running
    t0 = time.monotonic()
    cluster[victim].terminate()
    cluster.wait_for(check, 30, f"broker {victim} to exit", poll_s=0.01)
    print(f"\nbroker {victim} exited {time.monotonic() - t0:.2f} s after SIGTERM with {cluster[victim].wait_exit(1)}")
    assert cluster[victim].wait_exit(1) == 0
    assert seen_led_while_registered, "leaderships had not moved while the broker was still registered"
    moved = seen_led_while_registered[-1]  # the last view while it was still registered
    for p, s in states.items():
        if s["leader"] == victim:
            ar = cluster.assignment("cs")[p]
            expected = elect_leader("controlled_shutdown", ar, s["isr"], [*cluster.live_ids(), victim], {victim})
            assert moved[p]["leader"] == expected
        assert victim not in moved[p]["isr"]


def test_elect_leaders_moves_leadership_back_to_the_preferred_replica(
        reference_cluster_factory: Callable[..., ReferenceCluster]) -> None:
    """After the preferred replica returns and rejoins the ISR, ElectLeaders(PREFERRED) makes it leader again."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    cluster = reference_cluster_factory(3)
    create_topic(cluster.bootstrap_servers, "pref", 1, 3)
    preferred = cluster.assignment("pref")[0][0]
    cluster[preferred].stop()
    cluster.wait_for(lambda: cluster.partition_state("pref", 0)["leader"] != preferred, 10, "leader to move")
    cluster[preferred].start()
    cluster.wait_for(lambda: preferred in cluster.partition_state("pref", 0)["isr"], 20, "preferred back in ISR")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        res = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pref", 0)]).result(20)
    except KafkaException as exc:
        pytest.fail(f"ElectLeaders failed: {exc}")
    print(f"\nElectLeaders result: {res}")
    cluster.wait_for(lambda: cluster.partition_state("pref", 0)["leader"] == preferred, 10, "preferred leader")


@pytest.mark.parametrize("unclean", [False, True])
def test_unclean_leader_election_only_when_enabled(
        reference_cluster_factory: Callable[..., ReferenceCluster], unclean: bool) -> None:
    """ISR shrunk to the leader (followers stopped cleanly), leader killed, followers back: the partition stays
    offline (leader -1) unless unclean.leader.election.enable, which elects the first live AR replica."""
    cluster = reference_cluster_factory(4, {"unclean.leader.election.enable": str(unclean).lower(),
                                            "min.insync.replicas": "1"})
    controller = cluster.controller()[0]
    ar = [b for b in (1, 2, 3, 4) if b != controller]  # the controller survives the whole scenario
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("dirty", 1, replica_assignment=[ar])])["dirty"].result(30)
    leader = cluster.wait_for(lambda: cluster.partition_state("dirty", 0)["leader"] == ar[0] and ar[0], 10,
                              "the preferred leader")
    followers = [b for b in ar if b != leader]
    for f in followers:
        cluster[f].stop()
    cluster.wait_for(lambda: cluster.partition_state("dirty", 0)["isr"] == [leader], 10, "ISR = [leader]")
    cluster[leader].kill()
    cluster.wait_for(lambda: cluster.partition_state("dirty", 0)["leader"] == -1, SESSION_S + 10, "no leader")
    for f in followers:
        cluster[f].start()
    if unclean:
        after = cluster.wait_for(lambda: (s := cluster.partition_state("dirty", 0))["leader"] != -1 and s, 15,
                                 "an unclean leader")
        assert after["leader"] == elect_leader("offline", ar, [leader], followers, unclean=True)
        assert after["leader"] in after["isr"]  # ISR [leader] at the election, others rejoin once caught up
    else:
        time.sleep(2)
        assert cluster.partition_state("dirty", 0)["leader"] == -1
