"""Handlers for cluster and topic administration: ApiVersions, Metadata, CreateTopics, DeleteTopics,
DescribeConfigs, DescribeCluster.

Metadata and DescribeCluster answer from the metadata cache (what the controller last sent:
live brokers, the controller id, each partition's leader, leader epoch, ISR, replicas and offline
replicas), with each broker's address advertised for the listener the request came in on.
CreateTopics and auto-creation write the topic to ZooKeeper for the controller (`topic_admin`)
with Kafka's replica assignment, after Kafka's checks (configs: INVALID_CONFIG as
`harness.model.topic_configs` words it); unknown topics are auto-created when both the request
(`allow_auto_topic_creation`, v4+) and `auto.create.topics.enable` allow it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from kafka.protocol.admin import (
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DescribeClusterResponse,
    DescribeConfigsResponse,
)
from kafka.protocol.metadata import MetadataResponse

from harness.broker.protocol import api_versions_response, build_response
from harness.broker.topic_admin import TopicExists, TopicHost, create_topic, delete_topic, wait_for_leaders
from harness.broker.topics import OFFSETS_TOPIC, TopicError, topic_name_problem
from harness.model.topic_configs import config_problem

if TYPE_CHECKING:
    from harness.broker.config import BrokerConfig
    from harness.broker.protocol import Ctx

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
TOPIC_DELETION_DISABLED = 73
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


class AdminHost(TopicHost, Protocol):
    """What the metadata, topic and config handlers need of the broker."""

    config: BrokerConfig
    cluster_id: str

    @property
    def broker_id(self) -> int: ...

    def has_metadata(self) -> bool: ...

    async def wait_first_metadata(self, timeout_s: float | None = None) -> bool: ...


def live_brokers(b: AdminHost) -> list[int]:
    return b.metadata.live()


async def api_versions(b: AdminHost, ctx: Ctx, req: Any) -> Any:
    return api_versions_response(ctx.head.api_version)


def _partition_meta(b: AdminHost, topic: str, p: int) -> Any:
    P = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    info = b.metadata.partition(topic, p)
    assert info is not None
    return P(error_code=NONE if info.leader >= 0 else LEADER_NOT_AVAILABLE, partition_index=p, leader_id=info.leader,
             leader_epoch=info.leader_epoch, replica_nodes=list(info.replicas), isr_nodes=list(info.isr),
             offline_replicas=list(info.offline))


def _topic_meta(b: AdminHost, name: str, error: int = NONE) -> Any:
    T = MetadataResponse.MetadataResponseTopic
    parts = sorted(b.metadata.topics.get(name, {})) if not error else []
    return T(error_code=error, name=name, is_internal=name == OFFSETS_TOPIC,
             partitions=[_partition_meta(b, name, p) for p in parts])


async def ensure_offsets_topic(b: AdminHost) -> int:
    """Create `__consumer_offsets` if missing; NONE when it exists (or was just written)."""
    if OFFSETS_TOPIC in b.metadata.topics:
        return NONE
    cfg = b.config
    if cfg.offsets_topic_replication_factor > len(live_brokers(b)):
        return LEADER_NOT_AVAILABLE
    with contextlib.suppress(TopicExists, TopicError):
        await create_topic(b, OFFSETS_TOPIC, cfg.offsets_topic_num_partitions, cfg.offsets_topic_replication_factor,
                           {"cleanup.policy": "compact", "segment.bytes": str(cfg.offsets_topic_segment_bytes)})
    return NONE


async def auto_create(b: AdminHost, name: str) -> int:
    """Create `name` with broker defaults; the Metadata error code for it."""
    cfg = b.config
    if name == OFFSETS_TOPIC:
        err = await ensure_offsets_topic(b)
        return err if err else (NONE if name in b.metadata.topics else LEADER_NOT_AVAILABLE)
    if topic_name_problem(name):
        return INVALID_TOPIC_EXCEPTION
    if cfg.default_replication_factor > len(live_brokers(b)):
        return INVALID_REPLICATION_FACTOR
    try:
        await create_topic(b, name, cfg.num_partitions, cfg.default_replication_factor, {})
    except TopicExists:
        pass
    except TopicError:
        return INVALID_TOPIC_EXCEPTION
    return NONE if name in b.metadata.topics else LEADER_NOT_AVAILABLE


def _brokers(b: AdminHost, listener: str) -> list[Any]:
    out = []
    for bid in b.metadata.live():
        ep = b.metadata.endpoint(bid, listener)
        if ep is not None:
            out.append((bid, ep.host, ep.port))
    return out


async def metadata(b: AdminHost, ctx: Ctx, req: Any) -> Any:
    v = ctx.head.api_version
    if not b.has_metadata():
        await b.wait_first_metadata()
    B = MetadataResponse.MetadataResponseBroker
    brokers = [B(node_id=i, host=h, port=p, rack=None) for i, h, p in _brokers(b, ctx.listener)]
    if req.topics is None or (v == 0 and not req.topics):
        topics = [_topic_meta(b, n) for n in sorted(b.metadata.topics)]
    else:
        allow = (req.allow_auto_topic_creation if v >= 4 else True) and b.config.auto_create_topics_enable
        topics = []
        for rt in req.topics:
            name = rt.name
            if name in b.metadata.topics:
                topics.append(_topic_meta(b, name))
            elif topic_name_problem(name or ""):
                topics.append(_topic_meta(b, name or "", INVALID_TOPIC_EXCEPTION))
            elif allow:
                err = await auto_create(b, name)
                topics.append(_topic_meta(b, name, err))
            else:
                topics.append(_topic_meta(b, name, UNKNOWN_TOPIC_OR_PARTITION))
    return build_response(ctx.head, throttle_time_ms=0, brokers=brokers, cluster_id=b.cluster_id,
                          controller_id=b.metadata.controller_id, topics=topics)


async def create_topics(b: AdminHost, ctx: Ctx, req: Any) -> Any:
    R = CreateTopicsResponse.CreatableTopicResult
    results = []
    waits: list[tuple[str, int]] = []
    for t in req.topics:
        err, msg = _check_create(b, t)
        if err == NONE and not req.validate_only:
            partitions = len(t.assignments) if t.assignments else t.num_partitions
            if partitions == -1:
                partitions = b.config.num_partitions
            rf = b.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
            configs = {c.name: c.value for c in t.configs if c.value is not None}
            explicit = {a.partition_index: tuple(a.broker_ids) for a in t.assignments} if t.assignments else None
            try:
                await create_topic(b, t.name, partitions, rf, configs, explicit)
                waits.append((t.name, partitions))
            except TopicExists:
                err, msg = TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."
            except TopicError as exc:
                err, msg = INVALID_TOPIC_EXCEPTION, str(exc)
        results.append(R(name=t.name, error_code=err, error_message=msg))
    timeout_s = min(max(req.timeout_ms, 0), 30000) / 1000
    for name, n in waits:
        await wait_for_leaders(b, name, n, timeout_s)
    return build_response(ctx.head, throttle_time_ms=0, topics=results)


def _check_create(b: AdminHost, t: Any) -> tuple[int, str | None]:
    """Kafka's checks of one CreateTopics entry, in its order: the name, the partitions and replicas, then
    the configs (`topic_configs`)."""
    err, msg = _check_shape(b, t)
    if err == NONE:
        problem = config_problem({c.name: c.value for c in t.configs if c.value is not None})
        if problem:
            return INVALID_CONFIG, problem
    return err, msg


def _check_shape(b: AdminHost, t: Any) -> tuple[int, str | None]:
    problem = topic_name_problem(t.name)
    if problem:
        return INVALID_TOPIC_EXCEPTION, problem
    if t.name in b.metadata.topics:
        return TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."
    alive = live_brokers(b)
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            return INVALID_REQUEST, "both assignments and num_partitions/replication_factor were given"
        for a in t.assignments:
            if not a.broker_ids or any(x not in alive for x in a.broker_ids) or len(set(a.broker_ids)) != len(
                    a.broker_ids):
                return INVALID_REPLICA_ASSIGNMENT, f"replicas {a.broker_ids} are not distinct live brokers {alive}"
        return NONE, None
    partitions = b.config.num_partitions if t.num_partitions == -1 else t.num_partitions
    rf = b.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
    if partitions <= 0:
        return INVALID_PARTITIONS, f"Number of partitions must be larger than 0 (got {partitions})."
    if rf <= 0 or rf > len(alive):
        return INVALID_REPLICATION_FACTOR, (f"Replication factor: {rf} larger than available brokers: "
                                            f"{len(alive)}." if rf > 0 else "Replication factor must be > 0.")
    return NONE, None


async def delete_topics(b: AdminHost, ctx: Ctx, req: Any) -> Any:
    R = DeleteTopicsResponse.DeletableTopicResult
    out = []
    for name in req.topic_names:
        if not b.config.delete_topic_enable:
            err = TOPIC_DELETION_DISABLED
        elif name not in b.metadata.topics:
            err = UNKNOWN_TOPIC_OR_PARTITION
        elif name == OFFSETS_TOPIC:
            err = INVALID_REQUEST
        else:
            await delete_topic(b, name)
            err = NONE
        out.append(R(name=name, error_code=err))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(max(req.timeout_ms, 0), 30000) / 1000
    while any(r.error_code == NONE and r.name in b.metadata.topics for r in out) and loop.time() < deadline:
        await b.metadata.wait_changed(max(min(deadline - loop.time(), 0.5), 0.01))
    return build_response(ctx.head, throttle_time_ms=0, responses=out)


def topic_config_values(b: AdminHost, name: str, overrides: dict[str, str] | None = None) -> dict[str, tuple[str, int]]:
    """Topic configs as (value, source): explicit overrides are DYNAMIC_TOPIC_CONFIG, the rest defaults."""
    cfg = b.config
    defaults = {
        "cleanup.policy": "compact" if name == OFFSETS_TOPIC else "delete",
        "compression.type": "producer",
        "min.insync.replicas": str(cfg.min_insync_replicas),
        "retention.ms": "604800000",
        "retention.bytes": "-1",
        "segment.bytes": str(cfg.offsets_topic_segment_bytes if name == OFFSETS_TOPIC else cfg.log_segment_bytes),
        "max.message.bytes": str(cfg.message_max_bytes),
        "message.timestamp.type": "CreateTime",
        "unclean.leader.election.enable": str(cfg.unclean_leader_election_enable).lower(),
        "flush.messages": str(cfg.log_flush_interval_messages),
        "index.interval.bytes": str(cfg.log_index_interval_bytes),
    }
    out = {k: (v, DEFAULT_CONFIG) for k, v in defaults.items()}
    t = b.topics.topics.get(name)
    for k, v in (overrides if overrides is not None else t.configs if t else {}).items():
        out[k] = (v, DYNAMIC_TOPIC_CONFIG)
    return out


async def topic_overrides(b: AdminHost, name: str) -> dict[str, str] | None:
    """A topic's overrides: the local copy when this broker hosts it, else `/config/topics/<t>` (None: none)."""
    client = b.zk_client()
    if name in b.topics.topics or client is None:
        return None

    def read() -> dict[str, str] | None:
        import json
        try:
            data, _ = client.get(f"/config/topics/{name}")
            return {str(k): str(v) for k, v in json.loads(data).get("config", {}).items()}
        except Exception:
            return None
    return await asyncio.to_thread(read)


async def describe_configs(b: AdminHost, ctx: Ctx, req: Any) -> Any:
    Res = DescribeConfigsResponse.DescribeConfigsResult
    Entry = Res.DescribeConfigsResourceResult
    results = []
    explicit = dict(b.config.properties)
    for r in req.resources:
        values: dict[str, tuple[str, int]] = {}
        err, msg = NONE, None
        if r.resource_type == TOPIC_RESOURCE:
            if r.resource_name in b.metadata.topics:
                values = topic_config_values(b, r.resource_name, await topic_overrides(b, r.resource_name))
            else:
                err, msg = UNKNOWN_TOPIC_OR_PARTITION, f"topic {r.resource_name} does not exist"
        elif r.resource_type == BROKER_RESOURCE:
            if r.resource_name in ("", str(b.broker_id)):
                values = {k: (v, STATIC_BROKER_CONFIG if k in explicit else DEFAULT_CONFIG)
                          for k, v in b.config.describe().items()}
            else:
                err, msg = INVALID_REQUEST, f"broker {r.resource_name} is not this broker ({b.broker_id})"
        else:
            err, msg = INVALID_REQUEST, f"resource type {r.resource_type} is not supported"
        keys = r.configuration_keys
        entries = [Entry(name=k, value=v, read_only=False, config_source=src, is_default=src == DEFAULT_CONFIG,
                         is_sensitive=False, synonyms=[], config_type=0, documentation=None)
                   for k, (v, src) in sorted(values.items()) if keys is None or k in keys]
        results.append(Res(error_code=err, error_message=msg, resource_type=r.resource_type,
                           resource_name=r.resource_name, configs=entries))
    return build_response(ctx.head, throttle_time_ms=0, results=results)


async def describe_cluster(b: AdminHost, ctx: Ctx, req: Any) -> Any:
    if not b.has_metadata():
        await b.wait_first_metadata()
    N = DescribeClusterResponse.DescribeClusterBroker
    nodes = [N(broker_id=i, host=h, port=p, rack=None) for i, h, p in _brokers(b, ctx.listener)]
    return build_response(ctx.head, throttle_time_ms=0, error_code=NONE, error_message=None,
                          cluster_id=b.cluster_id, controller_id=b.metadata.controller_id, brokers=nodes)


HANDLERS = {
    60: describe_cluster,
    18: api_versions,
    3: metadata,
    19: create_topics,
    20: delete_topics,
    32: describe_configs,
}
