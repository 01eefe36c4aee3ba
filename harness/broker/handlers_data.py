"""Handlers for the data path: Produce, Fetch, ListOffsets, InitProducerId, OffsetForLeaderEpoch.

Produce, on the partition's leader only (NOT_LEADER_OR_FOLLOWER elsewhere), appends each
partition's single record batch as bytes (header checked, CRC32C verified, offsets rewritten;
idempotent batches deduplicated by producer id/epoch/sequence). acks=0 gets no response, acks=1 is
answered after the append (and the fsync, when `log.flush.interval.messages=1`), acks=all fails
with NOT_ENOUGH_REPLICAS when the ISR is smaller than `min.insync.replicas` and is otherwise
answered once the high watermark passed the batch (REQUEST_TIMED_OUT after the request's timeout).
Fetch returns whole batches below the high watermark to consumers and below the log end to
followers (`replica_id` >= 0, whose fetch offset is their LEO: it moves the HW and the ISR), and
long-polls up to `max_wait_ms` for `min_bytes`. A batch holding a record without a key, for a compacted
topic, is refused with INVALID_RECORD and Kafka's record error. Transactions are not implemented (InitProducerId with a
transactional id is refused with INVALID_REQUEST, transactional batches with
INVALID_RECORD).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse, OffsetForLeaderEpochResponse
from kafka.protocol.producer import ProduceResponse

from harness.broker import bugs
from harness.broker.protocol import build_response
from harness.broker.records import TRANSACTIONAL_FLAG, crc_ok, decode_records, read_header
from harness.broker.topics import OFFSETS_TOPIC
from harness.errors import ProtocolError
from harness.model.topic_configs import is_compacted

if TYPE_CHECKING:
    from harness.broker.config import BrokerConfig
    from harness.broker.metadata import MetadataCache
    from harness.broker.producer_state import PartitionProducers, ProducerIds
    from harness.broker.protocol import Ctx
    from harness.broker.replica import ReplicaManager
    from harness.broker.topics import TopicStore

log = logging.getLogger(__name__)
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10
NOT_ENOUGH_REPLICAS = 19
INVALID_REQUIRED_ACKS = 21
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
INVALID_RECORD = 87
LATEST, EARLIEST = -1, -2


class DataHost(Protocol):
    """What the produce, fetch and offset handlers need of the broker."""

    config: BrokerConfig
    topics: TopicStore
    metadata: MetadataCache
    replicas: ReplicaManager
    producer_ids: ProducerIds

    def producer_state(self, topic: str, partition: int) -> PartitionProducers: ...

    def leader_epoch(self, topic: str, partition: int) -> int: ...


def _not_led(b: DataHost, topic: str) -> int:
    return NOT_LEADER_OR_FOLLOWER if topic in b.metadata.topics else UNKNOWN_TOPIC_OR_PARTITION


def append(b: DataHost, topic: str, partition: int, records: bytes | None, acks: int) -> tuple[int, int]:
    """Append one partition's batch on its leader; (error code, base offset or -1)."""
    part = b.replicas.leading(topic, partition)
    plog = b.topics.partition(topic, partition)
    if part is None or plog is None:
        return _not_led(b, topic), -1
    if acks not in (0, 1, -1):
        return INVALID_REQUIRED_ACKS, -1
    if not records:
        return INVALID_RECORD, -1
    limit = int(b.topics.topic_config(topic, "max.message.bytes", str(b.config.message_max_bytes)))
    if len(records) > limit:
        return MESSAGE_TOO_LARGE, -1
    try:
        h = read_header(records)
    except ProtocolError:
        return CORRUPT_MESSAGE, -1
    if h.length != len(records) or h.attributes & TRANSACTIONAL_FLAG:
        return INVALID_RECORD, -1
    if not crc_ok(records, h):
        return CORRUPT_MESSAGE, -1
    if keyless_index(b, topic, records) is not None:
        return INVALID_RECORD, -1
    if acks == -1 and len(part.isr) < min_isr(b, topic):
        return NOT_ENOUGH_REPLICAS, -1
    state = b.producer_state(topic, partition)
    if bugs.IGNORE_IDEMPOTENCE not in b.config.reference_bugs:
        err, duplicate = state.check(h)
        if err:
            return err, -1
        if duplicate is not None:
            return NONE, duplicate
    base = plog.append(bytearray(records), part.leader_epoch, h.count)
    state.update(h, base)
    b.topics.notify(topic, partition)
    b.replicas.maybe_advance_hw(part)
    return NONE, base


def keyless_index(b: DataHost, topic: str, records: bytes) -> int | None:
    """The index of the first record without a key in a batch for a compacted topic (Kafka's LogValidator
    refuses the batch with INVALID_RECORD), or None."""
    policy = b.topics.topic_config(topic, "cleanup.policy", "compact" if topic == OFFSETS_TOPIC else "delete")
    if not is_compacted(policy):
        return None
    try:
        keys = [key for _offset, _ts, key, _value in decode_records(records)]
    except Exception:  # a codec kafka-python lacks: the batch is stored as it came, as before
        log.warning("cannot decode a batch for compacted topic %s to check its keys", topic, exc_info=True)
        return None
    return next((i for i, key in enumerate(keys) if key is None), None)


def _record_errors(b: DataHost, topic: str, partition: int, records: bytes | None) -> tuple[list[Any], str | None]:
    """ProduceResponse's record errors and message for an INVALID_RECORD answer, as Kafka words them."""
    index = keyless_index(b, topic, records) if records else None
    if index is None:
        return [], None
    first = f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
    E = ProduceResponse.TopicProduceResponse.PartitionProduceResponse.BatchIndexAndErrorMessage
    message = ("One or more records have been rejected due to 1 record errors in total, and only showing the "
               f"first three errors at most: [RecordError(batchIndex={index}, message='{first}')]")
    return [E(batch_index=index, batch_index_error_message=first)], message


def min_isr(b: DataHost, topic: str) -> int:
    return int(b.topics.topic_config(topic, "min.insync.replicas", str(b.config.min_insync_replicas)))


async def _replicated(b: DataHost, topic: str, partition: int, required: int, timeout_s: float) -> int:
    part = b.replicas.leading(topic, partition)
    if part is None:
        return NOT_LEADER_OR_FOLLOWER
    return await b.replicas.wait_replicated(part, required, timeout_s, min_isr(b, topic))


async def produce(b: DataHost, ctx: Ctx, req: Any) -> Any:
    TR = ProduceResponse.TopicProduceResponse
    PR = TR.PartitionProduceResponse
    responses = []
    waits: list[tuple[Any, Any]] = []
    wait_all = req.acks == -1 and bugs.ACK_BEFORE_REPLICATION not in b.config.reference_bugs
    for td in req.topic_data:
        parts = []
        for pd in td.partition_data:
            err, base = append(b, td.name, pd.index, pd.records, req.acks)
            plog = b.topics.partition(td.name, pd.index)
            errors, message = _record_errors(b, td.name, pd.index, pd.records) if err == INVALID_RECORD else ([], None)
            r = PR(index=pd.index, error_code=err, base_offset=base, log_append_time_ms=-1,
                   log_start_offset=plog.log_start_offset if plog else -1, record_errors=errors,
                   error_message=message)
            if wait_all and err == NONE and plog is not None:
                required = base + max(read_header(pd.records).last_offset_delta, 0) + 1
                waits.append((r, _replicated(b, td.name, pd.index, required, max(req.timeout_ms, 0) / 1000)))
            parts.append(r)
        responses.append(TR(name=td.name, partition_responses=parts))
    if req.acks == 0:
        for _r, coro in waits:
            coro.close()
        return None
    if waits:
        codes = await asyncio.gather(*(c for _r, c in waits))
        for (r, _c), code in zip(waits, codes, strict=True):
            if code:
                r.error_code, r.base_offset = code, -1
    return build_response(ctx.head, responses=responses, throttle_time_ms=0)


def _read_partition(b: DataHost, topic: str, fp: Any, is_follower: bool, budget: int) -> tuple[Any, int]:
    P = FetchResponse.FetchableTopicResponse.PartitionData
    plog = b.topics.partition(topic, fp.partition)
    if plog is None or b.replicas.leading(topic, fp.partition) is None:
        return P(partition_index=fp.partition, error_code=_not_led(b, topic), high_watermark=-1,
                 last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                 preferred_read_replica=-1, records=b""), 0
    epoch = b.leader_epoch(topic, fp.partition)
    err, records = NONE, b""
    requested_epoch = getattr(fp, "current_leader_epoch", -1)
    if requested_epoch is not None and requested_epoch >= 0 and requested_epoch != epoch:
        err = FENCED_LEADER_EPOCH if requested_epoch < epoch else UNKNOWN_LEADER_EPOCH
    elif not plog.log_start_offset <= fp.fetch_offset <= plog.log_end_offset:
        err = OFFSET_OUT_OF_RANGE
    elif budget > 0:
        upto = plog.log_end_offset if is_follower else plog.high_watermark
        records = plog.read(fp.fetch_offset, min(fp.partition_max_bytes, budget), upto)
    hw = plog.high_watermark
    return P(partition_index=fp.partition, error_code=err, high_watermark=hw, last_stable_offset=hw,
             log_start_offset=plog.log_start_offset, aborted_transactions=None, preferred_read_replica=-1,
             records=records), len(records)


def _collect(b: DataHost, req: Any) -> tuple[list[Any], int, bool]:
    T = FetchResponse.FetchableTopicResponse
    budget = req.max_bytes if req.max_bytes > 0 else 2**31 - 1
    total, errors = 0, False
    out = []
    for ft in req.topics:
        parts = []
        for fp in ft.partitions:
            pd, n = _read_partition(b, ft.topic, fp, req.replica_id >= 0, budget - total)
            total += n
            errors = errors or pd.error_code != NONE
            parts.append(pd)
        out.append(T(topic=ft.topic, partitions=parts))
    return out, total, errors


async def fetch(b: DataHost, ctx: Ctx, req: Any) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(req.max_wait_ms, 0) / 1000
    keys = [(ft.topic, fp.partition) for ft in req.topics for fp in ft.partitions]
    if req.replica_id >= 0:
        for ft in req.topics:
            for fp in ft.partitions:
                part = b.replicas.leading(ft.topic, fp.partition)
                requested = getattr(fp, "current_leader_epoch", -1)
                # a fetch of an older leader epoch is fenced (FENCED_LEADER_EPOCH) and moves no follower state
                if part is not None and (requested is None or requested < 0 or requested == part.leader_epoch):
                    b.replicas.on_replica_fetch(part, req.replica_id, fp.fetch_offset)
    while True:
        responses, total, errors = _collect(b, req)
        remaining = deadline - loop.time()
        if total >= max(req.min_bytes, 1) or errors or remaining <= 0 or not keys:
            break
        fut = b.topics.waiter(keys)
        try:
            await asyncio.wait_for(fut, remaining)
        except TimeoutError:
            pass
        finally:
            b.topics.forget(keys, fut)
    return build_response(ctx.head, throttle_time_ms=0, error_code=NONE, session_id=0, responses=responses,
                          node_endpoints=[])


async def list_offsets(b: DataHost, ctx: Ctx, req: Any) -> Any:
    T = ListOffsetsResponse.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            plog = b.topics.partition(t.name, p.partition_index)
            epoch = b.leader_epoch(t.name, p.partition_index)
            if plog is None or (req.replica_id < 0 and b.replicas.leading(t.name, p.partition_index) is None):
                parts.append(P(partition_index=p.partition_index, error_code=_not_led(b, t.name),
                               timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            ts, off = -1, -1
            if p.timestamp == LATEST:
                off = plog.log_end_offset if req.replica_id >= 0 else plog.high_watermark
            elif p.timestamp == EARLIEST:
                off = plog.log_start_offset
            else:
                found = plog.offset_for_timestamp(p.timestamp)
                if found is not None and found[0] < plog.high_watermark:
                    off, ts = found
            parts.append(P(partition_index=p.partition_index, error_code=NONE, timestamp=ts, offset=off,
                           leader_epoch=epoch))
        out.append(T(name=t.name, partitions=parts))
    return build_response(ctx.head, throttle_time_ms=0, topics=out)


async def init_producer_id(b: DataHost, ctx: Ctx, req: Any) -> Any:
    if req.transactional_id is not None:
        log.warning("InitProducerId with transactional.id=%r refused: transactions are not implemented",
                    req.transactional_id)
        return build_response(ctx.head, throttle_time_ms=0, error_code=INVALID_REQUEST, producer_id=-1,
                              producer_epoch=-1)
    return build_response(ctx.head, throttle_time_ms=0, error_code=NONE, producer_id=await b.producer_ids.allocate(),
                          producer_epoch=0)


async def offset_for_leader_epoch(b: DataHost, ctx: Ctx, req: Any) -> Any:
    T = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
    P = T.EpochEndOffset
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            plog = b.topics.partition(t.topic, p.partition)
            epoch = b.leader_epoch(t.topic, p.partition)
            if plog is None:
                parts.append(P(error_code=UNKNOWN_TOPIC_OR_PARTITION, partition=p.partition, leader_epoch=-1,
                               end_offset=-1))
            elif p.leader_epoch > epoch:
                parts.append(P(error_code=NONE, partition=p.partition, leader_epoch=-1, end_offset=-1))
            else:
                parts.append(P(error_code=NONE, partition=p.partition, leader_epoch=epoch,
                               end_offset=plog.log_end_offset))
        out.append(T(topic=t.topic, partitions=parts))
    return build_response(ctx.head, throttle_time_ms=0, topics=out)


HANDLERS = {
    0: produce,
    1: fetch,
    2: list_offsets,
    22: init_producer_id,
    23: offset_for_leader_epoch,
}
