"""The KRaft metadata log's replay (`harness.observe.metadata_log`): `kafka-dump-log --cluster-metadata-decoder`
output of a real migration into dual-write (Apache Kafka 3.9.2, controller 101, its no-op records left out) gives
the brokers' fencing and the partitions' states in log order, and partition changes merge as Kafka's
`PartitionRegistration.merge` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.history.events import BrokerFenced, BrokerUnfenced, PartitionState
from harness.observe.metadata_log import LogRecord, MetadataLogError, parse_dump, replay, segments

DUMP = Path(__file__).resolve().parents[2] / "data" / "migration" / "metadata-log-dump.txt"


def _replayed() -> list[object]:
    with DUMP.open(encoding="utf-8") as lines:
        return replay(parse_dump(lines))


def test_a_real_migrations_log_registers_each_broker_fenced_then_unfences_it() -> None:
    brokers = [(type(e).__name__, e.broker) for e in _replayed() if isinstance(e, (BrokerFenced, BrokerUnfenced))]
    assert brokers == [("BrokerFenced", 1), ("BrokerUnfenced", 1), ("BrokerFenced", 2), ("BrokerUnfenced", 2),
                       ("BrokerFenced", 3), ("BrokerUnfenced", 3)]


def test_a_real_migrations_copy_and_isr_changes_become_partition_states_with_the_logs_time() -> None:
    states = [e for e in _replayed() if isinstance(e, PartitionState)]
    assert len(states) == 12  # the copy of 6 partitions, then each one's ISR growing back to [1, 2, 3]
    first = states[0]
    assert (first.src, first.wall, first.topic, first.partition) == ("log", 1796089515643, "__consumer_offsets", 0)
    assert (first.leader, first.leader_epoch, first.isr, first.replicas, first.elr) == (1, 3, (1, 2), (1, 2, 3), None)
    assert all(s.isr == (1, 2, 3) and s.leader_epoch == 3 for s in states[6:])  # an ISR change keeps the epoch


def _rec(offset: int, type_: str, **data: object) -> LogRecord:
    return LogRecord(offset, 1000 + offset, type_, {"topicId": "T", "partitionId": 0, **data})


def test_a_leader_written_bumps_the_epoch_and_absent_fields_stay() -> None:
    states = replay([LogRecord(0, 1000, "TOPIC_RECORD", {"name": "orders", "topicId": "T"}),
                     _rec(1, "PARTITION_RECORD", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1, leaderEpoch=5),
                     _rec(2, "PARTITION_CHANGE_RECORD", isr=[2, 3], leader=2),
                     _rec(3, "PARTITION_CHANGE_RECORD", isr=[2]),
                     _rec(4, "PARTITION_CHANGE_RECORD", leader=-1)])
    got = [(s.topic, s.leader, s.leader_epoch, s.isr, s.replicas) for s in states if isinstance(s, PartitionState)]
    assert got == [("orders", 1, 5, (1, 2, 3), (1, 2, 3)), ("orders", 2, 6, (2, 3), (1, 2, 3)),
                   ("orders", 2, 6, (2,), (1, 2, 3)), ("orders", -1, 7, (2,), (1, 2, 3))]


def test_a_log_whose_first_records_were_deleted_is_refused_naming_the_directory(tmp_path: Path) -> None:
    (tmp_path / "00000000000000004096.log").write_bytes(b"")
    with pytest.raises(MetadataLogError, match=r"first segment starts at offset 4096, not 0"):
        segments(tmp_path)
    with pytest.raises(MetadataLogError, match=r"no segment files"):
        segments(tmp_path / "missing")


def test_a_log_that_cannot_be_read_is_an_observer_error_and_the_run_goes_on(tmp_path: Path) -> None:
    """Called in a run's teardown: an unreadable log (here a directory without segments) becomes one
    `observer.error` naming it, never an exception."""
    from harness.cluster.base import MetadataLogs
    from harness.history.events import ObserverError
    from harness.install.kafka import KafkaInstall
    from harness.observe.metadata_log import record_metadata_log

    (tmp_path / "__cluster_metadata-0").mkdir()

    class Cluster:
        def metadata_logs(self) -> MetadataLogs:
            return MetadataLogs((tmp_path / "__cluster_metadata-0",), KafkaInstall.__new__(KafkaInstall), "java")

    written: list[object] = []
    assert record_metadata_log(Cluster(), written.append) == 0
    (error,) = written
    assert isinstance(error, ObserverError) and error.src == "log" and "no segment files" in error.error
    assert record_metadata_log(object(), written.append) == 0 and len(written) == 1  # no such logs: nothing
