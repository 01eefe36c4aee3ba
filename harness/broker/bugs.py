"""Bug flags of the reference broker (`reference.bugs=` in server.properties, comma-separated).

Each flag makes the broker break exactly one guarantee on purpose, so that every verifier can be
shown to catch the bug it exists for. A broker with any flag logs a loud warning at start-up.

- ``elect_outside_isr``: the controller's offline and controlled-shutdown elections pick the
  first live replica in AR order that is NOT in the ISR (if there is none: the last live AR
  replica other than the one the model prescribes, if any), and write the ISR without adding
  that leader. Breaks `partition.leader_in_isr` and `partition.election_conforms`.
- ``skip_epoch_bump``: a controller winning the `/controller` race keeps the current
  `/controller_epoch` (one Multi of create `/controller` + Check of the epoch version instead of a
  SetData to epoch + 1); the first election, which creates the znode, still writes epoch 1.
  Breaks `controller.epoch_monotonic` (and `controller.unique`: two controllers in one epoch).
- ``zombie_controller``: brokers accept LeaderAndIsr / UpdateMetadata / StopReplica carrying an
  older controller epoch than one already seen (no STALE_CONTROLLER_EPOCH), and adopt the sender
  as controller, so a paused-then-resumed old controller is obeyed. A resumed controller sends at once
  only with `reference.controller.resend.ms` > 0; what it sends is metadata (UpdateMetadata), so the
  breakage is visible only in the controller id and partition leaders brokers report.
- ``ack_before_replication``: acks=all produce requests are answered right after the leader's
  append, without waiting for the high watermark to pass the batch (min.insync.replicas is still
  checked before the append). Acknowledged writes can be lost when the leader dies.
- ``ignore_idempotence``: the leader skips idempotent-producer duplicate and sequence checks and
  appends every batch, so a retried batch is written twice.
- ``double_assignment``: the group coordinator hands every member of a group the assignment the
  group leader sent for ITSELF in SyncGroup (when that is non-empty), so two members own the same
  partitions in one generation.
- ``generation_reuse``: the group coordinator reports the group's first generation id again at
  every rebalance (JoinGroup responses and the stored group metadata; requests carrying it are
  mapped back to the real generation), so the generation never increases.
- ``keep_dead_in_isr``: when a broker's registration vanishes, the controller elects new leaders for
  the partitions it led (as Kafka's onBrokerFailure) but leaves it in the ISR of the partitions it only
  followed (no write for those; Kafka's ReplicaStateMachine moves it to OfflineReplica and
  removeReplicasFromIsr writes the ISR without it); a new controller's failover likewise skips removing
  unregistered brokers from the ISRs of partitions with a live leader. Only the leaders' own shrink
  (replica.lag.time.max.ms) removes it later. Breaks `partition.offline_replica_leaves_isr`.
- ``unclean_election``: the controller's offline election, when no ISR member is live, elects the
  first live replica in AR order (ISR = [that replica]) even though unclean.leader.election.enable is
  false; Kafka's OfflinePartitionLeaderElectionStrategy leaves the partition leaderless (leader -1, the
  last ISR member kept). Breaks `partition.unclean_only_when_enabled` and `partition.election_conforms`.
- ``shutdown_without_moving_leaders``: a broker stopped gracefully (SIGTERM) skips its controlled
  shutdown (no ControlledShutdown request) and deregisters at once, so its partitions get offline
  elections after its registration vanishes instead of controlled-shutdown elections before.
  Breaks `partition.controlled_shutdown_moves_leaders`.
- ``reassign_ignores_isr``: when a reassignment starts, the controller makes the first live replica of
  the NEW replica list leader at once, in the ISR or not (the ISR is left as it is); Kafka moves the
  leader only once every new replica is in the ISR, and only if the leader is leaving, to the first
  live ISR member of the new list. A replica just added, still empty, leads. Breaks
  `partition.election_conforms` (strategy reassign) and `partition.leader_in_isr`.
- ``preferred_outside_isr``: a preferred replica election (ElectLeaders, the znode, auto rebalance)
  makes AR[0] leader whenever it is live, in the ISR or not; Kafka's
  PreferredReplicaPartitionLeaderElectionStrategy needs it in the ISR and answers
  PREFERRED_LEADER_NOT_AVAILABLE otherwise, keeping the leader. Breaks `partition.election_conforms`
  (strategy preferred) and `partition.leader_in_isr`.
- ``reuse_producer_ids``: InitProducerId answers producer id 0, epoch 0, every time (Kafka claims blocks of
  ids in ZooKeeper, so no id is handed out twice). A producer's second session then meets its first session's
  sequence numbers at the leaders: OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka treats as fatal, and the
  producer sends no more. Breaks `delivery.fatal_error`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace

from harness.model.controller import ClusterView, ControllerPlan, StateChange
from harness.model.election import elect_leader

ELECT_OUTSIDE_ISR = "elect_outside_isr"
SKIP_EPOCH_BUMP = "skip_epoch_bump"
ZOMBIE_CONTROLLER = "zombie_controller"
ACK_BEFORE_REPLICATION = "ack_before_replication"
IGNORE_IDEMPOTENCE = "ignore_idempotence"
DOUBLE_ASSIGNMENT = "double_assignment"
GENERATION_REUSE = "generation_reuse"
KEEP_DEAD_IN_ISR = "keep_dead_in_isr"
UNCLEAN_ELECTION = "unclean_election"
SHUTDOWN_WITHOUT_MOVING_LEADERS = "shutdown_without_moving_leaders"
REASSIGN_IGNORES_ISR = "reassign_ignores_isr"
PREFERRED_OUTSIDE_ISR = "preferred_outside_isr"
REUSE_PRODUCER_IDS = "reuse_producer_ids"

KNOWN_BUGS: frozenset[str] = frozenset({
    ELECT_OUTSIDE_ISR, SKIP_EPOCH_BUMP, ZOMBIE_CONTROLLER, ACK_BEFORE_REPLICATION, IGNORE_IDEMPOTENCE,
    DOUBLE_ASSIGNMENT, GENERATION_REUSE, KEEP_DEAD_IN_ISR, UNCLEAN_ELECTION, SHUTDOWN_WITHOUT_MOVING_LEADERS,
    REASSIGN_IGNORES_ISR, PREFERRED_OUTSIDE_ISR, REUSE_PRODUCER_IDS,
})


def unknown_bugs(flags: frozenset[str]) -> list[str]:
    """Flags this broker does not know (reported at start-up; they have no effect)."""
    return sorted(flags - KNOWN_BUGS)


def elect_outside_isr(changes: Iterable[StateChange], assignments: Mapping[tuple[str, int], tuple[int, ...]],
                      live: Collection[int], controller_epoch: int) -> list[StateChange]:
    """The `elect_outside_isr` bug applied to the model's decisions (`live` excludes brokers shutting down).

    Offline and controlled-shutdown elections pick the first live AR replica outside the ISR, else
    the last live AR replica other than the prescribed one; the ISR written is the old ISR's live
    members without the new leader. Other changes pass unchanged.
    """
    out = list(changes)
    for i, ch in enumerate(out):
        if ch.strategy not in ("offline", "controlled_shutdown") or ch.before is None:
            continue
        ar = assignments[ch.partition]
        prescribed = elect_leader("offline", ar, ch.before.isr, live)
        outside = [r for r in ar if r in live and r not in ch.before.isr]
        others = [r for r in ar if r in live and r != prescribed]
        pick = outside[0] if outside else (others[-1] if others else None)
        if pick is not None:
            isr = tuple(r for r in ch.before.isr if r in live and r != pick)
            out[i] = StateChange(ch.partition, ch.reason + " [bug elect_outside_isr]", ch.before,
                                 ch.before.with_leader(pick, isr, controller_epoch), ch.strategy, True)
    return out


def keep_dead_in_isr(plan: ControllerPlan, view: ClusterView) -> ControllerPlan:
    """The `keep_dead_in_isr` bug applied to a plan the model made from `view` (`view.live` without the
    dead brokers): `on_broker_failure`, or `on_controller_failover`'s removal of offline replicas.

    Every change of a partition whose leader is not live (the dead broker led it, or it had no leader)
    and every election or creation stays; the ISR removals of partitions whose leader is live (the dead
    broker only followed them) are dropped, so the dead broker stays in their ISR. Nothing is chained on
    a dropped change: the model elects only partitions without a live leader.
    """
    leaderless = {tp for tp, st in view.states.items() if st.leader not in view.live}
    kept = tuple(ch for ch in plan.changes
                 if ch.strategy is not None or ch.before is None or ch.partition in leaderless)
    return replace(plan, changes=kept)


def unclean_election(view: ClusterView) -> ClusterView:
    """The `unclean_election` bug: the view the controller decides from says unclean leader election is
    enabled for every topic (only the ``offline`` strategy reads it: with no live ISR member it takes the
    first live AR replica and writes the ISR [leader])."""
    return replace(view, unclean=True, unclean_topics=dict.fromkeys(view.unclean_topics, True))


def mark_unclean(changes: Iterable[StateChange], honest: ClusterView) -> list[StateChange]:
    """Tag the unclean elections the honest view would not have allowed (for the broker's log)."""
    return [replace(ch, reason=ch.reason + f" [bug {UNCLEAN_ELECTION}]")
            if ch.unclean and not honest.unclean_for(ch.partition[0]) else ch for ch in changes]


def reassign_ignores_isr(view: ClusterView, tp: tuple[str, int], target: tuple[int, ...],
                         controller_epoch: int) -> ControllerPlan:
    """The `reassign_ignores_isr` bug at the start of a reassignment: the first live replica of `target`
    leads at once, whatever the ISR says (the ISR is written unchanged); no change when it leads already."""
    st = view.states.get(tp)
    pick = next((r for r in target if r in view.live), None)
    if st is None or pick is None or st.leader == pick:
        return ControllerPlan()
    return ControllerPlan((StateChange(tp, f"partition reassignment [bug {REASSIGN_IGNORES_ISR}]", st,
                                       st.with_leader(pick, st.isr, controller_epoch), "reassign"),))


def preferred_outside_isr(view: ClusterView, controller_epoch: int, plan: ControllerPlan) -> ControllerPlan:
    """The `preferred_outside_isr` bug applied to a preferred-election plan: every partition the honest
    election left alone (`plan.offline`) whose AR[0] is live gets AR[0] as leader, the ISR unchanged."""
    extra: list[StateChange] = []
    for tp in plan.offline:
        st, ar = view.states.get(tp), view.assignments.get(tp)
        if st is None or not ar or ar[0] not in view.live or st.leader == ar[0]:
            continue
        extra.append(StateChange(tp, f"preferred replica election [bug {PREFERRED_OUTSIDE_ISR}]", st,
                                 st.with_leader(ar[0], st.isr, controller_epoch), "preferred"))
    done = {ch.partition for ch in extra}
    return replace(plan, changes=(*plan.changes, *extra), offline=tuple(tp for tp in plan.offline if tp not in done))
