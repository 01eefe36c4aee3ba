"""The workloads' events: what the harness's producers, consumers, transactional producers and pipelines did
and what Kafka answered them (src `producer:<id>`, `consumer:<id>`, `pipeline:<id>`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from harness.history.events_base import UNSET, HistoryEvent, Unset, omitted

# -- producers ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Write(HistoryEvent):
    """A record a producer writes: producer, value (unique int, across the producer's sessions too), key,
    topic, acks; a transactional producer's add txn (and zombie: true from a fenced client), a pipeline's
    input_value (the input record's value)."""

    producer: str
    value: int
    key: str | None
    topic: str
    acks: str
    txn: int | None = omitted()
    zombie: bool | None = omitted()
    input_value: int | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class Send(_Write):
    TYPE: ClassVar[str] = "send"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = ("a producer hands a record to its client: producer, value (unique int, across the "
                          "producer's sessions too), key, topic, acks; a transactional producer's adds txn (and "
                          "zombie: true from a fenced client), a pipeline's adds input_value")


@dataclass(frozen=True, slots=True, kw_only=True)
class Ack(_Write):
    TYPE: ClassVar[str] = "ack"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = "the record was acknowledged: send's fields, partition, offset, latency_ms"
    partition: int | None
    offset: int | None
    latency_ms: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SendError(_Write):
    TYPE: ClassVar[str] = "send.error"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = ("the write failed: send's fields, partition and latency_ms (from a delivery report), "
                          "error, error_detail, retriable, fatal, definite (the write certainly did not happen)")
    partition: int | None = omitted()
    latency_ms: float | None = omitted()
    error: str
    error_detail: str
    retriable: bool
    fatal: bool
    definite: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientError(HistoryEvent):
    TYPE: ClassVar[str] = "client.error"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`, `consumer:<id>`"
    DOC: ClassVar[str] = ("librdkafka's global errors (all brokers down, and a producer's fatal idempotence "
                          "errors, which `delivery.fatal_error` judges): client, error, error_detail, fatal; a "
                          "consumer's adds consumer, group, member")
    consumer: str | Unset = field(default=UNSET)
    group: str | Unset = field(default=UNSET)
    member: str | Unset | None = field(default=UNSET)
    client: str
    error: str
    error_detail: str
    fatal: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientCrash(HistoryEvent):
    TYPE: ClassVar[str] = "client.crash"
    SOURCES: ClassVar[str] = "`producer:<id>`, `consumer:<id>`"
    DOC: ClassVar[str] = ("a client's worker process (the Java client, `harness/workload/worker.py`) ended without "
                          "being asked to: client, exit_code (negative: the signal), last_words (the last lines it "
                          "wrote to stderr); what it had in flight stays unresolved (unknown)")
    client: str
    exit_code: int | None
    last_words: str


# -- transactions ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _TxnEvent(HistoryEvent):
    producer: str
    transactional_id: str
    txn: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnBegin(_TxnEvent):
    TYPE: ClassVar[str] = "txn.begin"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = ("a transaction began: producer, transactional_id, txn (the producer's transaction "
                          "number: 0, 1, 2, … across its sessions)")


@dataclass(frozen=True, slots=True, kw_only=True)
class _TxnEnd(_TxnEvent):
    outcome: str
    definite: bool
    error: str | None
    error_detail: str | None
    offsets: tuple[tuple[str | int, ...], ...] | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnCommit(_TxnEnd):
    TYPE: ClassVar[str] = "txn.commit"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = ("the end of a transaction meant to be committed: outcome (committed, aborted, unknown), "
                          "definite (outcome != unknown), error, error_detail (`harness/workload/txn_producer.py` "
                          "says when each outcome is recorded); a pipeline's adds offsets ([[topic, partition, next "
                          "offset], …], committed for its group in the transaction)")


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnAbort(_TxnEnd):
    TYPE: ClassVar[str] = "txn.abort"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = "the end of a transaction aborted on purpose: as txn.commit"


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnZombie(_TxnEvent):
    TYPE: ClassVar[str] = "txn.zombie"
    SOURCES: ClassVar[str] = "`producer:<id>`"
    DOC: ClassVar[str] = ("what Kafka answered a zombie client (`restart_producer` with `zombie: true`) that wrote "
                          "into its open transaction, and tried to commit it, after a new session fenced it: "
                          "outcome (fenced, refused, committed), error, error_detail")
    outcome: str
    error: str | None
    error_detail: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnFenced(_TxnEvent):
    TYPE: ClassVar[str] = "txn.fenced"
    SOURCES: ClassVar[str] = "`producer:<id>`, `pipeline:<id>`"
    DOC: ClassVar[str] = ("Kafka fenced a transactional producer's session (librdkafka's fatal `_FENCED`), or "
                          "answered a commit of a transaction past its timeout with INVALID_TXN_STATE: txn (the "
                          "open transaction, or null), error, error_detail, open_ms (how long it had been open), "
                          "timeout_ms (its transaction.timeout.ms); recorded instead of a fatal `client.error`, and "
                          "followed by a new session")
    error: str
    error_detail: str
    open_ms: int | None
    timeout_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PipeRead(HistoryEvent):
    TYPE: ClassVar[str] = "pipe.read"
    SOURCES: ClassVar[str] = "`pipeline:<id>`"
    DOC: ClassVar[str] = ("an input record a read-process-write pipeline (src `pipeline:<id>`) read into "
                          "transaction txn: pipeline, group, topic, partition, offset, value; its output records "
                          "are `send`/`ack` with producer = the pipeline id and input_value = the input value")
    pipeline: str
    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    value: int | str | None
    txn: int


# -- consumers ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _MemberEvent(HistoryEvent):
    """Every consumer event names the consumer, its group and its member id (null before it joined)."""

    consumer: str
    group: str
    member: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Poll(_MemberEvent):
    TYPE: ClassVar[str] = "poll"
    SOURCES: ClassVar[str] = "`consumer:<id>`"
    DOC: ClassVar[str] = ("a consumer read a record: topic, partition, offset, value, key, isolation "
                          "(read_committed, read_uncommitted)")
    topic: str | None
    partition: int | None
    offset: int | None
    value: int | str | None
    key: str | None
    isolation: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Commit(_MemberEvent):
    TYPE: ClassVar[str] = "commit"
    SOURCES: ClassVar[str] = "`consumer:<id>`"
    DOC: ClassVar[str] = "an offset the group committed for the consumer: generation, topic, partition, offset"
    generation: int | None
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitError(_MemberEvent):
    TYPE: ClassVar[str] = "commit.error"
    SOURCES: ClassVar[str] = "`consumer:<id>`"
    DOC: ClassVar[str] = ("a commit failed: generation, error, error_detail; partitions ([[topic, partition, "
                          "error or offset], …]) where the answer names them")
    generation: int | None
    error: str
    error_detail: str | None = omitted()
    partitions: tuple[tuple[str | int | None, ...], ...] | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerError(_MemberEvent):
    TYPE: ClassVar[str] = "consumer.error"
    SOURCES: ClassVar[str] = "`consumer:<id>`"
    DOC: ClassVar[str] = "a consumer's poll returned an error (all but the quiet ones): error, error_detail, fatal"
    error: str
    error_detail: str
    fatal: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rebalance(_MemberEvent):
    generation: int | None
    partitions: tuple[tuple[str, int], ...]
    incremental: bool
    assignment: tuple[tuple[str, int], ...]
    lost: bool | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class Assign(_Rebalance):
    TYPE: ClassVar[str] = "assign"
    SOURCES: ClassVar[str] = "`consumer:<id>`"
    DOC: ClassVar[str] = ("partitions ([[topic, p], …]) were assigned to the member: generation, incremental "
                          "(cooperative rebalancing), assignment (the member's partitions after it)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Revoke(_Rebalance):
    TYPE: ClassVar[str] = "revoke"
    SOURCES: ClassVar[str] = "`consumer:<id>`"
    DOC: ClassVar[str] = "partitions were revoked from the member (lost: true when they were lost): as assign"


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDrain(HistoryEvent):
    TYPE: ClassVar[str] = "group.drain"
    SOURCES: ClassVar[str] = "`group:<group>`"
    DOC: ClassVar[str] = ("how a consumer group's drain ended: group, ok (every live member read up to the end of "
                          "every partition it owns, and the members owned every partition), detail (who was behind "
                          "where, when not ok); the delivery checks count an acked write no consumer polled as "
                          "lost only after a drain that ended ok")
    group: str
    ok: bool
    detail: str | None = None


CLIENT_EVENTS: tuple[type[HistoryEvent], ...] = (
    Send, Ack, SendError, ClientError, ClientCrash, TxnBegin, TxnCommit, TxnAbort, TxnZombie, TxnFenced, PipeRead,
    Poll, Commit, CommitError, ConsumerError, Assign, Revoke, GroupDrain)
