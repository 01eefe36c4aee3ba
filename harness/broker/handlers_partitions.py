"""The CreatePartitions handler: more partitions for an existing topic, as Kafka 3.9 in ZooKeeper mode does it.

Answered by the active controller only (NOT_CONTROLLER elsewhere, as `KafkaApis.handleCreatePartitionsRequest`),
after Kafka's checks with Kafka's messages (`AdminZkClient.createPartitions`, read from Apache Kafka 3.9.2's
own answers): the topic exists, the new count is higher than the current one, and given assignments are one
per new partition, of registered brokers, at the topic's replication factor. The new assignment goes to
`/brokers/topics/<t>` (`topic_admin.add_partitions`); the controller's watch on that znode makes the new
partitions online (first live replica leads, `model.controller.elect_offline_partitions`). The answer comes
once this broker's metadata shows a leader for every partition, or when the request's timeout passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kafka.protocol.admin import CreatePartitionsResponse
from kazoo.exceptions import BadVersionError, NoNodeError

from harness.broker.protocol import build_response
from harness.broker.topic_admin import TopicHost, add_partitions, wait_for_leaders

if TYPE_CHECKING:
    from harness.broker.controller import Controller
    from harness.broker.protocol import Ctx

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39
NOT_CONTROLLER = 41
INVALID_REQUEST = 42


class PartitionsHost(TopicHost, Protocol):
    """What CreatePartitions needs of the broker: the topic writers' needs and its controller role."""

    controller: Controller | None


def check(b: PartitionsHost, name: str, count: int, assignments: list[list[int]] | None) -> tuple[int, str | None]:
    """Kafka's answer to one topic of the request before anything is written: (error code, message)."""
    parts = b.metadata.topics.get(name)
    if not parts:
        return UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    current = len(parts)
    if count < current:
        return INVALID_PARTITIONS, (f"Topic currently has {current} partitions, which is higher than the requested "
                                    f"{count}.")
    if count == current:
        return INVALID_PARTITIONS, f"Topic already has {current} partitions."
    if assignments is None:
        return NONE, None
    if len(assignments) != count - current:
        return INVALID_REPLICA_ASSIGNMENT, (f"Increasing the number of partitions by {count - current} but "
                                            f"{len(assignments)} assignments provided.")
    unknown = sorted({x for a in assignments for x in a} - set(b.metadata.live()))
    if unknown:
        return INVALID_REPLICA_ASSIGNMENT, f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}."
    rf = len(parts[0].replicas) if 0 in parts else len(next(iter(parts.values())).replicas)
    odd = [(current + i, len(a)) for i, a in enumerate(assignments) if len(a) != rf]
    if odd:
        return INVALID_REPLICA_ASSIGNMENT, (
            f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
            f"[{', '.join(str(p) for p, _ in odd)}] have replication factors [{', '.join(str(n) for _, n in odd)}], "
            f"respectively.")
    if any(len(set(a)) != len(a) for a in assignments):
        return INVALID_REPLICA_ASSIGNMENT, "Duplicate brokers not allowed in replica assignment."
    return NONE, None


async def create_partitions(b: PartitionsHost, ctx: Ctx, req: Any) -> Any:
    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    ctl = b.controller
    if ctl is None or not ctl.active or b.standalone:
        results = [R(name=t.name, error_code=NOT_CONTROLLER,
                     error_message="This is not the correct controller for this cluster.") for t in req.topics]
        return build_response(ctx.head, throttle_time_ms=0, results=results)
    results, waits = [], []
    for t in req.topics:
        assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        err, msg = check(b, t.name, t.count, assignments)
        if err == NONE and not req.validate_only:
            current = len(b.metadata.topics[t.name])
            given = None if assignments is None else {current + i: tuple(a) for i, a in enumerate(assignments)}
            try:
                await add_partitions(b, t.name, t.count, given)
                waits.append((t.name, t.count))
            except NoNodeError:
                err, msg = UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist."
            except BadVersionError:
                err, msg = INVALID_REQUEST, f"The topic '{t.name}' changed meanwhile; try again."
        results.append(R(name=t.name, error_code=err, error_message=msg))
    timeout_s = min(max(req.timeout_ms, 0), 30000) / 1000
    for name, n in waits:
        await wait_for_leaders(b, name, n, timeout_s)
    return build_response(ctx.head, throttle_time_ms=0, results=results)


HANDLERS = {37: create_partitions}
