"""Topic creation and deletion as a ZooKeeper-mode broker does them: by writing znodes for the controller.

Owns `create_topic` (Kafka's AdminZkClient.createTopic: `/config/topics/<t>` with the overrides,
then `/brokers/topics/<t>` with the assignment and a fresh topic id; the controller sees the new
child of `/brokers/topics` and creates the partition states), `add_partitions` (Kafka's
AdminZkClient.addPartitions: the topic's assignment written again with the new partitions, which the
controller's watch on the topic sees), `delete_topic` (removes both; the
controller stops and deletes the replicas -- Kafka goes through `/admin/delete_topics`, this broker
deletes directly), and `wait_for_leaders` (CreateTopics answers once this broker's metadata cache
shows a leader for every partition, or the request's timeout passes). In standalone mode the
topic is created locally with this broker as the only replica.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import random
import uuid
from typing import TYPE_CHECKING, Protocol

from kazoo.exceptions import NodeExistsError, NoNodeError

from harness.broker.assignment import assign_replicas
from harness.broker.controller import topic_config_path
from harness.zk.paths import topic_path
from harness.zk.znodes import TopicAssignment

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from harness.broker.metadata import MetadataCache
    from harness.broker.producer_state import PartitionProducers
    from harness.broker.replica import ReplicaManager
    from harness.broker.topics import TopicStore

log = logging.getLogger(__name__)


class TopicHost(Protocol):
    """What creating, growing and deleting topics needs of the broker."""

    topics: TopicStore
    metadata: MetadataCache
    replicas: ReplicaManager
    producers: dict[tuple[str, int], PartitionProducers]

    @property
    def standalone(self) -> bool: ...

    def local_leader(self, topic: str, partition: int) -> None: ...

    def zk_client(self) -> KazooClient | None: ...


class TopicExists(Exception):
    """`/brokers/topics/<t>` already exists."""


def new_topic_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


async def create_topic(b: TopicHost, name: str, partitions: int, rf: int, configs: dict[str, str],
                       replicas: dict[int, tuple[int, ...]] | None = None) -> None:
    """Write the topic for the controller (or create it locally when standalone); TopicExists if present."""
    if b.standalone:
        if name in b.topics.topics:
            raise TopicExists(name)
        b.topics.create(name, partitions, configs)
        for p in range(partitions):
            b.local_leader(name, p)
        return
    assignment = replicas or assign_replicas(b.metadata.live(), partitions, rf)
    data = TopicAssignment(name, assignment, topic_id=new_topic_id()).encode()
    cfg = json.dumps({"version": 1, "config": configs}, separators=(",", ":")).encode()
    client = b.zk_client()
    assert client is not None

    def write() -> None:
        if client.exists(topic_path(name)) is not None:
            raise TopicExists(name)
        client.ensure_path("/config/topics")
        try:
            client.create(topic_config_path(name), cfg)
        except NodeExistsError:
            client.set(topic_config_path(name), cfg)
        try:
            client.create(topic_path(name), data)
        except NodeExistsError as exc:
            raise TopicExists(name) from exc
    await asyncio.to_thread(write)
    log.info("topic %s written to ZooKeeper: %d partitions, replicas %s, configs %s", name, len(assignment),
             {p: list(r) for p, r in sorted(assignment.items())}, configs)


def new_partition_replicas(brokers: list[int], existing: dict[int, tuple[int, ...]], count: int,
                           rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions len(existing)..count-1, at the topic's replication factor, continuing Kafka's
    round robin from where partition 0's first replica puts it (AdminZkClient.createPartitions: start index
    = partition 0's first replica, start partition id = the current count)."""
    ids = sorted(brokers)
    current = len(existing)
    first = existing[0][0] if existing.get(0) else ids[0]
    start = (ids.index(first) if first in ids else 0) + current
    added = assign_replicas(ids, count - current, len(existing[0]), start_index=start % len(ids), rng=rng)
    return {current + p: r for p, r in added.items()}


async def add_partitions(b: TopicHost, name: str, count: int, replicas: dict[int, tuple[int, ...]] | None) -> None:
    """Write `/brokers/topics/<name>` again with partitions up to `count` (given `replicas`, or Kafka's round
    robin); raises NoNodeError when the topic is gone, BadVersionError when it changed meanwhile."""
    client = b.zk_client()
    assert client is not None
    live = b.metadata.live()

    def write() -> None:
        data, stat = client.get(topic_path(name))
        current = TopicAssignment.decode(name, data)
        existing = {p: tuple(r) for p, r in current.partitions.items()}
        added = replicas or new_partition_replicas(live, existing, count)
        merged = TopicAssignment(name, {**existing, **added}, current.adding_replicas, current.removing_replicas,
                                 current.topic_id, current.version)
        client.set(topic_path(name), merged.encode(), version=stat.version)
        log.info("topic %s: partitions %s added in ZooKeeper", name, {p: list(r) for p, r in sorted(added.items())})
    await asyncio.to_thread(write)


async def delete_topic(b: TopicHost, name: str) -> None:
    if b.standalone:
        n = len(b.topics.topics[name].partitions)
        b.topics.delete(name)
        b.metadata.topics.pop(name, None)
        for p in range(n):
            b.producers.pop((name, p), None)
            b.replicas.partitions.pop((name, p), None)
        return
    client = b.zk_client()
    assert client is not None

    def delete() -> None:
        for path in (topic_path(name), topic_config_path(name)):
            with contextlib.suppress(NoNodeError):
                client.delete(path, recursive=True)
    await asyncio.to_thread(delete)


async def wait_for_leaders(b: TopicHost, name: str, partitions: int, timeout_s: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        parts = b.metadata.topics.get(name, {})
        if len(parts) >= partitions and all(i.leader >= 0 for i in parts.values()):
            return True
        left = deadline - loop.time()
        if left <= 0:
            return False
        await b.metadata.wait_changed(min(left, 0.5))
