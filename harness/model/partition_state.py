"""The partition state of ZooKeeper-mode Kafka (KAFKA-BEHAVIOUR.md §2) and the partition state machine.

Owns `PartitionState`, the value stored at `/brokers/topics/<t>/partitions/<p>/state`
(``{"controller_epoch":…,"leader":…,"version":1,"leader_epoch":…,"isr":[…]}``) together with the
znode version it was read at (`zk_version`, the optimistic lock of every write), its JSON codec,
and the pure transitions that produce the next value:

- `with_leader` (a controller election: leader_epoch + 1, controller_epoch = the writer's),
- `with_isr` (a leader's ISR shrink/expand: leader_epoch unchanged),
- `without_replica` (the controller taking a dead/stopping replica out of the ISR, as Kafka's
  `doRemoveReplicasFromIsr`: leader -1 if it led, the last ISR member is kept, leader_epoch + 1).

Each transition returns the value as it will read back after a successful conditional write at
`self.zk_version`, i.e. with `zk_version + 1`. `PartitionPhase` and `check_transition` encode
Kafka's PartitionStateMachine (NonExistent, New, Online, Offline) and its valid previous states.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum

from harness.errors import HarnessError

NO_LEADER = -1
STATE_ZNODE_VERSION = 1
"""The `version` field Kafka writes in the state JSON."""


class PartitionStateError(HarnessError):
    """A partition state value or transition is invalid (bad JSON, illegal phase change)."""


def state_path(topic: str, partition: int) -> str:
    """`/brokers/topics/<topic>/partitions/<partition>/state`."""
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's leader, leader epoch, ISR and the controller epoch that wrote it.

    `zk_version` is the version of the state znode this value was read at (or will have once
    written); it is not part of the JSON. `leader` is -1 (`NO_LEADER`) when the partition has none.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def to_json(self) -> bytes:
        """The znode data, in Kafka's field order."""
        doc = {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": STATE_ZNODE_VERSION,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes | str, zk_version: int = 0, where: str = "<state znode>") -> PartitionState:
        """Parse a state znode's data; `where` (the path) is named in errors."""
        try:
            doc = json.loads(data)
            return cls(
                leader=int(doc["leader"]),
                leader_epoch=int(doc["leader_epoch"]),
                isr=tuple(int(r) for r in doc["isr"]),
                controller_epoch=int(doc["controller_epoch"]),
                zk_version=zk_version,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise PartitionStateError(f"{where}: not a partition state: {exc} (data {data!r})") from exc

    @classmethod
    def initial(cls, leader: int | None, isr: Iterable[int], controller_epoch: int) -> PartitionState:
        """The first state the controller creates for a new partition (leader_epoch 0, zk_version 0)."""
        return cls(NO_LEADER if leader is None else leader, 0, tuple(isr), controller_epoch, 0)

    def with_leader(self, leader: int | None, isr: Iterable[int], controller_epoch: int) -> PartitionState:
        """A controller-written election result: new leader (None: -1) and ISR, leader_epoch + 1."""
        return PartitionState(
            leader=NO_LEADER if leader is None else leader,
            leader_epoch=self.leader_epoch + 1,
            isr=tuple(isr),
            controller_epoch=controller_epoch,
            zk_version=self.zk_version + 1,
        )

    def with_isr(self, isr: Iterable[int], controller_epoch: int | None = None) -> PartitionState:
        """A leader-written ISR change (shrink or expand): leader and leader_epoch unchanged.

        `controller_epoch` is the epoch of the last LeaderAndIsr the leader accepted (default: keep).
        """
        epoch = self.controller_epoch if controller_epoch is None else controller_epoch
        return replace(self, isr=tuple(isr), controller_epoch=epoch, zk_version=self.zk_version + 1)

    def without_replica(self, replica: int, controller_epoch: int) -> PartitionState | None:
        """The controller removing `replica` from the ISR (Kafka's `doRemoveReplicasFromIsr`).

        None when `replica` is not in the ISR (nothing is written). Otherwise the leader becomes -1
        if `replica` led, the ISR loses `replica` unless it is the only member (Kafka keeps the last
        ISR member so a clean election stays possible), and leader_epoch goes up by one.
        """
        if replica not in self.isr:
            return None
        leader = NO_LEADER if replica == self.leader else self.leader
        isr = self.isr if len(self.isr) == 1 else tuple(r for r in self.isr if r != replica)
        return self.with_leader(leader, isr, controller_epoch)


class PartitionPhase(Enum):
    """Kafka's PartitionStateMachine states (the controller's view of a partition)."""

    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


VALID_PREVIOUS: dict[PartitionPhase, frozenset[PartitionPhase]] = {
    PartitionPhase.NEW: frozenset({PartitionPhase.NON_EXISTENT}),
    PartitionPhase.ONLINE: frozenset({PartitionPhase.NEW, PartitionPhase.ONLINE, PartitionPhase.OFFLINE}),
    PartitionPhase.OFFLINE: frozenset({PartitionPhase.NEW, PartitionPhase.ONLINE, PartitionPhase.OFFLINE}),
    PartitionPhase.NON_EXISTENT: frozenset({PartitionPhase.OFFLINE}),
}
"""For each target phase, the phases Kafka accepts a transition from."""


def check_transition(current: PartitionPhase, target: PartitionPhase, where: str = "partition") -> PartitionPhase:
    """Return `target` if Kafka allows `current -> target`, else raise `PartitionStateError`."""
    if current not in VALID_PREVIOUS[target]:
        allowed = ", ".join(sorted(p.value for p in VALID_PREVIOUS[target]))
        raise PartitionStateError(
            f"{where}: illegal partition state change {current.value} -> {target.value}; "
            f"{target.value} may only follow {allowed}"
        )
    return target


def phase_of(state: PartitionState | None, live: Iterable[int]) -> PartitionPhase:
    """The phase a controller derives on failover: no state -> New, live leader -> Online, else Offline."""
    if state is None:
        return PartitionPhase.NEW
    return PartitionPhase.ONLINE if state.leader in frozenset(live) else PartitionPhase.OFFLINE
