"""Faults below the network on Apache Kafka 3.9 (process backend, ZooKeeper mode), on one cluster.

`packet_loss`: iptables drops the packets of the client->1 link's proxy listener, and only those: with every
packet dropped a write waits, and is delivered once the rules go; the rules carry their
owner, leave with the fault, and a SIGKILLed owner's rules are deleted by the next `clean_leftovers`.

`clock_skew`: every broker runs under libfaketime; stepping broker 1's clock an hour ahead moves the log-append
time it stamps on records an hour ahead, and stepping it back brings it back, while the broker goes on serving; a
strobe flips its stamps ahead and back by turns.

`disk_full`: each broker has two log directories (JBOD, `cluster.log_dirs: 2`), each a real tmpfs of
`cluster.log_dir_mb`. Filling one of broker 3's takes that directory offline (KIP-112): the replicas in it leave
their ISRs, those in the other stay, and the broker keeps running; freed and restarted, it is whole again. Filling
both of broker 2's takes every directory offline, and Kafka halts it ("Shutdown broker because all log dirs ...
have failed", LogManager.handleLogDirFailure); the other two keep taking acks=all writes; freed and started again,
broker 2 rejoins the ISR and no acknowledged write is missing. The mounts leave
with the cluster, and a mount a SIGKILLed harness left is unmounted by the next `clean_leftovers`. Needs root for
the mounts and the rules (CI runs as root)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.disks import FILLER, is_mounted, kafka_log_dirs
from harness.cluster.leftovers import clean_leftovers
from harness.cluster.process import ProcessCluster
from harness.faults.clock_faults import MIN_STROBE_S, _strobe
from harness.waiting import wait_until
from tests.fixtures.process_cluster import apache_kafka_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

B2 = NodeId.broker(2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    if os.geteuid() != 0:
        pytest.skip("tmpfs log directories need root to mount (CI runs as root)")
    spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=120, log_dirs=2, log_dir_mb=64, fake_clocks=True,
                       broker_config={
        "zookeeper.session.timeout.ms": "6000", "min.insync.replicas": "2", "offsets.topic.replication.factor": "3"})
    with apache_kafka_backend().up(spec, tmp_path_factory.mktemp("disk-full")) as c:
        yield c
    for node in (NodeId.broker(k) for k in (1, 2, 3)):
        assert not any(map(is_mounted, kafka_log_dirs(c.workdir, node, 2))), f"{node}'s log directories mounted"


def _until(what: str, condition: Callable[[], bool], timeout_s: float, seen: Callable[[], object]) -> None:
    wait_until(what, lambda: True if condition() else None, timeout_s, last_seen=lambda _: seen())


def _isr(admin: AdminClient, topic: str, partition: int = 0) -> tuple[int, list[int]]:
    """The partition's leader and sorted ISR; (-1, []) while the broker asked does not know it yet (just after the
    topic's creation its metadata can list the topic without its partitions: seen on a loaded 2-core machine)."""
    md = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(partition)
    return (-1, []) if md is None else (md.leader, sorted(md.isrs))


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


B3 = NodeId.broker(3)


def _append_time_ms(producer: Producer) -> int:
    """The log-append time broker 1 stamped on one record of topic c (its delivery report carries it)."""
    stamped: list[int] = []
    producer.produce("c", b"t", on_delivery=lambda err, m: stamped.append(-1 if err else m.timestamp()[1]))
    producer.flush(30)
    assert stamped and stamped[0] > 0, stamped
    return stamped[0]


def test_a_clock_stepped_an_hour_ahead_stamps_records_an_hour_ahead_until_it_is_stepped_back(
    cluster: ProcessCluster,
) -> None:
    conf = {"bootstrap.servers": cluster.bootstrap_servers}
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("c", num_partitions=1, replica_assignment=[[1]],
                                  config={"message.timestamp.type": "LogAppendTime"})])["c"].result(60)
    producer = Producer(cast(dict[str, Any], {**conf, "acks": "1"}))
    assert abs(_append_time_ms(producer) - time.time() * 1000) < 60_000
    cluster.skew_clock(NodeId.broker(1), 3600)
    _until("broker 1 stamping an hour ahead", lambda: abs(_append_time_ms(producer) - time.time() * 1000 - 3_600_000)
           < 60_000, 30, lambda: f"append time - now = {(_append_time_ms(producer) - time.time() * 1000) / 1000:.1f}s")
    cluster.skew_clock(NodeId.broker(1), 0)
    _until("broker 1 stamping the real time again", lambda: abs(_append_time_ms(producer) - time.time() * 1000)
           < 60_000, 30, lambda: f"append time - now = {(_append_time_ms(producer) - time.time() * 1000) / 1000:.1f}s")


def test_a_strobing_clock_stamps_records_an_hour_ahead_and_at_the_real_time_by_turns(cluster: ProcessCluster) -> None:
    """The strobe `clock_skew` runs (at the fastest, `MIN_STROBE_S`: 3 s) on broker 1, which stamps topic c's records
    (created by the test above): the stamps go ahead and back at least twice each way, then the real time once it
    stops."""
    producer = Producer(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers, "acks": "1"}))
    stop = threading.Event()
    strobe = threading.Thread(target=_strobe, args=(cluster, NodeId.broker(1), 3600, MIN_STROBE_S, stop))
    cluster.skew_clock(NodeId.broker(1), 3600)
    strobe.start()
    ahead: list[bool] = []

    def flips() -> int:
        ahead.append(_append_time_ms(producer) - time.time() * 1000 > 1_800_000)
        time.sleep(0.2)
        return sum(1 for a, b in itertools.pairwise(ahead) if a != b)

    try:
        _until("broker 1's stamps flipping ahead and back four times", lambda: flips() >= 4, 90,
               lambda: "".join("A" if a else "r" for a in ahead))
    finally:
        stop.set()
        strobe.join(10)
        cluster.skew_clock(NodeId.broker(1), 0)
    _until("broker 1 stamping the real time again", lambda: abs(_append_time_ms(producer) - time.time() * 1000)
           < 60_000, 30, lambda: f"append time - now = {(_append_time_ms(producer) - time.time() * 1000) / 1000:.1f}s")


def test_one_full_log_directory_of_several_takes_only_its_replicas_offline_and_the_broker_keeps_running(
    cluster: ProcessCluster,
) -> None:
    assert all(is_mounted(d) for k in (1, 2, 3) for d in kafka_log_dirs(cluster.workdir, NodeId.broker(k), 2))
    conf = {"bootstrap.servers": cluster.bootstrap_servers}
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("j", num_partitions=4, replica_assignment=[[3, 1, 2], [1, 3, 2]] * 2)])[
        "j"].result(60)
    _until("full ISRs of j", lambda: all(len(_isr(admin, "j", p)[1]) == 3 for p in range(4)), 60,
           lambda: [_isr(admin, "j", p) for p in range(4)])
    first, second = kafka_log_dirs(cluster.workdir, B3, 2)
    _until("broker 3's four replicas of j on disk (a new topic's ISR is full before its followers' logs exist)",
           lambda: all((first / f"j-{p}").is_dir() or (second / f"j-{p}").is_dir() for p in range(4)), 60,
           lambda: sorted(str(d.relative_to(first.parent)) for d in (*first.glob("j-*"), *second.glob("j-*"))))
    in_first = {p for p in range(4) if (first / f"j-{p}").is_dir()}
    assert in_first and len(in_first) < 4, f"Kafka spreads a broker's replicas over its directories: {in_first}"
    producer = Producer(cast(dict[str, Any], {**conf, "acks": "all", "enable.idempotence": True}))
    assert _produce(producer, range(40), "j") == []

    cluster.fill_disk(B3, 0)
    for p in range(4):  # writes for broker 3 to fail on (its checkpoints would, within 5 s)
        producer.produce("j", b"after-fill", partition=p)
    producer.poll(0)
    _until("broker 3's first log directory offline",
           lambda: f"Stopping serving replicas in dir {first}" in cluster.log_path(B3).read_text(errors="replace"),
           60, lambda: f"no such line; see {cluster.log_path(B3)}")
    _until("the replicas of the full directory out of their ISRs, the others in",
           lambda: all((3 not in _isr(admin, "j", p)[1]) == (p in in_first) for p in range(4)), 60,
           lambda: f"in the full directory: {sorted(in_first)}; (leader, ISR): "
                   f"{[_isr(admin, 'j', p) for p in range(4)]}")
    assert cluster.is_running(B3) and "have failed" not in cluster.log_path(B3).read_text(errors="replace")
    assert not (second / FILLER).exists()

    cluster.free_disk(B3, 0)
    cluster.stop(B3)
    cluster.start(B3)
    _until("full ISRs of j after broker 3's restart", lambda: all(len(_isr(admin, "j", p)[1]) == 3 for p in range(4)),
           90, lambda: [_isr(admin, "j", p) for p in range(4)])
    assert producer.flush(60) == 0


def test_full_log_directories_halt_their_broker_and_the_other_replicas_keep_every_acked_write(
    cluster: ProcessCluster,
) -> None:
    conf = {"bootstrap.servers": cluster.bootstrap_servers}
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("d", num_partitions=1, replica_assignment=[[2, 1, 3]])])["d"].result(60)
    _until("d/0 led by broker 2 with a full ISR", lambda: _isr(admin, "d") == (2, [1, 2, 3]), 60,
           lambda: _isr(admin, "d"))
    producer = Producer(cast(dict[str, Any], {**conf, "acks": "all", "enable.idempotence": True}))
    assert _produce(producer, range(0, 50)) == []

    taken = cluster.fill_disk(B2, 0) + cluster.fill_disk(B2, 1)
    assert taken > 0 and all((d / FILLER).exists() for d in kafka_log_dirs(cluster.workdir, B2, 2))
    producer.produce("d", b"after-fill")  # a write for broker 2 to fail on (its checkpoints would, in time)
    _until("broker 2 halting on its full log directories", lambda: not cluster.is_running(B2), 60,
           lambda: f"running; see {cluster.log_path(B2)}")
    log = cluster.log_path(B2).read_text(encoding="utf-8", errors="replace")
    assert "have failed" in log and "No space left on device" in log, log[-3000:]

    _until("d/0's leadership leaving broker 2",
           lambda: _isr(admin, "d")[0] in (1, 3) and 2 not in _isr(admin, "d")[1], 60, lambda: _isr(admin, "d"))
    assert _produce(producer, range(50, 100)) == []

    cluster.free_disk(B2, 0)
    cluster.free_disk(B2, 1)
    assert not any((d / FILLER).exists() for d in kafka_log_dirs(cluster.workdir, B2, 2))
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
        assert [str(c) for c in cleaned] == [f"log directory mount {mount_point.resolve()}: umount -l "
                                             f"{mount_point.resolve()}"]
        assert not is_mounted(mount_point) and not list(records.glob("mount-*.mount"))
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, capture_output=True)
