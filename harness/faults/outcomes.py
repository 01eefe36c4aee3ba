"""What an operation gave (`OperationOutcome`, each partition's `PartitionOutcome`): the operators' answer to the
operation runner (`harness.faults.operations`), which records it as `op.end`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.history.events import PartitionResult

Outcome = Literal["done", "timeout", "error"]


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    """What one partition answered: its error name (None: accepted / elected), and for a reassignment the
    replica list Metadata showed last."""

    topic: str
    partition: int
    error: str | None = None
    replicas: tuple[int, ...] | None = None

    def as_result(self) -> PartitionResult:
        """This answer as `op.end` records it."""
        return PartitionResult(self.topic, self.partition, self.error, self.replicas)


@dataclass(frozen=True, slots=True)
class OperationOutcome:
    outcome: Outcome
    via: str
    """How it was carried out: `AlterPartitionReassignments`, `ElectLeaders`, `CreatePartitions`."""
    detail: str = ""
    """For a timeout or an error: what was awaited or what failed, and what was seen last."""
    partitions: tuple[PartitionOutcome, ...] = ()
