"""The verdict of `group.commit_monotonic` (`checks.group.checks`), from facts either path gathers.

The Spark check (`checks.group.checks.CommitMonotonic`, a window over the commits) and the in-process evaluator
(`spark_analysis.inprocess.evaluator`, from its parse) gather the same facts (`CommitRegressions`: per group, partition
and
generation, each commit with an offset below the one before it) their own way, weighed by `permits.truncation_permit`;
the status, summary, evidence and metrics are decided here only. A regression is the consumer's own doing, except
on a partition that a permitted unclean election truncated (docs/kafka-behaviour.md G8): its log may end below the
consumer's position, which `auto.offset.reset` then moves back ("if the current offset does not exist any more on
the server"), and the consumer commits where it now reads. Seen under explore on Apache Kafka 3.9.2
(`tests/data/explore/weak-isr.yaml`, seed 2: billing orders/1 committed 929, then 271 in the same generation, after
an unclean election of broker 1 cut the log back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.checks.shared.permits import Weighed, judge_weighed
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.result import CheckResult, failed, passed

COMMIT_MONOTONIC = "group.commit_monotonic"
SAMPLE = 10
COMMIT_FIELDS = ("seq", "t", "src", "group", "member", "generation", "topic", "partition", "offset")

Row = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RegressedCommit:
    """A commit whose offset is below the previous commit's (by seq) of its group, partition and generation."""

    commit: Row
    """Its COMMIT_FIELDS (nulls may be left out)."""
    prev_seq: int
    prev_member: str | None
    prev_offset: int


@dataclass(frozen=True, slots=True)
class CommitRegressions:
    commits: int
    """Commit events in the history."""
    regressions: int = 0
    sample: Sequence[RegressedCommit] = ()
    """The first SAMPLE regressions by seq."""


@dataclass(frozen=True, slots=True)
class CommitOrder:
    """What either path gathers: the commits, and their regressions weighed against the configuration (None: no
    regression)."""

    commits: int
    found: Weighed[CommitRegressions] | None = None


def judge_commit_monotonic(facts: CommitOrder, faults: FaultIndex) -> CheckResult:
    if facts.found is None:
        return passed(COMMIT_MONOTONIC, f"committed offsets never went back within a generation ({facts.commits} "
                                         "commits)", {"commits": facts.commits, "regressions": 0})
    return judge_weighed(facts.found, lambda found: _regressions(found, faults),
                         ("commit moved back", "commits moved back"))


def _regressions(facts: CommitRegressions, faults: FaultIndex) -> CheckResult:
    metrics = {"commits": facts.commits, "regressions": facts.regressions}
    ev: list[dict[str, Any]] = []
    for r in facts.sample:
        d = r.commit
        ev.append({"type": "commit", "seq": r.prev_seq, "group": d.get("group"), "member": r.prev_member,
                   "generation": d.get("generation"), "topic": d.get("topic"), "partition": d.get("partition"),
                   "offset": r.prev_offset})
        ev.append({"type": "commit", **{k: d[k] for k in COMMIT_FIELDS if d.get(k) is not None},
                   "problem": f"offset went back {r.prev_offset} -> {d.get('offset')}"})
    first = facts.sample[0]
    d = first.commit
    fault = faults.active_at(float(d.get("t") or 0.0))
    summary = (f"{plural(facts.regressions, 'commit')} moved back within a generation, e.g. {d.get('group')} "
               f"{tp_label(d.get('topic'), d.get('partition'))} gen {d.get('generation')}: {first.prev_offset} -> "
               f"{d.get('offset')}" + (f" during {fault.label}" if fault else ""))
    return failed(COMMIT_MONOTONIC, summary, ev, metrics, fault.label if fault else None)
