"""Bug flags of the reference broker (`reference.bugs=` in server.properties, comma-separated).

Each flag makes the broker break exactly one guarantee on purpose, so that every verifier can be
shown to catch the bug it exists for. A broker with any flag logs a loud warning at start-up.

- ``elect_outside_isr``: the controller's offline and controlled-shutdown elections pick the
  first live replica in AR order that is NOT in the ISR (if there is none: the last live AR
  replica other than the one the model prescribes, if any), and write the ISR without adding
  that leader. Breaks `partition.leader_in_isr` and `partition.election_conforms`.
- ``skip_epoch_bump``: a controller winning the `/controller` race keeps the current
  `/controller_epoch` (one Multi of create `/controller` + Check of the epoch version instead of a
  SetData to epoch + 1). Breaks `controller.epoch_monotonic`.
- ``zombie_controller``: brokers accept LeaderAndIsr / UpdateMetadata / StopReplica carrying an
  older controller epoch than one already seen (no STALE_CONTROLLER_EPOCH), and adopt the sender
  as controller, so a paused-then-resumed old controller is obeyed.
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
