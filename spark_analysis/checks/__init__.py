"""The check registry: every check of the verdict, in report order, with its fixed id.

One module per family (controller, partition, delivery, consumer, group, slo); `ALL_CHECKS`
lists one instance of each `Check`. Ids are fixed: verdict.json, report.html and junit.xml use them.
"""

from __future__ import annotations

from spark_analysis.checks.consumer import NonmonotonicPoll, PollSkip
from spark_analysis.checks.controller import ControllerEpochMonotonic, ControllerUnique
from spark_analysis.checks.delivery import Duplicate, InconsistentOffsets, KeyOrder, LostWrite
from spark_analysis.checks.group import (
    AssignmentConforms,
    CommitMonotonic,
    CoordinatorConforms,
    ExclusiveOwnership,
    GenerationMonotonic,
)
from spark_analysis.checks.partition import ElectionConforms, LeaderEpochMonotonic, LeaderInIsr
from spark_analysis.checks.slo import ControllerFailover, PartitionUnavailable, Rebalance
from spark_analysis.result import Check

ALL_CHECKS: tuple[Check, ...] = (
    ControllerUnique(),
    ControllerEpochMonotonic(),
    LeaderInIsr(),
    ElectionConforms(),
    LeaderEpochMonotonic(),
    LostWrite(),
    Duplicate(),
    InconsistentOffsets(),
    KeyOrder(),
    NonmonotonicPoll(),
    PollSkip(),
    GenerationMonotonic(),
    ExclusiveOwnership(),
    AssignmentConforms(),
    CoordinatorConforms(),
    CommitMonotonic(),
    ControllerFailover(),
    PartitionUnavailable(),
    Rebalance(),
)

CHECK_IDS: tuple[str, ...] = tuple(c.id for c in ALL_CHECKS)

BY_ID: dict[str, Check] = {c.id: c for c in ALL_CHECKS}


def select(entries: tuple[str, ...] | list[str]) -> list[Check]:
    """Checks named by `entries` ("all", ids, families or last parts), in registry order."""
    from spark_analysis.runinfo import RunInfo

    info = RunInfo(checks=tuple(entries))
    return [c for c in ALL_CHECKS if info.is_selected(c.id)]
