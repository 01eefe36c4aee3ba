"""Faults below the network on Apache Kafka 3.9 (process backend, ZooKeeper mode), on one cluster.

`packet_loss`: iptables drops the packets of the client->1 link's proxy listener, and only those: with every
packet dropped a write waits, and is delivered once the rules go; the rules carry their
owner, leave with the fault, and a SIGKILLed owner's rules are deleted by the next `clean_leftovers`.

`disk_full`: each broker's log directory is a real tmpfs
of `cluster.log_dir_mb`; filling broker 2's takes its only log directory offline, and Kafka halts it ("Shutdown
broker because all log dirs ... have failed", LogManager.handleLogDirFailure); the other two keep taking acks=all
writes; freed and started again, broker 2 rejoins the ISR and no acknowledged write is missing. The mounts leave
with the cluster, and a mount a SIGKILLed harness left is unmounted by the next `clean_leftovers`. Needs root for
the mounts and the rules (CI runs as root)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.disks import FILLER, is_mounted, kafka_data_dir
from harness.cluster.leftovers import clean_leftovers
from harness.cluster.process import ProcessCluster
from harness.waiting import wait_until
from tests.fixtures.process_cluster import apache_kafka_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

B2 = NodeId.broker(2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    if os.geteuid() != 0:
        pytest.skip("tmpfs log directories need root to mount (CI runs as root)")
    spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=120, log_dir_mb=64, broker_config={
        "zookeeper.session.timeout.ms": "6000", "min.insync.replicas": "2", "offsets.topic.replication.factor": "3"})
    with apache_kafka_backend().up(spec, tmp_path_factory.mktemp("disk-full")) as c:
        yield c
    for node in (NodeId.broker(k) for k in (1, 2, 3)):
        assert not is_mounted(kafka_data_dir(c.workdir, node)), f"{node}'s log directory still mounted"


def _until(what: str, condition: Callable[[], bool], timeout_s: float, seen: Callable[[], object]) -> None:
    wait_until(what, lambda: True if condition() else None, timeout_s, last_seen=lambda _: seen())


def _isr(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    md = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return md.leader, sorted(md.isrs)


def _produce(producer: Producer, values: range, topic: str = "d") -> list[str]:
    """Writes of `values`; the errors (none expected)."""
    errors: list[str] = []
    for v in values:
        producer.produce(topic, str(v).encode(), on_delivery=lambda err, _m: err and errors.append(str(err)))
    producer.flush(60)
    return errors


def _rules(owner: str) -> list[str]:
    listing = subprocess.run(["iptables", "-w", "10", "-S", "INPUT"], capture_output=True, text=True, check=True)
    return [line for line in listing.stdout.splitlines() if owner in line]


def test_packet_loss_holds_writes_on_its_link_only_while_it_lasts_and_leaves_no_rule(cluster: ProcessCluster) -> None:
    conf = {"bootstrap.servers": cluster.bootstrap_servers}
    admin = AdminClient(conf)  # held: a collected client ends its futures with _DESTROY
    admin.create_topics([NewTopic("p", num_partitions=1, replica_assignment=[[1]])])["p"].result(60)
    producer = Producer(cast(dict[str, Any], {**conf, "acks": "1", "message.timeout.ms": 120000}))
    assert _produce(producer, range(5), "p") == []
    port = cluster.topology.proxy("client", NodeId.broker(1)).listen.port  # type: ignore[union-attr]
    handle = cluster.drop_packets("client", NodeId.broker(1), 1.0)
    owner = f"kafka-chaos:{os.getpid()}:"  # this process runs the cluster: it owns the rules
    rules = _rules(owner)
    assert len(rules) == 2 and any(f"--dport {port}" in r for r in rules) and any(f"--sport {port}" in r for r in rules)
    delivered: list[str] = []
    producer.produce("p", b"held", on_delivery=lambda err, m: delivered.append("ok" if err is None else str(err)))
    producer.flush(3)
    assert delivered == [], "a write went through a link whose every packet is dropped"
    cluster.stop_dropping(handle)
    assert _rules(owner) == []
    producer.flush(60)
    assert delivered == ["ok"]


def test_a_full_log_directory_halts_its_broker_and_the_other_replicas_keep_every_acked_write(
    cluster: ProcessCluster,
) -> None:
    assert all(is_mounted(kafka_data_dir(cluster.workdir, NodeId.broker(k))) for k in (1, 2, 3))
    conf = {"bootstrap.servers": cluster.bootstrap_servers}
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("d", num_partitions=1, replica_assignment=[[2, 1, 3]])])["d"].result(60)
    _until("d/0 led by broker 2 with a full ISR", lambda: _isr(admin, "d") == (2, [1, 2, 3]), 60,
           lambda: _isr(admin, "d"))
    producer = Producer(cast(dict[str, Any], {**conf, "acks": "all", "enable.idempotence": True}))
    assert _produce(producer, range(0, 50)) == []

    taken = cluster.fill_disk(B2)
    assert taken > 0 and (kafka_data_dir(cluster.workdir, B2) / FILLER).exists()
    producer.produce("d", b"after-fill")  # a write for broker 2 to fail on (its checkpoints would, in time)
    _until("broker 2 halting on its full log directory", lambda: not cluster.is_running(B2), 60,
           lambda: f"running; see {cluster.log_path(B2)}")
    log = cluster.log_path(B2).read_text(encoding="utf-8", errors="replace")
    assert "have failed" in log and "No space left on device" in log, log[-3000:]

    _until("d/0's leadership leaving broker 2",
           lambda: _isr(admin, "d")[0] in (1, 3) and 2 not in _isr(admin, "d")[1], 60, lambda: _isr(admin, "d"))
    assert _produce(producer, range(50, 100)) == []

    cluster.free_disk(B2)
    assert not (kafka_data_dir(cluster.workdir, B2) / FILLER).exists()
    cluster.start(B2)
    _until("broker 2 back in d/0's ISR", lambda: _isr(admin, "d")[1] == [1, 2, 3], 90, lambda: _isr(admin, "d"))

    consumer = Consumer({**conf, "group.id": "disk-full-check", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe(["d"])
    seen: set[str] = set()
    _until("every acknowledged value read back", lambda: _poll_into(consumer, seen) >= {str(v) for v in range(100)},
           60, lambda: f"missing {sorted(set(map(str, range(100))) - seen)[:10]}")
    consumer.close()


def _poll_into(consumer: Consumer, seen: set[str]) -> set[str]:
    msg = consumer.poll(0.5)
    if msg is not None and msg.error() is None and msg.value() is not None:
        seen.add(msg.value().decode())
    return seen


_KILLED_RULE_OWNER = """
import os, signal
from harness.cluster.packets import PacketRules
rules = PacketRules()
print(rules.owner, flush=True)
rules.drop(9, 0.5, "probe")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_packet_loss_rules_of_a_sigkilled_harness_are_deleted_by_the_next_clean_leftovers(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("iptables rules need root (CI runs as root)")
    done = subprocess.run([sys.executable, "-c", _KILLED_RULE_OWNER], check=False, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], timeout=60)
    owner = done.stdout.strip()
    assert done.returncode == -9 and owner.startswith("kafka-chaos:"), done.stderr
    try:
        assert len(_rules(owner)) == 2
        cleaned = [str(c) for c in clean_leftovers(tmp_path)]
        assert sum(1 for c in cleaned if c.startswith("packet loss rule") and owner in c) == 2, cleaned
        assert _rules(owner) == []
    finally:
        for rule in _rules(owner):
            subprocess.run(["iptables", "-w", "10", "-D", *rule.split()[1:]], check=False)


_KILLED_OWNER = """
import os, signal, sys
from pathlib import Path
from harness.cluster.disks import LogDirMounts
LogDirMounts(Path(sys.argv[1])).mount(Path(sys.argv[2]), 32)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_log_directory_mount_left_by_a_sigkilled_harness_is_unmounted_by_the_next_clean_leftovers(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a tmpfs mount needs root (CI runs as root)")
    records, mount_point = tmp_path / "leftovers", tmp_path / "broker-1" / "data"
    done = subprocess.run([sys.executable, "-c", _KILLED_OWNER, str(records), str(mount_point)], check=False,
                          cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.returncode == -9
    try:
        assert is_mounted(mount_point) and len(list(records.glob("mount-*.mount"))) == 1
        cleaned = clean_leftovers(records)
        assert [str(c) for c in cleaned] == [f"tmpfs log directory {mount_point.resolve()}: umount -l "
                                             f"{mount_point.resolve()}"]
        assert not is_mounted(mount_point) and not list(records.glob("mount-*.mount"))
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, capture_output=True)
