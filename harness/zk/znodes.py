"""The znode layout and JSON of ZooKeeper-mode Apache Kafka, as Kafka's own `ZkData` writes it.

Owns the paths (`/controller`, `/brokers/ids/<id>`, `/brokers/topics/<t>/partitions/<p>/state`,
...), one frozen value type per znode with `encode()` (compact JSON bytes with the keys and
versions Kafka 2.x-3.x writes) and a tolerant `decode()` (any version Kafka ever wrote, missing
optional keys, unknown extra keys, timestamps as strings or numbers), and `ensure_kafka_paths`,
which creates the persistent skeleton a Kafka broker creates at startup. Bad data raises
`ZnodeDecodeError` naming the znode and the offending value. No I/O except `ensure_kafka_paths`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from harness.zk._json import ZnodeDecodeError, dumps, int_field, int_list, loads, now_ms, opt_timestamp
from harness.zk.notifications import (
    IsrChangeNotification,
    PreferredReplicaElection,
    ReassignPartitions,
    decode_cluster_id,
    encode_cluster_id,
)
from harness.zk.paths import (
    ADMIN_PATH,
    BROKER_IDS_PATH,
    BROKER_SEQID_PATH,
    BROKERS_PATH,
    CLUSTER_ID_PATH,
    CONFIG_CHANGES_PATH,
    CONFIG_PATH,
    CONFIG_TYPES,
    CONSUMERS_PATH,
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    DELETE_TOPICS_PATH,
    FEATURE_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    ISR_CHANGE_PREFIX,
    LATEST_PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    PERSISTENT_PATHS,
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
    TOPICS_PATH,
    broker_path,
    delete_topic_path,
    isr_change_path,
    partition_path,
    partition_state_path,
    partitions_path,
    topic_path,
)

__all__ = [
    "ADMIN_PATH",
    "BROKERS_PATH",
    "BROKER_IDS_PATH",
    "BROKER_SEQID_PATH",
    "CLUSTER_ID_PATH",
    "CONFIG_CHANGES_PATH",
    "CONFIG_PATH",
    "CONFIG_TYPES",
    "CONSUMERS_PATH",
    "CONTROLLER_EPOCH_PATH",
    "CONTROLLER_PATH",
    "DELETE_TOPICS_PATH",
    "FEATURE_PATH",
    "ISR_CHANGE_NOTIFICATION_PATH",
    "ISR_CHANGE_PREFIX",
    "LATEST_PRODUCER_ID_BLOCK_PATH",
    "LEADER_RECOVERED",
    "LEADER_RECOVERING",
    "LOG_DIR_EVENT_NOTIFICATION_PATH",
    "PERSISTENT_PATHS",
    "PREFERRED_REPLICA_ELECTION_PATH",
    "REASSIGN_PARTITIONS_PATH",
    "TOPICS_PATH",
    "BrokerRegistration",
    "ControllerRegistration",
    "Endpoint",
    "IsrChangeNotification",
    "PartitionState",
    "PreferredReplicaElection",
    "ReassignPartitions",
    "TopicAssignment",
    "ZnodeDecodeError",
    "broker_path",
    "decode_cluster_id",
    "decode_controller_epoch",
    "delete_topic_path",
    "encode_cluster_id",
    "encode_controller_epoch",
    "ensure_kafka_paths",
    "isr_change_path",
    "partition_path",
    "partition_state_path",
    "partitions_path",
    "topic_path",
]


# ---- /controller, /controller_epoch ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """`/controller`: `{"version":1,"brokerid":1,"timestamp":"<ms>"}`; version 2 (Kafka 3.4+) adds
    `kraftControllerEpoch` (-1 for a ZooKeeper-mode controller)."""

    broker_id: int
    timestamp_ms: int | None = None
    version: int = 1
    kraft_controller_epoch: int | None = None

    def encode(self) -> bytes:
        obj: dict[str, Any] = {"version": self.version, "brokerid": self.broker_id}
        obj["timestamp"] = str(self.timestamp_ms if self.timestamp_ms is not None else now_ms())
        if self.version >= 2:
            obj["kraftControllerEpoch"] = self.kraft_controller_epoch if self.kraft_controller_epoch is not None else -1
        return dumps(obj)

    @staticmethod
    def decode(data: bytes | str | None) -> ControllerRegistration:
        what = CONTROLLER_PATH
        obj = loads(what, data)
        kraft = obj.get("kraftControllerEpoch")
        return ControllerRegistration(
            broker_id=int_field(what, obj, "brokerid", data),
            timestamp_ms=opt_timestamp(obj),
            version=int_field(what, obj, "version", data, default=1),
            kraft_controller_epoch=int(kraft) if isinstance(kraft, int) else None,
        )


def encode_controller_epoch(epoch: int) -> bytes:
    """`/controller_epoch` holds the epoch as plain decimal text, e.g. `b"7"`."""
    return str(int(epoch)).encode("ascii")


def decode_controller_epoch(data: bytes | str | None) -> int:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        return int((text or "").strip())
    except ValueError as exc:
        raise ZnodeDecodeError(CONTROLLER_EPOCH_PATH, "not an integer", data) from exc


# ---- /brokers/ids/<id> -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener: `LISTENER://host:port` plus its security protocol."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"

    @staticmethod
    def parse(text: str, protocol_map: Mapping[str, str] | None = None) -> Endpoint:
        listener, sep, rest = text.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.lstrip("-").isdigit():
            raise ValueError(f"not LISTENER://host:port: {text!r}")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        protocol = (protocol_map or {}).get(listener, listener)
        return Endpoint(listener, host, int(port), protocol)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """`/brokers/ids/<id>` (EPHEMERAL). Version 5 (Kafka 2.7+) JSON:
    `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
    "endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"port":9092,"host":"h","version":5,
    "timestamp":"<ms>"}` (`rack` only when set). `host`/`port` name the first PLAINTEXT endpoint
    (null/-1 when there is none)."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    timestamp_ms: int | None = None
    jmx_port: int = -1
    rack: str | None = None
    version: int = 5
    features: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}), hash=False)

    @property
    def host(self) -> str | None:
        ep = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        return ep.host if ep else None

    @property
    def port(self) -> int:
        ep = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        return ep.port if ep else -1

    def endpoint(self, listener: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.listener == listener), None)

    def encode(self) -> bytes:
        obj: dict[str, Any] = {}
        if self.version >= 5:
            obj["features"] = {k: dict(v) for k, v in self.features.items()}
        if self.version >= 4:
            obj["listener_security_protocol_map"] = {e.listener: e.security_protocol for e in self.endpoints}
        if self.version >= 2:
            obj["endpoints"] = [e.connection_string() for e in self.endpoints]
        if self.rack is not None and self.version >= 3:
            obj["rack"] = self.rack
        obj["jmx_port"] = self.jmx_port
        obj["port"] = self.port
        obj["host"] = self.host
        obj["version"] = self.version
        obj["timestamp"] = str(self.timestamp_ms if self.timestamp_ms is not None else now_ms())
        return dumps(obj)

    @staticmethod
    def decode(broker_id: int, data: bytes | str | None) -> BrokerRegistration:
        what = broker_path(broker_id)
        obj = loads(what, data)
        version = int_field(what, obj, "version", data, default=1)
        pmap_raw = obj.get("listener_security_protocol_map")
        pmap = {str(k): str(v) for k, v in pmap_raw.items()} if isinstance(pmap_raw, dict) else None
        raw_eps = obj.get("endpoints")
        endpoints: list[Endpoint] = []
        if isinstance(raw_eps, list) and version >= 2:
            for text in raw_eps:
                try:
                    endpoints.append(Endpoint.parse(str(text), pmap))
                except ValueError as exc:
                    raise ZnodeDecodeError(what, str(exc), data) from exc
        elif obj.get("host") is not None:
            endpoints.append(Endpoint("PLAINTEXT", str(obj["host"]), int_field(what, obj, "port", data)))
        feats_raw = obj.get("features")
        features: dict[str, Mapping[str, int]] = {}
        if isinstance(feats_raw, dict):
            for name, rng in feats_raw.items():
                if isinstance(rng, dict):
                    features[str(name)] = MappingProxyType({str(k): int(v) for k, v in rng.items()})
        rack = obj.get("rack")
        return BrokerRegistration(
            broker_id=broker_id,
            endpoints=tuple(endpoints),
            timestamp_ms=opt_timestamp(obj),
            jmx_port=int_field(what, obj, "jmx_port", data, default=-1),
            rack=str(rack) if rack is not None else None,
            version=version,
            features=MappingProxyType(features),
        )


# ---- /brokers/topics/<t> -----------------------------------------------------------------------
def _assignment_map(what: str, value: object, key: str, data: bytes | str | None) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ZnodeDecodeError(what, f"{key!r} is not an object: {value!r}", data)
    out: dict[int, tuple[int, ...]] = {}
    for p, replicas in value.items():
        try:
            out[int(p)] = int_list(what, replicas, f"{key}.{p}", data)
        except ValueError as exc:
            raise ZnodeDecodeError(what, f"partition key {p!r} in {key!r} is not an integer", data) from exc
    return out


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """`/brokers/topics/<t>`: the replica assignment (AR order; AR[0] is the preferred replica).
    Version 3 (Kafka 2.8+): `{"partitions":{"0":[1,2]},"topic_id":"<uuid>","adding_replicas":{},
    "removing_replicas":{},"version":3}`; version 2 has no topic_id; version 1 only `partitions`."""

    topic: str
    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    topic_id: str | None = None
    version: int = 3

    def replicas(self, partition: int) -> tuple[int, ...]:
        return tuple(self.partitions.get(partition, ()))

    def encode(self) -> bytes:
        def as_json(m: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
            return {str(p): list(r) for p, r in sorted(m.items())}

        obj: dict[str, Any] = {"partitions": as_json(self.partitions)}
        if self.topic_id is not None and self.version >= 3:
            obj["topic_id"] = self.topic_id
        if self.version >= 2:
            obj["adding_replicas"] = as_json({p: r for p, r in self.adding_replicas.items() if r})
            obj["removing_replicas"] = as_json({p: r for p, r in self.removing_replicas.items() if r})
        obj["version"] = self.version
        return dumps(obj)

    @staticmethod
    def decode(topic: str, data: bytes | str | None) -> TopicAssignment:
        what = topic_path(topic)
        obj = loads(what, data)
        topic_id = obj.get("topic_id")
        return TopicAssignment(
            topic=topic,
            partitions=MappingProxyType(_assignment_map(what, obj.get("partitions"), "partitions", data)),
            adding_replicas=MappingProxyType(
                _assignment_map(what, obj.get("adding_replicas"), "adding_replicas", data)
            ),
            removing_replicas=MappingProxyType(
                _assignment_map(what, obj.get("removing_replicas"), "removing_replicas", data)
            ),
            topic_id=str(topic_id) if topic_id is not None else None,
            version=int_field(what, obj, "version", data, default=1),
        )


# ---- /brokers/topics/<t>/partitions/<p>/state --------------------------------------------------
LEADER_RECOVERED = 0
LEADER_RECOVERING = 1


@dataclass(frozen=True, slots=True)
class PartitionState:
    """`.../partitions/<p>/state`: `{"controller_epoch":12,"leader":0,"version":1,"leader_epoch":0,
    "isr":[0,1]}`; `leader_recovery_state` (1 = recovering after an unclean election, Kafka 3.2+)
    is written only when not 0. `leader` is -1 when the partition has no leader."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERED
    version: int = 1

    def encode(self) -> bytes:
        obj: dict[str, Any] = {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": self.version,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }
        if self.leader_recovery_state != LEADER_RECOVERED:
            obj["leader_recovery_state"] = self.leader_recovery_state
        return dumps(obj)

    @staticmethod
    def decode(data: bytes | str | None, *, what: str = "partition state") -> PartitionState:
        obj = loads(what, data)
        return PartitionState(
            leader=int_field(what, obj, "leader", data),
            leader_epoch=int_field(what, obj, "leader_epoch", data),
            isr=int_list(what, obj.get("isr"), "isr", data),
            controller_epoch=int_field(what, obj, "controller_epoch", data),
            leader_recovery_state=int_field(what, obj, "leader_recovery_state", data, default=LEADER_RECOVERED),
            version=int_field(what, obj, "version", data, default=1),
        )


# ---- skeleton ----------------------------------------------------------------------------------
class _EnsurePath(Protocol):
    def ensure_path(self, path: str) -> object: ...


def ensure_kafka_paths(zk: _EnsurePath, extra: Iterable[str] = ()) -> None:
    """Create the persistent znodes a ZooKeeper-mode Kafka broker creates at startup (a kazoo client)."""
    for path in (*PERSISTENT_PATHS, *extra):
        zk.ensure_path(path)
