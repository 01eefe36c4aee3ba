"""`power_loss` on Apache Kafka 3.9 (process backend, ZooKeeper mode): one broker whose log directory is on the
power-loss filesystem (`ClusterSpec.lazy_fs`: `harness.cluster.lazyfs` over FUSE, as a run with a power_loss fault
gets). Two topics take 100 acks=all writes each: `unsynced` with Kafka's default flush (never: Kafka relies on
replication), `synced` with `flush.messages=1` (every append fsynced before it is acknowledged). The power loss
(SIGKILL, then every write not fsynced undone) takes every acknowledged record of `unsynced` and none of `synced`;
the broker, started again, recovers its log and serves what survived. `disk_error` on the same filesystem: EIO on
the writes to one partition's directory takes the broker's only log directory offline, and Kafka halts it (D1);
cleared and started again, it serves that partition's acknowledged records. The mount leaves with the cluster, and a
mount a SIGKILLed harness left is unmounted by the next `clean_leftovers`, its daemon with it. Needs root and
/dev/fuse (CI runs as root)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import psutil
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.disks import is_mounted, kafka_log_dirs
from harness.cluster.leftovers import clean_leftovers
from harness.cluster.process import ProcessCluster
from harness.waiting import wait_until
from tests.fixtures.process_cluster import apache_kafka_backend
from tests.integration.workload.support import stored_count

pytestmark = [pytest.mark.integration, pytest.mark.slow]

B1 = NodeId.broker(1)


def _fuse_usable() -> bool:
    return os.geteuid() == 0 and os.path.exists("/dev/fuse")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    if not _fuse_usable():
        pytest.skip("the power-loss filesystem needs root and /dev/fuse (CI has both)")
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120, lazy_fs=True, broker_config={
        "zookeeper.session.timeout.ms": "6000", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1"})
    with apache_kafka_backend().up(spec, tmp_path_factory.mktemp("power-loss")) as c:
        yield c
    assert not any(map(is_mounted, kafka_log_dirs(c.workdir, B1))), "broker 1's log directory is still mounted"


def _produce(bootstrap: str, topic: str, n: int) -> list[str]:
    """`n` acks=all writes to `topic`; the errors (none expected)."""
    producer = Producer(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "acks": "all",
                                              "enable.idempotence": True}))
    errors: list[str] = []
    for v in range(n):
        producer.produce(topic, str(v).encode(), on_delivery=lambda err, _m: err and errors.append(str(err)))
    assert producer.flush(60) == 0
    return errors


def test_a_power_loss_takes_the_acknowledged_writes_kafka_did_not_fsync_and_keeps_those_it_did(
    cluster: ProcessCluster,
) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("unsynced", 1, 1), NewTopic("synced", 1, 1, config={"flush.messages": "1"})]
    for future in admin.create_topics(topics).values():
        future.result(60)
    assert _produce(bootstrap, "unsynced", 100) == [] and _produce(bootstrap, "synced", 100) == []

    (loss,) = cluster.power_loss(B1)
    assert not cluster.is_running(B1)
    segments = {path: n for path, n in loss.lost.items() if path.endswith(".log")}
    assert any(path.startswith("data/unsynced-0/") for path in segments), loss
    assert not any(path.startswith("data/synced-0/") for path in segments), loss

    cluster.start(B1)
    wait_until("synced's 100 records served again after the restart",
               lambda: stored_count(bootstrap, "synced", 1) == 100 or None, 90, retry_on=(KafkaException,))
    assert stored_count(bootstrap, "unsynced", 1) == 0  # its acknowledged writes lived in the page cache only
    log = cluster.log_path(B1).read_text(encoding="utf-8", errors="replace")
    assert "unclean" in log.lower() or "recover" in log.lower(), log[-3000:]


def test_eio_on_one_partitions_writes_takes_the_only_log_directory_offline_and_the_broker_halts(
    cluster: ProcessCluster,
) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("eio", 1, 1)])["eio"].result(60)
    assert _produce(bootstrap, "eio", 20) == []
    cluster.fail_disk_io(B1, 0, errno.EIO, ("write",), 1.0, "eio-0/*", 1)
    producer = Producer(cast(dict[str, Any], {"bootstrap.servers": bootstrap, "acks": "all",
                                              "message.timeout.ms": 5000}))
    producer.produce("eio", b"after")
    producer.flush(10)
    wait_until("broker 1 halting on its failed log directory", lambda: not cluster.is_running(B1) or None, 60,
               last_seen=lambda _: f"running; see {cluster.log_path(B1)}")
    log = cluster.log_path(B1).read_text(encoding="utf-8", errors="replace")
    assert "Input/output error" in log and "have failed" in log, log[-3000:]
    assert cluster.heal_disk_io(B1, 0) >= 1
    cluster.start(B1)
    wait_until("eio's 20 acknowledged records served again",
               lambda: stored_count(bootstrap, "eio", 1) >= 20 or None, 90, retry_on=(KafkaException,))


_KILLED_OWNER = """
import os, signal, sys
from pathlib import Path
from harness.cluster.disks import LogDirMounts
LogDirMounts(Path(sys.argv[1])).mount_lazy(Path(sys.argv[2]), Path(sys.argv[3]))
os.kill(os.getpid(), signal.SIGKILL)
"""


def _daemons(mount: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if "harness.cluster.lazyfs_daemon" in " ".join(p.info["cmdline"] or ()) and str(mount) in
            " ".join(p.info["cmdline"] or ())]


def test_a_power_loss_mount_left_by_a_sigkilled_harness_is_unmounted_by_the_next_clean_leftovers(
    tmp_path: Path,
) -> None:
    if not _fuse_usable():
        pytest.skip("the power-loss filesystem needs root and /dev/fuse (CI has both)")
    records, mount_point = tmp_path / "leftovers", (tmp_path / "broker-1" / "data").resolve()
    done = subprocess.run([sys.executable, "-c", _KILLED_OWNER, str(records), str(mount_point),
                           str(tmp_path / "broker-1" / "data.disk")], check=False,
                          cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.returncode == -9
    try:
        assert is_mounted(mount_point) and _daemons(mount_point)
        cleaned = clean_leftovers(records)
        assert [str(c) for c in cleaned] == [f"log directory mount {mount_point}: umount -l {mount_point}"]
        assert not is_mounted(mount_point) and not list(records.glob("mount-*.mount"))
        wait_until("the daemon of the unmounted filesystem gone", lambda: not _daemons(mount_point) or None, 30,
                   last_seen=lambda _: [p.pid for p in _daemons(mount_point)])
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, capture_output=True)
        for proc in _daemons(mount_point):
            proc.kill()
