"""Anomalies the run's configuration permits (docs/kafka-behaviour.md §9, the "Promised by" column): a delivery or
consumer anomaly is a violation only when the settings in force asked Kafka for the guarantee it breaks
(`harness.model.promises`). Otherwise it is still reported, as permitted, naming the setting, and it does not fail
the run: users of weak configurations see exactly what they trade.

Owns `unclean_partitions` (per partition: the unclean election its topic's `unclean.leader.election.enable`
allowed, which truncates what only the old ISR held), `weigh` (a check's anomalies counted by what permits each:
the settings of the writer of its value, `harness.model.promises`, or its partition's unclean election) and
`settle`, which turns the anomalies, each with the setting that permits it or None, into one result: pass with
`permitted` when every anomaly is permitted, else a failure on the violations with the permitted ones counted
beside them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from harness.model.promises import Writer, unclean_permits
from spark_analysis.checks.common import plural, tp_label
from spark_analysis.checks.frames import topic_hash
from spark_analysis.checks.partition_isr import leader_elections
from spark_analysis.context import CheckContext
from spark_analysis.result import CheckResult, passed

Partition = tuple[str, int]


Reason = Callable[[Writer | None, str | None], str | None]
"""What permits an anomaly of a value written by a writer (None: not known) at a partition's setting (None: no
unclean election permitted there): the setting, or None for a violation."""


def unclean_partitions(ctx: CheckContext) -> Mapping[Partition, str]:
    """Partition -> the setting that permitted its first unclean election (which truncates what only the old ISR
    held), computed once per verify."""
    if "unclean_permits" not in ctx.shared:
        unclean: dict[Partition, str] = {}
        if ctx.count("partition.state"):
            for u in leader_elections(ctx)[1]:
                reason = unclean_permits(ctx.run.unclean_for(u.topic), u.leader, u.t, tp_label(u.topic, u.partition))
                if reason is not None:
                    unclean.setdefault((u.topic, u.partition), reason)
        ctx.shared["unclean_permits"] = unclean
    return ctx.shared["unclean_permits"]


def topic_names(ctx: CheckContext) -> dict[int, str]:
    """`frames.topic_hash()` -> topic name, for the topics the workload wrote or read."""
    if "topic_names" not in ctx.shared:
        rows = ctx.df("ack", "poll").select("topic", topic_hash().alias("h")).distinct().collect()
        ctx.shared["topic_names"] = {int(r["h"]): str(r["topic"]) for r in rows if r["topic"] is not None}
    return ctx.shared["topic_names"]


@dataclass(frozen=True, slots=True)
class Weighing:
    """A check's anomalies grouped by writer and partition, each group with what permits it (None: a violation)."""

    groups: tuple[tuple[int, int | None, int | None, str | None, int], ...]
    """(writer index or -1, topic hash, partition, permit, count)."""
    index: Column
    topic_h: str
    partition: str

    @property
    def anomalies(self) -> list[tuple[str | None, int]]:
        return [(reason, n) for _w, _t, _p, reason, n in self.groups]

    def violations(self, df: DataFrame) -> DataFrame:
        """The rows of `df` (as weighed) that nothing permits."""
        keep = F.lit(False)
        for w, th, p, reason, _n in self.groups:
            if reason is None:
                keep = keep | ((self.index == w) & _same(F.col(self.topic_h), th) & _same(F.col(self.partition), p))
        return df.where(keep)


def _same(col: Column, value: int | None) -> Column:
    return col.isNull() if value is None else col == value


def weigh(ctx: CheckContext, df: DataFrame, reason: Reason, *, value: str | None = "value", topic_h: str = "topic_h",
          partition: str = "partition") -> Weighing:
    """The anomalies of `df` (one row each) counted by what permits them (`reason`), in one grouped Spark job: the
    writer comes from the row's value (each writer writes from its own `value_base` on), the partition's permit
    from its unclean elections."""
    writers = sorted((w for w in ctx.run.writers if w.value_base is not None), key=lambda w: -(w.value_base or 0))
    index = F.lit(-1)
    if value is not None:
        for i in reversed(range(len(writers))):
            index = F.when(F.col(value) >= F.lit(writers[i].value_base), F.lit(i)).otherwise(index)
    rows = df.groupBy(index.alias("w"), F.col(topic_h).alias("th"), F.col(partition).alias("p")).count().collect()
    names, unclean = topic_names(ctx), unclean_partitions(ctx)
    groups = []
    for g in rows:
        w = int(g["w"])
        th, p = (int(g["th"]) if g["th"] is not None else None), (int(g["p"]) if g["p"] is not None else None)
        topic = names.get(th) if th is not None else None
        at = unclean.get((topic, p)) if topic is not None and p is not None else None
        groups.append((w, th, p, reason(writers[w] if w >= 0 else None, at), int(g["count"])))
    return Weighing(tuple(groups), index, topic_h, partition)


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
