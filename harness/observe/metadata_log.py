"""The KRaft controllers' metadata log, read after a run into history events of its own source (`src: log`).

Why: during a ZooKeeper-to-KRaft migration no broker's answer tells a fenced broker from an unfenced one until the
brokers run in KRaft mode (docs/apache-kafka.md, "The ZooKeeper phase judged"), but the active KRaft controller
writes every registration, fencing and partition change of its phase, in the order it decided them, to
`__cluster_metadata-0` (KIP-631). Kafka's own `kafka-dump-log --cluster-metadata-decoder` (DumpLogSegments)
prints each record as JSON; this module replays them:

- `REGISTER_BROKER_RECORD` (fenced unless it says otherwise), `BROKER_REGISTRATION_CHANGE_RECORD` (`fenced` 1 or
  -1; 0 leaves it), `FENCE_BROKER_RECORD`/`UNFENCE_BROKER_RECORD` (metadata versions before 3.3) and
  `UNREGISTER_BROKER_RECORD` -> `broker.fenced`/`broker.unfenced`/`broker.down`;
- `TOPIC_RECORD` names a topic id; `PARTITION_RECORD` is a partition's whole state and `PARTITION_CHANGE_RECORD`
  the fields that changed, merged as Kafka's `PartitionRegistration.merge` does (leader -2: unchanged, and a
  leader written bumps the leader epoch; a list left out: unchanged) -> one `partition.state` per record that
  changed the leader, the ISR, the replicas or the ELR.

Each event carries the record's `CreateTime` as its `wall` stamp (the controller's append time, on the same host
clock as every observer's stamps), so the history writer places it on the run's clock. The events are the log's
alone: `src: log`, which the verifiers keep apart from the observers' (`spark_analysis.facts.context`).

Owns `parse_dump` (the tool's text -> records), `replay` (records -> events), `segments` (a log directory's
segment files, refusing one whose first records were deleted), `read_metadata_log` (runs the tool) and
`record_metadata_log`, which the engine calls after a migration's cluster is down.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.cluster.base import MetadataLogAccess
from harness.errors import HarnessError
from harness.history.events import (
    BrokerDown,
    BrokerFenced,
    BrokerUnfenced,
    HistoryEvent,
    ObserverError,
)
from harness.history.events_cluster import METADATA_LOG_SOURCE
from harness.history.jsonl import EventSink
from harness.install.kafka import KafkaInstall
from harness.kafka_tools import tool_argv
from harness.observe.kraft_metadata import PartitionState as _Partition  # the same fields as a broker's answer

DUMP_TIMEOUT_S = 120.0
NO_LEADER_CHANGE = -2
"""`PartitionChangeRecord.leader`'s default: the leader is unchanged (Kafka's `LeaderConstants.NO_LEADER_CHANGE`)."""

_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) .* payload: (\{.*\})\s*$")


class MetadataLogError(HarnessError):
    """The metadata log could not be read: what was tried, and why."""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One metadata record of the dump: its offset, its `CreateTime` (epoch ms), its type and its JSON data."""

    offset: int
    wall_ms: int
    type: str
    data: Mapping[str, Any]


def parse_dump(lines: Iterable[str]) -> Iterator[LogRecord]:
    """The records of `kafka-dump-log --cluster-metadata-decoder` output, in log order; batch headers and
    control records (no payload) are skipped."""
    for line in lines:
        m = _RECORD.match(line)
        if m is None:
            continue
        payload = json.loads(m.group(3))
        yield LogRecord(int(m.group(1)), int(m.group(2)), str(payload.get("type")), payload.get("data") or {})


def _ids(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(b) for b in value)


def _merge(old: _Partition, data: Mapping[str, Any]) -> _Partition:
    """`PartitionRegistration.merge` (3.9.0-rc3): absent fields are unchanged; a leader written bumps the epoch."""
    leader = int(data.get("leader", NO_LEADER_CHANGE))
    elr, last = data.get("eligibleLeaderReplicas"), data.get("lastKnownElr")
    return replace(old,
                   leader=old.leader if leader == NO_LEADER_CHANGE else leader,
                   leader_epoch=old.leader_epoch if leader == NO_LEADER_CHANGE else old.leader_epoch + 1,
                   isr=old.isr if data.get("isr") is None else tuple(data["isr"]),
                   replicas=old.replicas if data.get("replicas") is None else tuple(data["replicas"]),
                   elr=old.elr if elr is None else tuple(elr),
                   last_known_elr=old.last_known_elr if last is None else tuple(last))


def replay(records: Iterable[LogRecord]) -> list[HistoryEvent]:
    """The events the records say happened, in log order (see the module doc)."""
    topics: dict[str, str] = {}
    parts: dict[tuple[str, int], _Partition] = {}
    fenced: dict[int, bool] = {}
    out: list[HistoryEvent] = []

    def broker(b: int, is_fenced: bool | None, wall: int) -> None:
        if is_fenced is None:
            out.append(BrokerDown(src=METADATA_LOG_SOURCE, wall=wall, broker=b))
            fenced.pop(b, None)
        elif fenced.get(b) != is_fenced:
            cls = BrokerFenced if is_fenced else BrokerUnfenced
            out.append(cls(src=METADATA_LOG_SOURCE, wall=wall, broker=b))
            fenced[b] = is_fenced

    for rec in records:
        d, wall = rec.data, rec.wall_ms
        if rec.type == "TOPIC_RECORD":
            topics[str(d["topicId"])] = str(d["name"])
        elif rec.type == "REMOVE_TOPIC_RECORD":
            tid = str(d["topicId"])
            for key in [k for k in parts if k[0] == tid]:
                del parts[key]
        elif rec.type == "REGISTER_BROKER_RECORD":
            broker(int(d["brokerId"]), bool(d.get("fenced", True)), wall)
        elif rec.type == "BROKER_REGISTRATION_CHANGE_RECORD" and int(d.get("fenced", 0)) != 0:
            broker(int(d["brokerId"]), int(d["fenced"]) > 0, wall)
        elif rec.type in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            broker(int(d["id"]), rec.type == "FENCE_BROKER_RECORD", wall)
        elif rec.type == "UNREGISTER_BROKER_RECORD":
            broker(int(d["brokerId"]), None, wall)
        elif rec.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            key = (str(d["topicId"]), int(d["partitionId"]))
            old = parts.get(key)
            if rec.type == "PARTITION_RECORD":
                new = _Partition(int(d.get("leader", -1)), int(d.get("leaderEpoch", -1)), tuple(d.get("isr") or ()),
                                 tuple(d.get("replicas") or ()), _ids(d.get("eligibleLeaderReplicas")),
                                 _ids(d.get("lastKnownElr")), None)
            elif old is None:
                continue  # a change to a partition whose record the log no longer holds
            else:
                new = _merge(old, d)
            parts[key] = new
            if new == old:
                continue
            out.append(new.event(METADATA_LOG_SOURCE, wall, topics.get(key[0], key[0]), key[1]))
    return out


def segments(log_dir: Path) -> list[Path]:
    """The segment files of a `__cluster_metadata-0` directory, in offset order. Raises `MetadataLogError` when
    there are none, or when the first one does not start at offset 0 (its first records were deleted after a
    snapshot, so the replay would start without the state they built)."""
    found = sorted(log_dir.glob("*.log"))
    if not found:
        raise MetadataLogError(f"metadata log {log_dir}: no segment files (*.log)")
    if int(found[0].stem) != 0:
        raise MetadataLogError(f"metadata log {log_dir}: its first segment starts at offset {int(found[0].stem)}, "
                               "not 0 (the records before it were deleted after a snapshot); the replay needs them")
    return found


def read_metadata_log(install: KafkaInstall, log_dir: Path, *, java: str = "java",
                      timeout_s: float = DUMP_TIMEOUT_S) -> list[HistoryEvent]:
    """The events of the metadata log in `log_dir` (`__cluster_metadata-0`), read with `install`'s
    `kafka-dump-log --cluster-metadata-decoder`. Raises `MetadataLogError` naming the directory and the tool's
    last error line when it fails."""
    files = segments(log_dir)
    argv = tool_argv(install, "kafka-dump-log", ["--cluster-metadata-decoder", "--files", ",".join(map(str, files))],
                     java=java)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise MetadataLogError(f"metadata log {log_dir}: kafka-dump-log did not end within {timeout_s:.0f}s") from exc
    except OSError as exc:
        raise MetadataLogError(f"metadata log {log_dir}: kafka-dump-log could not start: {exc}") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise MetadataLogError(f"metadata log {log_dir}: kafka-dump-log exited {done.returncode}: {last[:300]}")
    try:
        return replay(parse_dump(done.stdout.splitlines()))
    except (ValueError, KeyError, TypeError) as exc:  # a line or record of a shape this replay does not know
        raise MetadataLogError(f"metadata log {log_dir}: kafka-dump-log's output could not be read: "
                               f"{type(exc).__name__}: {exc}") from exc


def longest(log_dirs: Sequence[Path]) -> Path | None:
    """Of the controllers' metadata log directories that exist, the one with the most bytes of segments (the
    active controller's log is the furthest along; the others are copies of its committed part)."""
    present = [d for d in log_dirs if d.is_dir()]
    return max(present, key=lambda d: sum(f.stat().st_size for f in d.glob("*.log")), default=None)


def record_metadata_log(cluster: object, sink: EventSink) -> int:
    """The metadata log of `cluster`'s KRaft controllers (the longest copy), replayed into `sink` after the cluster
    is down; an `observer.error` (`src: log`) saying why when it cannot be read. Returns the events written; 0 for a
    cluster without such logs (`MetadataLogAccess`)."""
    logs = cluster.metadata_logs() if isinstance(cluster, MetadataLogAccess) else None
    if logs is None:
        return 0
    try:
        log_dir = longest(logs.dirs)
        if log_dir is None:
            raise MetadataLogError(f"no metadata log in {', '.join(map(str, logs.dirs))}")
        events = read_metadata_log(logs.install, log_dir, java=logs.java)
    except Exception as exc:  # called in the run's teardown: whatever it is, the run still ends and says why
        error = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
        sink(ObserverError(src=METADATA_LOG_SOURCE, observer="metadata-log", error=error, call="kafka-dump-log"))
        return 0
    for event in events:
        sink(event)
    return len(events)


__all__: Sequence[str] = ("LogRecord", "MetadataLogError", "longest", "parse_dump", "read_metadata_log",
                          "record_metadata_log", "replay", "segments")
