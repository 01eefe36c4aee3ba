"""The check registry: every check of the verdict, in report order, with its fixed id.

One package per family (`checks/<family>/`: controller, quorum, partition, delivery, consumer, group, txn,
operation, slo), holding that family's checks (`checks.py`, and more modules where a family outgrows one:
`partition/isr.py`, `slo/stall.py`, `txn/eos.py`), judges and frames; what several families read is
`checks/shared/`, below every family, and no family imports another. `ALL_CHECKS`
lists one instance of each `Check`. Ids are fixed: verdict.json, report.html and junit.xml use them.
The quorum family applies to KRaft runs only (`spark_analysis.ingest.runinfo.MODE_FAMILIES`): a ZooKeeper
run does not select it, and the verdict lists it under `not_selected`.
"""

from __future__ import annotations

from spark_analysis.checks.consumer.checks import NonmonotonicPoll, PollSkip
from spark_analysis.checks.controller.checks import ControllerEpochMonotonic, ControllerUnique
from spark_analysis.checks.delivery.checks import Duplicate, InconsistentOffsets, KeyOrder, LostWrite
from spark_analysis.checks.delivery.fatal import FatalError
from spark_analysis.checks.group.checks import (
    AssignmentConforms,
    CommitMonotonic,
    CoordinatorConforms,
    ExclusiveOwnership,
    GenerationMonotonic,
)
from spark_analysis.checks.group.offsets import OffsetsKept
from spark_analysis.checks.operation.checks import OperationCompletes
from spark_analysis.checks.partition.checks import ElectionConforms, LeaderEpochMonotonic, LeaderInIsr
from spark_analysis.checks.partition.isr import OfflineReplicaLeavesIsr, UncleanOnlyWhenEnabled
from spark_analysis.checks.partition.shutdown import ControlledShutdownMovesLeaders
from spark_analysis.checks.quorum.checks import LeaderResigns, NoSplitBrain
from spark_analysis.checks.slo.checks import ControllerFailover, PartitionUnavailable, Rebalance
from spark_analysis.checks.slo.stall import ReadUnavailable, WriteUnavailable
from spark_analysis.checks.txn.checks import AbortedRead, AtomicVisibility, LostCommit
from spark_analysis.checks.txn.eos import ExactlyOncePipeline, ZombieFenced
from spark_analysis.checks.txn.verification import VerificationRetriable
from spark_analysis.result import Check

ALL_CHECKS: tuple[Check, ...] = (
    ControllerUnique(),
    ControllerEpochMonotonic(),
    NoSplitBrain(),
    LeaderResigns(),
    LeaderInIsr(),
    ElectionConforms(),
    LeaderEpochMonotonic(),
    OfflineReplicaLeavesIsr(),
    UncleanOnlyWhenEnabled(),
    ControlledShutdownMovesLeaders(),
    LostWrite(),
    Duplicate(),
    InconsistentOffsets(),
    KeyOrder(),
    FatalError(),
    NonmonotonicPoll(),
    PollSkip(),
    GenerationMonotonic(),
    ExclusiveOwnership(),
    AssignmentConforms(),
    CoordinatorConforms(),
    CommitMonotonic(),
    OffsetsKept(),
    AbortedRead(),
    AtomicVisibility(),
    LostCommit(),
    ZombieFenced(),
    ExactlyOncePipeline(),
    VerificationRetriable(),
    OperationCompletes(),
    ControllerFailover(),
    PartitionUnavailable(),
    WriteUnavailable(),
    ReadUnavailable(),
    Rebalance(),
)

CHECK_IDS: tuple[str, ...] = tuple(c.id for c in ALL_CHECKS)

BY_ID: dict[str, Check] = {c.id: c for c in ALL_CHECKS}


def select(entries: tuple[str, ...] | list[str], mode: str | None = None) -> list[Check]:
    """Checks named by `entries` ("all", ids, families or last parts), in registry order; with a
    cluster `mode` ("zookeeper", "kraft"), only those that apply to it."""
    from spark_analysis.ingest.runinfo import RunInfo

    info = RunInfo(checks=tuple(entries), mode=mode or "")
    return [c for c in ALL_CHECKS if info.is_named(c.id) and (mode is None or info.applies(c.id))]
