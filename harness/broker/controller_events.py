"""The active controller's event handlers (Kafka's KafkaController event processing), one function per event.

Owns what the controller does on: broker loss, return and bounce (`/brokers/ids` children, with
the registration's czxid telling a quick restart apart), new and deleted topics (`/brokers/topics`
children), ISR change notifications (re-read the states, propagate metadata), a controlled
shutdown request, preferred-replica elections (ElectLeaders, `/admin/preferred_replica_election`)
and the auto leader rebalance. Each decision is the model's, through `Controller.decide`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import NoNodeError

from harness.broker import bugs
from harness.model.controller import (
    ClusterView,
    ControllerPlan,
    StateChange,
    auto_rebalance_targets,
    elect_offline_partitions,
    on_broker_failure,
    on_controlled_shutdown,
    preferred_elections,
)
from harness.zk.notifications import IsrChangeNotification, PreferredReplicaElection
from harness.zk.paths import ISR_CHANGE_NOTIFICATION_PATH, PREFERRED_REPLICA_ELECTION_PATH

if TYPE_CHECKING:
    from harness.broker.controller import Controller

log = logging.getLogger(__name__)
TP = tuple[str, int]
BROKER_NOT_AVAILABLE = 8
ELECTION_NOT_NEEDED = 84
PREFERRED_LEADER_NOT_AVAILABLE = 80
UNKNOWN_TOPIC_OR_PARTITION = 3


async def on_brokers(c: Controller) -> None:
    brokers = await c.zk(c._read_brokers)
    old, new = set(c.live), set(brokers)
    bounced = {i for i in old & new if c.czxid.get(i) != brokers[i][1]}
    dead, born = (old - new) | bounced, (new - old) | bounced
    if not dead and not born:
        return
    log.warning("controller %d: brokers died %s, started %s (live now %s)", c.broker_id, sorted(dead),
                sorted(born), sorted(new))
    changes: list[StateChange] = []
    if dead:
        for i in dead:
            c.live.pop(i, None)
            c.channels.remove(i)
        c.shutting_down -= dead
        # Kafka (onBrokerFailure -> onReplicasBecomeOffline) reads these partitions' states from ZooKeeper before
        # electing and before removing the dead replicas from their ISRs (doElectLeaderForPartitions,
        # doRemoveReplicasFromIsr): a leader's ISR change not yet notified must not hide a dead ISR member.
        hosted = sorted(tp for tp, ar in c.assignments.items() if dead & set(ar))
        c.states.update(await c.zk(c.refresh_states, hosted))
        written, _ = await c.decide(c.removing_dead(lambda v: on_broker_failure(v, dead, c.epoch)))
        changes += written
    for i in born:
        c.live[i] = brokers[i][0]
    c.czxid = {i: cz for i, (_, cz) in brokers.items()}
    if born:
        c.channels.update_metadata(c.live_ids(), full=True)
        for i in sorted(born):
            c.channels.leader_and_isr(sorted(tp for tp, ar in c.assignments.items() if i in ar), only=i)
        written, _ = await c.decide(lambda v: elect_offline_partitions(v, c.epoch))
        changes += written
    c.propagate(changes)
    if not changes and dead:
        c.channels.update_metadata(c.live_ids(), full=True)


async def on_topics(c: Controller) -> None:
    topics = set(await c.zk(c._read_topics))
    known = {t for t, _ in c.assignments}
    for t in sorted(topics - known):
        await c._load_topic(t)
    gone = known - topics
    if gone:
        tps = sorted(tp for tp in c.assignments if tp[0] in gone)
        for tp in tps:
            c.assignments.pop(tp, None)
            c.states.pop(tp, None)
        for t in gone:
            c.topic_configs.pop(t, None)
        c.channels.stop_replica(c.live_ids(), tps, delete=True)
        c.channels.update_metadata(c.live_ids(), deleted=sorted(gone))
    if topics - known:
        written, _ = await c.decide(lambda v: elect_offline_partitions(v, c.epoch))
        c.propagate(written)


async def on_partitions(c: Controller, topic: str) -> None:
    """Kafka's PartitionModificationsHandler (`processPartitionModifications`): partitions that the topic's
    znode lists and the controller does not know are new; they go online like a new topic's (first live
    replica leads). Known partitions are left alone (a reassignment rewrites the znode too)."""
    if not any(t == topic for t, _ in c.assignments):
        return  # a topic not loaded yet, or deleted: on_topics owns it
    try:
        ar, states, _configs = await c.zk(c._read_topic, topic)
    except NoNodeError:
        return
    added = {tp: r for tp, r in ar.items() if tp not in c.assignments}
    if not added:
        return
    log.info("controller: topic %s gains partitions %s", topic, {p: list(r) for (_t, p), r in sorted(added.items())})
    c.assignments.update(added)
    c.states.update({tp: s for tp, s in states.items() if tp in added})
    written, _ = await c.decide(lambda v: elect_offline_partitions(v, c.epoch))
    c.propagate(written)


def take_isr_notifications(c: Controller) -> set[TP]:
    tps: set[TP] = set()
    for child in c.client.get_children(ISR_CHANGE_NOTIFICATION_PATH,
                                          watch=c.watcher(ISR_CHANGE_NOTIFICATION_PATH)):
        path = f"{ISR_CHANGE_NOTIFICATION_PATH}/{child}"
        with contextlib.suppress(NoNodeError, ValueError):
            data, _ = c.client.get(path)
            tps.update(IsrChangeNotification.decode(data).partitions)
        with contextlib.suppress(NoNodeError):
            c.client.delete(path)
    return tps


async def on_isr(c: Controller) -> None:
    tps = {tp for tp in await c.zk(take_isr_notifications, c) if tp in c.assignments}
    if not tps:
        return
    c.states.update(await c.zk(c.refresh_states, sorted(tps)))
    c.channels.update_metadata(c.live_ids(), sorted(tps))
    await c.reassign.on_isr_change()


async def on_shutdown_request(c: Controller, broker: int) -> dict[str, Any]:
    if broker not in c.live:
        return {"error_code": BROKER_NOT_AVAILABLE, "remaining": []}
    c.shutting_down.add(broker)
    written, plan = await c.decide(lambda v: on_controlled_shutdown(v, broker, c.epoch))
    c.propagate(written)  # LeaderAndIsr skips brokers shutting down; UpdateMetadata names them
    replicated = sorted(tp for tp, ar in c.assignments.items() if broker in ar and len(ar) > 1)
    c.channels.stop_replica([broker], replicated, delete=False)  # it stops fetching (Kafka: StopReplica)
    log.warning("controller %d: controlled shutdown of %d moved %d partitions, %d still led", c.broker_id,
                broker, len(written), len(plan.still_led))
    return {"error_code": 0, "remaining": [list(tp) for tp in plan.still_led]}


async def on_elect_leaders(c: Controller, partitions: list[TP] | None) -> dict[str, Any]:
    targets = sorted(c.assignments) if partitions is None else [tp for tp in partitions]
    results: dict[TP, int] = {}
    for tp in targets:
        st, ar = c.states.get(tp), c.assignments.get(tp)
        if ar is None:
            results[tp] = UNKNOWN_TOPIC_OR_PARTITION
        elif st is not None and st.leader == ar[0]:
            results[tp] = ELECTION_NOT_NEEDED
    todo = [tp for tp in targets if tp not in results]
    written, _ = await c.decide(_preferred(c, todo))
    c.propagate(written)
    done = {ch.partition for ch in written}
    for tp in todo:
        results[tp] = 0 if tp in done else PREFERRED_LEADER_NOT_AVAILABLE
    return {"error_code": 0, "results": [[t, p, e] for (t, p), e in sorted(results.items())]}


def take_preferred_znode(c: Controller) -> list[TP] | None:
    try:
        data, _ = c.client.get(PREFERRED_REPLICA_ELECTION_PATH)
    except NoNodeError:
        c.client.exists(PREFERRED_REPLICA_ELECTION_PATH, watch=c.watcher(PREFERRED_REPLICA_ELECTION_PATH))
        return None
    parts = list(PreferredReplicaElection.decode(data).partitions)
    with contextlib.suppress(NoNodeError):
        c.client.delete(PREFERRED_REPLICA_ELECTION_PATH)
    c.client.exists(PREFERRED_REPLICA_ELECTION_PATH, watch=c.watcher(PREFERRED_REPLICA_ELECTION_PATH))
    return parts


async def on_preferred_znode(c: Controller) -> None:
    parts = await c.zk(take_preferred_znode, c)
    if parts:
        await on_elect_leaders(c, parts)


async def on_rebalance(c: Controller) -> None:
    targets = auto_rebalance_targets(c.view(), c.config.leader_imbalance_per_broker_percentage)
    if targets:
        log.info("controller %d: auto leader rebalance moves %s", c.broker_id, list(targets))
        written, _ = await c.decide(_preferred(c, targets))
        c.propagate(written)


def _preferred(c: Controller, targets: Sequence[TP]) -> Callable[[ClusterView], ControllerPlan]:
    """The model's preferred-replica election of `targets`, with the `preferred_outside_isr` bug when set."""
    if bugs.PREFERRED_OUTSIDE_ISR not in c.config.reference_bugs:
        return lambda v: preferred_elections(v, c.epoch, targets)
    return lambda v: bugs.preferred_outside_isr(v, c.epoch, preferred_elections(v, c.epoch, targets))
