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
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from harness.model.controller import StateChange
from harness.model.election import elect_leader

ELECT_OUTSIDE_ISR = "elect_outside_isr"
SKIP_EPOCH_BUMP = "skip_epoch_bump"
ZOMBIE_CONTROLLER = "zombie_controller"
ACK_BEFORE_REPLICATION = "ack_before_replication"
IGNORE_IDEMPOTENCE = "ignore_idempotence"
DOUBLE_ASSIGNMENT = "double_assignment"
GENERATION_REUSE = "generation_reuse"

KNOWN_BUGS: frozenset[str] = frozenset({
    ELECT_OUTSIDE_ISR, SKIP_EPOCH_BUMP, ZOMBIE_CONTROLLER, ACK_BEFORE_REPLICATION, IGNORE_IDEMPOTENCE,
    DOUBLE_ASSIGNMENT, GENERATION_REUSE,
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
