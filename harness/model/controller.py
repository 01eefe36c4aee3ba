"""The ZooKeeper-mode controller (KAFKA-BEHAVIOUR.md §1, §2): its election and its decisions.

Owns
- the znode formats of `/controller`, `/controller_epoch` and `/brokers/ids/<id>`;
- `elect_controller`: the race to create the ephemeral `/controller` together with the epoch
  bump, as Kafka's `registerControllerAndIncrementControllerEpoch` (one Multi: create
  `/controller` + conditional set of `/controller_epoch` at the version read), run through any
  `ZkExecutor` (the in-memory `ZkWorld` in tests, a kazoo adapter in the reference broker);
- the controller's pure decisions over a `ClusterView` (live brokers, AR, partition states):
  `on_controller_failover` (offline replicas out of every ISR, then elect), `on_broker_startup`,
  `on_broker_failure`, `on_controlled_shutdown`, `preferred_elections`, `auto_rebalance_targets`
  and `accepts_controller_epoch` (fencing). Decisions are `StateChange`s: the state before, the
  state to write (leader_epoch + 1, this controller's epoch, zk_version + 1) and the ZooKeeper op
  that writes it conditionally, fenced on the `/controller_epoch` version as Kafka does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from harness.errors import HarnessError
from harness.model.election import Strategy, elect
from harness.model.partition_state import NO_LEADER, PartitionState, state_path
from harness.model.zkmodel import (
    Check,
    Create,
    Exists,
    GetChildren,
    GetData,
    Multi,
    OpResult,
    SetData,
    ZkCode,
    ZkExecutor,
)

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKER_IDS_PATH = "/brokers/ids"
INITIAL_CONTROLLER_EPOCH = 0
"""Kafka writes 0 when it creates `/controller_epoch`; the first controller then bumps it to 1."""

TopicPartition = tuple[str, int]


class ControllerError(HarnessError):
    """A controller znode is malformed or ZooKeeper answered something the protocol does not allow."""


def controller_data(broker_id: int, now_ms: int) -> bytes:
    """`/controller` data: {"version":1,"brokerid":<id>,"timestamp":"<ms>"}."""
    return json.dumps({"version": 1, "brokerid": broker_id, "timestamp": str(now_ms)},
                      separators=(",", ":")).encode()


def parse_controller_data(data: bytes | str) -> int:
    """The broker id in `/controller` data (old plain-integer form accepted too)."""
    try:
        doc = json.loads(data)
        return int(doc["brokerid"]) if isinstance(doc, dict) else int(doc)
    except (ValueError, KeyError, TypeError) as exc:
        raise ControllerError(f"{CONTROLLER_PATH}: unreadable controller data {data!r}: {exc}") from exc


def parse_epoch(data: bytes | str) -> int:
    try:
        return int(data)
    except (ValueError, TypeError) as exc:
        raise ControllerError(f"{CONTROLLER_EPOCH_PATH}: not an integer: {data!r}") from exc


def broker_registration_data(
    broker_id: int, endpoints: Mapping[str, tuple[str, int]], now_ms: int,
    security_protocols: Mapping[str, str] | None = None,
) -> bytes:
    """`/brokers/ids/<id>` data (version 5) for listeners name -> (host, port)."""
    protocols = dict(security_protocols or {name: "PLAINTEXT" for name in endpoints})
    plain = endpoints.get("PLAINTEXT")
    doc = {
        "listener_security_protocol_map": protocols,
        "endpoints": [f"{name}://{host}:{port}" for name, (host, port) in endpoints.items()],
        "jmx_port": -1,
        "features": {},
        "host": plain[0] if plain else None,
        "timestamp": str(now_ms),
        "port": plain[1] if plain else -1,
        "version": 5,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


# ---- controller election ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ControllerElection:
    """Outcome of one `elect_controller` attempt.

    `won`: this broker is now controller with `epoch` (and `epoch_zk_version` to fence writes).
    Otherwise `controller_id` is who holds `/controller` (-1 if it vanished meanwhile: retry).
    """

    broker_id: int
    won: bool
    controller_id: int
    epoch: int | None = None
    epoch_zk_version: int | None = None


def registration_op(broker_id: int, now_ms: int, current_epoch: int, epoch_zk_version: int) -> Multi:
    """The atomic claim: create ephemeral `/controller`, set epoch+1 if still at `epoch_zk_version`."""
    return Multi((
        Create(CONTROLLER_PATH, controller_data(broker_id, now_ms), ephemeral=True),
        SetData(CONTROLLER_EPOCH_PATH, str(current_epoch + 1).encode(), epoch_zk_version),
    ))


def _read(zk: ZkExecutor, path: str) -> OpResult:
    res = zk.execute(GetData(path))
    if res.code not in (ZkCode.OK, ZkCode.NO_NODE):
        raise ControllerError(f"reading {path}: ZooKeeper answered {res.code.value}")
    return res


def current_controller(zk: ZkExecutor, watch: bool = False) -> int:
    """The broker id in `/controller`, or -1 when there is none; `watch` leaves an exists-watch on it."""
    if watch:
        zk.execute(Exists(CONTROLLER_PATH, watch=True))
    res = _read(zk, CONTROLLER_PATH)
    return parse_controller_data(res.data or b"") if res.ok else -1


def elect_controller(zk: ZkExecutor, broker_id: int, now_ms: int) -> ControllerElection:
    """One election attempt of `broker_id` (Kafka's `KafkaController.elect`); leaves a watch on `/controller`.

    Reads `/controller` (someone, even this broker, holds it: stop, as Kafka does, watching it),
    reads or creates `/controller_epoch`, then runs `registration_op`.
    NODE_EXISTS or BAD_VERSION means another broker won the race.
    """
    holder = current_controller(zk, watch=True)
    if holder != -1:
        return ControllerElection(broker_id, False, holder)
    epoch_res = _read(zk, CONTROLLER_EPOCH_PATH)
    if not epoch_res.ok:
        created = zk.execute(Create(CONTROLLER_EPOCH_PATH, str(INITIAL_CONTROLLER_EPOCH).encode()))
        if created.code not in (ZkCode.OK, ZkCode.NODE_EXISTS):
            raise ControllerError(f"creating {CONTROLLER_EPOCH_PATH}: ZooKeeper answered {created.code.value}")
        epoch_res = _read(zk, CONTROLLER_EPOCH_PATH)
    epoch, version = parse_epoch(epoch_res.data or b""), epoch_res.version or 0
    res = zk.execute(registration_op(broker_id, now_ms, epoch, version))
    if res.ok:
        return ControllerElection(broker_id, True, broker_id, epoch + 1, res.results[1].version)
    if res.code in (ZkCode.NODE_EXISTS, ZkCode.BAD_VERSION, ZkCode.NO_NODE):
        return ControllerElection(broker_id, False, current_controller(zk, watch=True))
    raise ControllerError(f"{CONTROLLER_PATH}: registration by broker {broker_id} failed: {res.code.value}")


FAILOVER_WATCHED_CHILDREN = ("/brokers/ids", "/brokers/topics", "/admin/delete_topics", "/isr_change_notification")
FAILOVER_WATCHED_NODES = ("/admin/reassign_partitions", "/admin/preferred_replica_election")


def failover_watch_ops() -> tuple[GetChildren | Exists, ...]:
    """The watches a new controller registers (onControllerFailover): children of the broker/topic/
    deletion/ISR-change paths, existence of the reassignment and preferred-election znodes."""
    return (*(GetChildren(p, watch=True) for p in FAILOVER_WATCHED_CHILDREN),
            *(Exists(p, watch=True) for p in FAILOVER_WATCHED_NODES))


def accepts_controller_epoch(known_epoch: int, request_epoch: int) -> bool:
    """A broker accepts a controller request unless its epoch is older than one already seen."""
    return request_epoch >= known_epoch


# ---- controller decisions --------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterView:
    """What the controller knows: live brokers, AR per partition, the partition state znodes.

    A partition in `assignments` but not in `states` is New (no state znode yet). `unclean` is the
    cluster default of unclean.leader.election.enable, `unclean_topics` the topics overriding it.
    """

    live: frozenset[int]
    assignments: Mapping[TopicPartition, tuple[int, ...]]
    states: Mapping[TopicPartition, PartitionState] = field(default_factory=dict)
    shutting_down: frozenset[int] = frozenset()
    unclean: bool = False
    unclean_topics: Mapping[str, bool] = field(default_factory=dict)

    def unclean_for(self, topic: str) -> bool:
        return self.unclean_topics.get(topic, self.unclean)

    def with_states(self, changes: Iterable[StateChange]) -> ClusterView:
        """The view after the changes' writes succeeded."""
        states = dict(self.states)
        for ch in changes:
            states[ch.partition] = ch.after
        return replace(self, states=states)


@dataclass(frozen=True, slots=True)
class StateChange:
    """One partition state write the controller decides: `before` (None: create) -> `after`."""

    partition: TopicPartition
    reason: str
    before: PartitionState | None
    after: PartitionState
    strategy: Strategy | None = None
    unclean: bool = False

    def zk_op(self, controller_epoch_zk_version: int | None = None) -> Multi:
        """The conditional write, fenced by a Check on `/controller_epoch` when its version is given."""
        path = state_path(*self.partition)
        write: Create | SetData = (
            Create(path, self.after.to_json()) if self.before is None
            else SetData(path, self.after.to_json(), self.before.zk_version)
        )
        if controller_epoch_zk_version is None:
            return Multi((write,))
        return Multi((Check(CONTROLLER_EPOCH_PATH, controller_epoch_zk_version), write))


@dataclass(frozen=True, slots=True)
class ControllerPlan:
    """The writes to make, in order, and the partitions left without a leader (offline)."""

    changes: tuple[StateChange, ...] = ()
    offline: tuple[TopicPartition, ...] = ()
    still_led: tuple[TopicPartition, ...] = ()
    """For controlled shutdown: partitions the stopping broker still leads afterwards."""

    def final_states(self) -> dict[TopicPartition, PartitionState]:
        return {ch.partition: ch.after for ch in self.changes}


def _elect(
    view: ClusterView, tp: TopicPartition, strategy: Strategy, epoch: int, reason: str,
    assigned: tuple[int, ...] | None = None,
) -> StateChange | None:
    before = view.states[tp]
    res = elect(strategy, assigned or view.assignments[tp], before.isr, view.live,
                view.shutting_down, view.unclean_for(tp[0]))
    if res.leader is None:
        return None
    return StateChange(tp, reason, before, before.with_leader(res.leader, res.isr, epoch), strategy, res.unclean)


def elect_offline_partitions(view: ClusterView, controller_epoch: int) -> ControllerPlan:
    """Kafka's `triggerOnlinePartitionStateChange`: give a leader to every New or Offline partition.

    New (no state): leader = first live AR replica, ISR = live AR replicas (leader_epoch 0).
    Offline (leader -1 or not live): the offline strategy (unclean per topic).
    """
    changes: list[StateChange] = []
    offline: list[TopicPartition] = []
    for tp in sorted(view.assignments):
        ar = view.assignments[tp]
        state = view.states.get(tp)
        if state is None:
            first = elect("new", ar, (), view.live)
            if first.leader is not None:
                changes.append(StateChange(tp, "new partition", None,
                                           PartitionState.initial(first.leader, list(first.isr), controller_epoch)))
            else:
                offline.append(tp)
        elif state.leader == NO_LEADER or state.leader not in view.live:
            change = _elect(view, tp, "offline", controller_epoch, "offline partition")
            if change is None:
                offline.append(tp)
            else:
                changes.append(change)
    return ControllerPlan(tuple(changes), tuple(offline))


def on_controller_failover(view: ClusterView, controller_epoch: int) -> ControllerPlan:
    """A new controller's first decisions in Kafka 3.9's order (KafkaController.onControllerFailover):
    ReplicaStateMachine.startup moves every replica on a broker not in `view.live` to OfflineReplica,
    removing it from the ISR of every partition holding it, led or followed (doRemoveReplicasFromIsr,
    as `PartitionState.without_replica`); then PartitionStateMachine.startup elects the New and Offline
    partitions. A partition a lost broker led is written twice: leader -1, then the elected leader.
    """
    offline = frozenset(r for ar in view.assignments.values() for r in ar) - view.live
    removed = _remove_replicas(view, offline, controller_epoch, "controller failover, offline replica")
    elected = elect_offline_partitions(view.with_states(removed), controller_epoch)
    return ControllerPlan((*removed, *elected.changes), elected.offline)


on_broker_startup = elect_offline_partitions
"""A returning broker (already in `view.live`) lets offline partitions elect again."""


def _remove_replicas(view: ClusterView, replicas: frozenset[int], epoch: int, reason: str,
                     only: Iterable[TopicPartition] | None = None) -> list[StateChange]:
    changes: list[StateChange] = []
    states = dict(view.states)
    for tp in sorted(only if only is not None else view.assignments):
        for replica in sorted(replicas):
            if replica not in view.assignments[tp] or tp not in states:
                continue
            after = states[tp].without_replica(replica, epoch)
            if after is not None:
                changes.append(StateChange(tp, f"{reason}: remove {replica} from ISR", states[tp], after))
                states[tp] = after
    return changes


def on_broker_failure(view: ClusterView, dead: Iterable[int], controller_epoch: int) -> ControllerPlan:
    """Brokers `dead` vanished (`view.live` must already exclude them), as Kafka's `onReplicasBecomeOffline`.

    First every partition they led gets an offline election; then each dead replica is removed
    from the ISR of the partitions where it remains (leader -1 where it still led; the last ISR
    member is kept). A partition may get two changes; each `before` is the previous `after`.
    """
    gone = frozenset(dead)
    led = [tp for tp, st in view.states.items() if st.leader in gone and tp in view.assignments]
    changes: list[StateChange] = []
    offline: list[TopicPartition] = []
    for tp in sorted(led):
        change = _elect(view, tp, "offline", controller_epoch, "leader broker failed")
        if change is None:
            offline.append(tp)
        else:
            changes.append(change)
    after_elect = view.with_states(changes)
    changes += _remove_replicas(after_elect, gone, controller_epoch, "broker failed")
    return ControllerPlan(tuple(changes), tuple(offline))


def on_controlled_shutdown(view: ClusterView, broker: int, controller_epoch: int) -> ControllerPlan:
    """Broker `broker` asks to stop (Kafka's `doControlledShutdown`); it stays in `view.live`.

    Only partitions with replication factor > 1 and a leader are acted on: those it leads move by
    the controlled-shutdown strategy; those it follows drop it from the ISR. `still_led` lists the
    partitions it leads afterwards (the broker retries until this is empty or it gives up).
    """
    stopping = view.shutting_down | {broker}
    v = replace(view, shutting_down=stopping)
    acted = [tp for tp, ar in sorted(v.assignments.items())
             if broker in ar and len(ar) > 1 and tp in v.states and v.states[tp].leader != NO_LEADER]
    changes: list[StateChange] = []
    for tp in acted:
        if v.states[tp].leader == broker:
            change = _elect(v, tp, "controlled_shutdown", controller_epoch, f"controlled shutdown of {broker}")
            if change is not None:
                changes.append(change)
    followed = [tp for tp in acted if v.states[tp].leader != broker]
    changes += _remove_replicas(v, frozenset({broker}), controller_epoch, "controlled shutdown", followed)
    final = v.with_states(changes)
    still = tuple(tp for tp, ar in sorted(final.assignments.items())
                  if broker in ar and len(ar) > 1 and tp in final.states and final.states[tp].leader == broker)
    return ControllerPlan(tuple(changes), (), still)


def preferred_elections(view: ClusterView, controller_epoch: int,
                        partitions: Iterable[TopicPartition] | None = None) -> ControllerPlan:
    """Preferred-replica election for `partitions` (default: all whose leader is not AR[0]).

    Partitions whose AR[0] is not live and in the ISR keep their leader and are listed in `offline`
    (the field's meaning here: election not possible).
    """
    changes: list[StateChange] = []
    failed: list[TopicPartition] = []
    targets = sorted(partitions) if partitions is not None else sorted(view.assignments)
    for tp in targets:
        state = view.states.get(tp)
        ar = view.assignments[tp]
        if state is None or not ar or state.leader == ar[0]:
            continue
        change = _elect(view, tp, "preferred", controller_epoch, "preferred replica election")
        if change is None:
            failed.append(tp)
        else:
            changes.append(change)
    return ControllerPlan(tuple(changes), tuple(failed))


def auto_rebalance_targets(view: ClusterView, imbalance_percentage: int = 10) -> tuple[TopicPartition, ...]:
    """Partitions the auto leader rebalance task would move back to AR[0].

    Per preferred broker B (= AR[0]): ratio = partitions preferring B not led by B / partitions
    preferring B. If ratio > `leader.imbalance.per.broker.percentage` / 100 and B is live, the
    partitions preferring B whose leader is not B and where B is in the ISR are returned.
    """
    by_pref: dict[int, list[TopicPartition]] = {}
    for tp, ar in view.assignments.items():
        if ar and tp in view.states:
            by_pref.setdefault(ar[0], []).append(tp)
    out: list[TopicPartition] = []
    for broker, tps in sorted(by_pref.items()):
        not_led = [tp for tp in tps if view.states[tp].leader != broker]
        if broker in view.live and len(not_led) / len(tps) > imbalance_percentage / 100:
            out += [tp for tp in not_led if broker in view.states[tp].isr and broker not in view.shutting_down]
    return tuple(sorted(out))


def reassignment_election(view: ClusterView, tp: TopicPartition, new_assignment: Iterable[int],
                          controller_epoch: int) -> StateChange | None:
    """The leader change at the end of a reassignment, if the current leader is not in the new AR
    (or is not live); None when no change is needed or no new-AR replica is live and in the ISR."""
    new_ar = tuple(new_assignment)
    state = view.states[tp]
    if state.leader in new_ar and state.leader in view.live:
        return None
    return _elect(view, tp, "reassign", controller_epoch, "partition reassignment", new_ar)
