"""The observers' events: what the cluster's brokers, controller, partitions and groups were seen doing.

Sources: `zk` (ZooKeeper), `admin` (the Admin API), `metadata` (each broker's Metadata view of the
controller), `kraft` (DescribeCluster and DescribeTopicPartitions), `quorum` (DescribeQuorum), `log` (the KRaft
controllers' metadata log, read after a migration: `harness.observe.metadata_log`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from harness.history.events_base import (
    UNSET,
    HistoryEvent,
    JsonRecord,
    Unset,
    as_tuple,
    decoded,
    decoding,
    from_records,
    omitted,
)

METADATA_LOG_SOURCE = "log"
"""The `src` of the events replayed from the KRaft controllers' metadata log after a run: the controller's own
record, in its order; the verifiers read them only where a check asks for that record (`CheckContext.metadata_log`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Controller(HistoryEvent):
    TYPE: ClassVar[str] = "controller"
    SOURCES: ClassVar[str] = "`zk`, `admin`, `quorum`"
    DOC: ClassVar[str] = ("the controller changed: broker (-1 = none; KRaft: the quorum leader's node id), epoch "
                          "(null if unknown to this source; KRaft: the quorum leader epoch), source (the Admin "
                          "API's answer, or describe_quorum; ZooKeeper: none)")
    broker: int
    epoch: int | None
    source: str | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerView(HistoryEvent):
    TYPE: ClassVar[str] = "controller.view"
    SOURCES: ClassVar[str] = "`metadata`"
    DOC: ClassVar[str] = "the controller one broker's Metadata answer names (src `metadata`), on change"
    broker: int
    controller: int


@dataclass(frozen=True, slots=True)
class QuorumReplica:
    """A voter or observer in a `quorum.state` answer: its log end offset and its lag behind the leader's."""

    id: int
    log_end_offset: int
    lag: int | None

    def to_json(self) -> JsonRecord:
        return {"id": self.id, "log_end_offset": self.log_end_offset, "lag": self.lag}

    @staticmethod
    def from_json(record: Mapping[str, Any]) -> QuorumReplica:
        return QuorumReplica(int(record["id"]), int(record["log_end_offset"]), record.get("lag"))


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumState(HistoryEvent):
    TYPE: ClassVar[str] = "quorum.state"
    SOURCES: ClassVar[str] = "`quorum`"
    DOC: ClassVar[str] = ("a voter's DescribeQuorum answer (KRaft, `src: quorum`; on change, and once a second "
                          "while leading): voter (the node that answered), role (leader, follower, unknown), "
                          "leader, epoch, high_watermark (leader only), voters and observers ([{id, "
                          "log_end_offset, lag}], leader only), error")
    voter: int
    leader: int
    epoch: int | None
    role: str
    high_watermark: int | None
    voters: tuple[QuorumReplica, ...] = decoded(from_records(QuorumReplica.from_json))
    observers: tuple[QuorumReplica, ...] = decoded(from_records(QuorumReplica.from_json))
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class _BrokerEvent(HistoryEvent):
    broker: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerUp(_BrokerEvent):
    TYPE: ClassVar[str] = "broker.up"
    SOURCES: ClassVar[str] = "`zk`, `admin`, `kraft`"
    DOC: ClassVar[str] = ("a broker registered (KRaft: registered and unfenced); host and port where the source "
                          "knows them; ZooKeeper adds zxid, the registration's creation zxid (Kafka's broker epoch)")
    host: str | None = omitted()
    port: int | None = omitted()
    zxid: int | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerDown(_BrokerEvent):
    TYPE: ClassVar[str] = "broker.down"
    SOURCES: ClassVar[str] = "`zk`, `admin`, `kraft`, `log`"
    DOC: ClassVar[str] = "a broker's registration is gone (KRaft: fenced or gone)"


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerFenced(_BrokerEvent):
    TYPE: ClassVar[str] = "broker.fenced"
    SOURCES: ClassVar[str] = "`kraft`, `log`"
    DOC: ClassVar[str] = ("KRaft, `src: kraft`: DescribeCluster (fenced brokers included) shows the broker fenced; "
                          "`src: log`: the metadata log registered or fenced it")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerUnfenced(_BrokerEvent):
    TYPE: ClassVar[str] = "broker.unfenced"
    SOURCES: ClassVar[str] = "`kraft`, `log`"
    DOC: ClassVar[str] = "KRaft, `src: kraft`: a fenced broker is unfenced again; `src: log`: the metadata log says so"


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionState(HistoryEvent):
    TYPE: ClassVar[str] = "partition.state"
    SOURCES: ClassVar[str] = "`zk`, `admin`, `kraft`, `log`"
    DOC: ClassVar[str] = ("a partition's leader, leader_epoch, isr, replicas, controller_epoch changed; KRaft adds "
                          "elr, last_known_elr (KIP-966; null where the version lacks them); the Admin API and "
                          "KRaft add error; ZooKeeper adds leader_recovery_state while a leader recovers; KRaft adds "
                          "leader_fenced: true when the broker the state was read from listed its leader as fenced "
                          "just before and just after it (an elected leader must be unfenced: K4); ZooKeeper adds "
                          "zxid, the state znode's modification zxid (ZooKeeper's own order of the writes)")
    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    isr: tuple[int, ...] = decoded(as_tuple)
    replicas: tuple[int, ...] | None
    controller_epoch: int | None
    elr: tuple[int, ...] | Unset | None = field(default=UNSET, metadata=decoding(as_tuple))
    last_known_elr: tuple[int, ...] | Unset | None = field(default=UNSET, metadata=decoding(as_tuple))
    error: str | Unset | None = field(default=UNSET)
    leader_recovery_state: int | None = omitted()
    leader_fenced: bool | None = omitted()
    zxid: int | None = omitted()


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A member in a `group.state` answer, with its assignment ([[topic, p], …])."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[tuple[str, int], ...]

    def to_json(self) -> JsonRecord:
        return {"member_id": self.member_id, "client_id": self.client_id, "host": self.host,
                "assignment": [[t, p] for t, p in self.assignment]}

    @staticmethod
    def from_json(record: Mapping[str, Any]) -> GroupMember:
        return GroupMember(record["member_id"], record["client_id"], record["host"],
                           tuple((str(t), int(p)) for t, p in record.get("assignment") or ()))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupState(HistoryEvent):
    TYPE: ClassVar[str] = "group.state"
    SOURCES: ClassVar[str] = "`admin`"
    DOC: ClassVar[str] = ("a consumer group's description changed: group, state, generation, coordinator, leader "
                          "(a member id; null from the Admin API, as generation), protocol, members ([{member_id, "
                          "client_id, host, assignment}]), group_type")
    group: str
    state: str | None
    generation: int | None = None
    coordinator: int | None
    leader: str | None = None
    protocol: str | None
    members: tuple[GroupMember, ...] = decoded(from_records(GroupMember.from_json))
    group_type: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ObserverError(HistoryEvent):
    TYPE: ClassVar[str] = "observer.error"
    SOURCES: ClassVar[str] = "the observer"
    DOC: ClassVar[str] = ("an observer could not see (once per call and kind of error): observer, error; call, "
                          "detail and node (the broker or voter asked) where known")
    observer: str
    error: str
    call: str | None = omitted()
    detail: str | None = omitted()
    node: int | None = omitted()


CLUSTER_EVENTS: tuple[type[HistoryEvent], ...] = (
    Controller, ControllerView, QuorumState, BrokerUp, BrokerDown, BrokerFenced, BrokerUnfenced, PartitionState,
    GroupState, ObserverError)

