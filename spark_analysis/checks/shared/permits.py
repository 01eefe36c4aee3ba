"""Anomalies the run's configuration permits (docs/kafka-behaviour.md §9, the "Promised by" column): a delivery or
consumer anomaly is a violation only when the settings in force asked Kafka for the guarantee it breaks
(`harness.model.promises`). Otherwise it is still reported, as permitted, naming the setting, and it does not fail
the run: users of weak configurations see exactly what they trade.

Owns the rule of permits, for every path that judges these checks (Spark and the in-process evaluator):
- what permits each kind of anomaly (`Reason`: `once_permit`, `order_permit`, `ack_permit`, `truncation_permit`),
  from the settings of the writer of its value (`harness.model.promises`) and its partition's unclean election;
- `unclean_partitions` (per partition: the unclean election its topic's `unclean.leader.election.enable`
  allowed, which truncates what only the old ISR held), `group_truncations` (per group: the permitted unclean
  elections of its coordinator's `__consumer_offsets` partition, which may take back its stored generations),
  `power_loss_truncations` (a power loss of every replica,
  which cuts the log back to what was fsynced), and `permit_of`, one anomaly's permit;
- `Weighed`, a check's anomalies counted by what permits them, with the facts its judge needs about all of them
  and about the violations alone; `judge_weighed` and `settle` turn them into one result: pass with `permitted`
  when every anomaly is permitted, else a failure on the violations with the permitted ones counted beside them.

Counting anomalies by permit in Spark (`frames.weigh`) groups rows by writer and partition and calls the same
`Reason` once per group.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from harness.model.coordinator import OFFSETS_TOPIC, coordinator_partition
from harness.model.promises import Writer, ack_withdrawn, once_withdrawn, order_withdrawn, unclean_permits
from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.facts.context import once_per_verify
from spark_analysis.facts.partitions import UncleanElection, leader_elections, partition_timeline
from spark_analysis.result import CheckResult, passed

if TYPE_CHECKING:
    from spark_analysis.facts.context import CheckContext, Row

Partition = tuple[str, int]
Anomalies = tuple[tuple[str | None, int], ...]
"""(the setting that permits them or None for violations, how many), as many entries as the path likes."""
Facts = TypeVar("Facts")

Reason = Callable[[Writer | None, str | None], str | None]
"""What permits an anomaly of a value written by a writer (None: not known) at a partition's setting (None: no
unclean election permitted there): the setting, or None for a violation."""


def once_permit(writer: Writer | None, unclean: str | None) -> str | None:
    """R5 holds for idempotent writers; a truncation by a permitted unclean election also stores a retry again."""
    return (once_withdrawn(writer) if writer is not None else None) or unclean


def order_permit(writer: Writer | None, unclean: str | None) -> str | None:
    """R7 holds for idempotent writers and those with one request in flight; a permitted truncation reorders too."""
    return (order_withdrawn(writer) if writer is not None else None) or unclean


def ack_permit(writer: Writer | None, unclean: str | None) -> str | None:
    """R3/R6: only acks=all writes survive every clean election; a permitted unclean one truncates any."""
    return unclean or (ack_withdrawn(writer) if writer is not None else None)


def truncation_permit(_writer: Writer | None, unclean: str | None) -> str | None:
    """Consumers read only below the high watermark, which no clean election takes back: their reads go back or
    jump only when a permitted unclean election truncated the log under them."""
    return unclean


@once_per_verify
def _permitted_unclean(ctx: CheckContext) -> list[tuple[UncleanElection, str]]:
    """Each unclean election its topic's `unclean.leader.election.enable` permitted, in the authoritative states'
    order, with the setting's words; computed once per verify."""
    found: list[tuple[UncleanElection, str]] = []
    if ctx.count("partition.state"):
        for u in leader_elections(ctx)[1]:
            reason = unclean_permits(ctx.run.unclean_for(u.topic), u.leader, u.t, tp_label(u.topic, u.partition))
            if reason is not None:
                found.append((u, reason))
    return found


@once_per_verify
def unclean_partitions(ctx: CheckContext) -> Mapping[Partition, str]:
    """Partition -> the setting that permitted its first unclean election (which truncates what only the old ISR
    held), computed once per verify."""
    unclean: dict[Partition, str] = {}
    for u, reason in _permitted_unclean(ctx):
        unclean.setdefault((u.topic, u.partition), reason)
    return unclean


@dataclass(frozen=True, slots=True)
class GroupTruncation:
    """A permitted unclean election of a group's `__consumer_offsets` partition at `t`, the setting, and `until`:
    when a replica of the ISR it passed over was first seen back in that partition's ISR (`math.inf`: not seen),
    by which time it had truncated its log to the new leader's. Until it learns of the election, the old leader, cut
    off from the controller, goes on leading in its own view, and what a coordinator on it stores meanwhile is taken
    back too (3.9.2, weak-isr explore seed 4: broker 3 elected at 21.06 s from outside the ISR [2]; broker 2, cut
    off, ran billing's generation 2 at 21.51 s; back in the ISR at 30.12 s; coordinator 3 numbered generation 2 again
    at 31.37 s)."""

    t: float
    reason: str
    until: float = math.inf


def group_truncations(ctx: CheckContext, group: str) -> tuple[GroupTruncation, ...]:
    """The permitted unclean elections of `group`'s coordinator partition, in time order. A coordinator stores each
    generation in that partition and a new one loads the last stored (`GroupMetadataManager.loadGroupsAndOffsets`);
    an unclean election that truncated the record of a generation makes the next coordinator number that generation
    again (`GroupMetadata.initNextGeneration`: the loaded generation + 1): 3.9.2 under explore, weak-isr seed 2,
    billing's generation 2 at coordinator 1, broker 3 elected from outside the ISR [2, 1], generation 2 again at
    coordinator 3 (docs/kafka-behaviour.md G2, G3). Computed once per group and verify: the group checks ask for
    every pair of a generation's assignments."""
    cache: dict[str, tuple[GroupTruncation, ...]] = ctx.shared.setdefault("group_truncations", {})
    if group not in cache:
        cache[group] = _group_truncations(ctx, group)
    return cache[group]


def _group_truncations(ctx: CheckContext, group: str) -> tuple[GroupTruncation, ...]:
    offsets = [(u, reason) for u, reason in _permitted_unclean(ctx) if u.topic == OFFSETS_TOPIC]
    if not offsets:
        return ()
    n = ctx.run.offsets_topic_partitions or 1 + max(int(e["partition"]) for e in ctx.rows("partition.state")
                                                    if e.get("topic") == OFFSETS_TOPIC)
    mine = coordinator_partition(group, n)
    states = partition_timeline(ctx).states.get((OFFSETS_TOPIC, mine), [])
    return tuple(sorted((GroupTruncation(u.t, reason, _rejoined(u, states)) for u, reason in offsets
                         if u.partition == mine), key=lambda g: g.t))


def _rejoined(u: UncleanElection, states: list[Row]) -> float:
    """When a replica of the ISR that `u` passed over was first back in the partition's ISR after it (`math.inf`:
    never seen): a follower joins the ISR only once it has caught up with the leader's log, its own cut back to it."""
    passed_over = {int(b) for b in u.prev.get("isr") or ()}
    return next((float(st.get("t") or 0.0) for st in states
                 if float(st.get("t") or 0.0) > u.t and passed_over & {int(b) for b in st.get("isr") or ()}),
                math.inf)


def truncated_between(cuts: tuple[GroupTruncation, ...], t0: float, t1: float) -> GroupTruncation | None:
    """The first of `cuts` that may have taken back a record stored at `t0` by `t1`, when it was read again: an
    election in (t0, t1] (the record was stored before it), or one before `t0` whose passed-over ISR had not
    rejoined by `t0` (a deposed leader, not yet knowing, may have stored it). The second also covers a record the
    new leader stored in that window, which no truncation takes back: the window is the price of not knowing which
    broker a coordinator ran on (docs/kafka-behaviour.md G2)."""
    return next((c for c in cuts if c.t <= t1 and t0 < c.until and t0 < t1), None)


@once_per_verify
def power_loss_truncations(ctx: CheckContext) -> Mapping[Partition, str]:
    """Partition -> the power loss that may have cut its log back under its readers: one during which every replica
    of it (as the last `partition.state` before it named them) was dark after losing what it had not fsynced
    (docs/kafka-behaviour.md, D3). A group's committed offset may then lie past the log's new end, as after an
    unclean election; whether the acknowledged writes it took were promised is `delivery.lost_write`'s to judge."""
    cut: dict[Partition, str] = {}
    windows = [w for w in ctx.faults.windows if w.effect.loses_unsynced]
    states = sorted(ctx.rows("partition.state"), key=lambda r: float(r.get("t") or 0.0)) if windows else []
    for w in windows:
        dark = {b for other in windows if other.contains(w.start) for b in other.effect.stopped(("broker",))}
        replicas: dict[Partition, set[int]] = {}
        for st in states:
            if float(st.get("t") or 0.0) <= w.start and st.get("replicas"):
                replicas[(str(st["topic"]), int(st["partition"]))] = {int(b) for b in st["replicas"]}
        for tp, held in replicas.items():
            if held and held <= dark:
                cut.setdefault(tp, f"a power loss of every replica ({w.label}), which undid what none had "
                                   f"fsynced")
    return cut


def permit_of(ctx: CheckContext, reason: Reason, value: int | None, partition: Partition | None) -> str | None:
    """What permits one anomaly (`reason`): the writer of `value` (each writer writes from its own `value_base`
    on; None: no writer), and the unclean election of `partition` (None: not known)."""
    writer = ctx.run.writer_of(value) if value is not None else None
    unclean = unclean_partitions(ctx).get(partition) if partition is not None else None
    return reason(writer, unclean)


def tally(permits: Iterable[str | None]) -> Anomalies:
    """Anomalies, one permit (or None) each, counted by permit."""
    return tuple(Counter(permits).items())


def mixed(anomalies: Anomalies) -> bool:
    """Whether `settle` judges the violations alone: some anomalies are permitted and some are not."""
    return any(n for r, n in anomalies if r is None) and any(n for r, n in anomalies if r is not None)


@dataclass(frozen=True, slots=True)
class Weighed(Generic[Facts]):
    """A check's anomalies weighed against the configuration: the facts its judge needs about all of them
    (`found`), counted by what permits them (`anomalies`), and the same facts about the violations alone
    (`violations`: gathered only when they differ, i.e. when the anomalies are `mixed`)."""

    found: Facts
    anomalies: Anomalies = ()
    violations: Facts | None = None


def judge_weighed(weighed: Weighed[Facts], judge: Callable[[Facts], CheckResult],
                  noun: tuple[str, str]) -> CheckResult:
    """`settle` the failure `judge` makes of the anomalies found, judging the violations alone when needed."""
    def on_violations(_n: int) -> CheckResult:
        assert weighed.violations is not None, "mixed anomalies come with the facts of their violations"
        return judge(weighed.violations)

    return settle(judge(weighed.found), weighed.anomalies, noun, on_violations)


def settle(result: CheckResult, anomalies: Iterable[tuple[str | None, int]], noun: tuple[str, str],
           violations: Callable[[int], CheckResult]) -> CheckResult:
    """The check's result once each anomaly is weighed against the configuration: `anomalies` are (the setting
    that permits it or None, how many); `noun` names one and many of them; `result` is the failure the check
    found, `violations(n)` builds the
    failure on the `n` unpermitted ones alone (called only when there are some). Every permitted anomaly is named
    in `permitted` and counted in the metrics (`permitted`, `permitted_by`)."""
    by: Counter[str | None] = Counter()
    for reason, n in anomalies:
        by[reason] += n
    allowed = {r: n for r, n in by.items() if r is not None}
    if not allowed:
        return result
    count = sum(allowed.values())
    reasons = tuple(sorted(allowed, key=lambda r: (-allowed[r], r)))
    extra: dict[str, Any] = {"permitted": count, "permitted_by": dict(allowed)}
    shown = "; ".join(reasons[:3]) + (f"; +{len(reasons) - 3} more" if len(reasons) > 3 else "")
    if not by.get(None):
        text = f"{plural(count, *noun)}: permitted by {shown}"
        return replace(passed(result.check_id, text, {**result.metrics, **extra, "violations": 0}),
                       evidence=tuple({**e, "permitted": True} for e in result.evidence), permitted=reasons,
                       fault=result.fault)
    failure = violations(by[None])
    return replace(failure, summary=f"{failure.summary} ({count} more permitted by {shown})",
                   metrics={**failure.metrics, **extra}, permitted=reasons)
