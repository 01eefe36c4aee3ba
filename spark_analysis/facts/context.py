"""What a check gets to work with: the events (as a Spark DataFrame and as small row lists),
the run's metadata, the fault windows, the transactions, how the history ended, and what loading skipped.

Owns `CheckContext` and `once_per_verify`. Big checks (delivery, consumer, commits) use `df(...)` and stay in Spark;
small ones (controller, partitions, groups, SLOs) call `rows(...)`, which collects the few
events of the given types once, in file order, as plain dicts with JSON-valued fields decoded.
The in-process evaluator builds the same context from a parsed file.

The events replayed from the KRaft controllers' metadata log (`src: log`, `harness.observe.metadata_log`) are
the controller's own record, not an observer's: `rows` leaves out its partition states and liveness events, and
`metadata_log()` is the view in which the partition states and broker liveness are theirs alone (how a
migration's KRaft phase is judged, `spark_analysis.result`).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from harness.history.events_cluster import METADATA_LOG_SOURCE
from spark_analysis.facts.completion import ENDING_TYPES, incompleteness
from spark_analysis.facts.faults import FaultIndex, build_fault_index
from spark_analysis.facts.liveness import LIVENESS_TYPES
from spark_analysis.facts.operations import OperationIndex, build_operation_index
from spark_analysis.facts.transactions import TXN_TYPES, TransactionIndex, build_transaction_index
from spark_analysis.ingest.load import HistoryDamage
from spark_analysis.ingest.runinfo import RunInfo
from spark_analysis.ingest.schema import BULK_TYPES, SMALL_TIER, tiers_of
from spark_analysis.session.sql_text import strings

Row = dict[str, Any]
RowsProvider = Callable[[tuple[str, ...]], list[Row]]

T = TypeVar("T")

_JSON_FIELDS = ("target", "params", "effect")
LOG_TYPES = frozenset({"partition.state", *LIVENESS_TYPES})
"""The types the metadata log's replay writes (`src: log`)."""


def _decode(row: Row) -> Row:
    out = {k: v for k, v in row.items() if v is not None}
    for name in _JSON_FIELDS:
        value = out.get(name)
        if isinstance(value, str) and value[:1] in "[{":
            with contextlib.suppress(ValueError):
                out[name] = json.loads(value)
    return out


def of_types(events: DataFrame, types: list[str]) -> F.Column:
    """Filter: events of `types`, pruned to the Parquet `tier` partitions they can be in (if tiered). SQL text: one
    JVM call (the Column API took five)."""
    where = f"`type` IN ({strings(types)})"
    if "tier" in events.columns:
        where += f" AND tier IN ({strings(tiers_of(types))})"
    return F.expr(where)



def spark_rows_provider(events: DataFrame) -> RowsProvider:
    """Collect events of the given types (file order) as dicts without null fields.

    The first request for any small type collects ALL small-type events in one Spark job and
    serves later requests from memory; bulk types are collected per request.
    """
    small: dict[str, list[Row]] = {}

    def collect(where: F.Column) -> list[Row]:
        rows = [_decode(r.asDict(recursive=True)) for r in events.where(where).drop("tier").collect()]
        rows.sort(key=lambda r: r.get("seq", 0))
        return rows

    def provide(types: tuple[str, ...]) -> list[Row]:
        bulk = [t for t in types if t in BULK_TYPES]
        out: list[Row] = collect(of_types(events, bulk)) if bulk else []
        if any(t not in BULK_TYPES for t in types):
            if not small:
                small["*"] = collect(F.col("tier") == SMALL_TIER)
            wanted = set(types)
            out.extend(r for r in small["*"] if r.get("type") in wanted)
            out.sort(key=lambda r: r.get("seq", 0))
        return out

    return provide


@dataclass
class CheckContext:
    """Inputs of every check. `events`/`spark` are None in the in-process evaluator."""

    run: RunInfo
    type_counts: Mapping[str, int]
    end_t: float
    rows_provider: RowsProvider
    spark: SparkSession | None = None
    events: DataFrame | None = None
    skipped_lines: int = 0
    damage: HistoryDamage | None = None
    """The skipped lines by kind and type (None where the loader did not say: every line was read)."""
    shared: dict[str, Any] = field(default_factory=dict)
    """Intermediate results several checks reuse (e.g. cached per-value DataFrames)."""
    _cache: dict[tuple[str, ...], list[Row]] = field(default_factory=dict)
    _frames: dict[tuple[str, ...], DataFrame] = field(default_factory=dict)
    _faults: FaultIndex | None = None
    _operations: OperationIndex | None = None
    _transactions: TransactionIndex | None = None
    log_view: bool = False
    """`metadata_log()`'s view: the partition states and liveness events are the metadata log's alone."""

    def close(self) -> None:
        """Release cached DataFrames."""
        for value in self.shared.values():
            if isinstance(value, DataFrame):
                value.unpersist()
        self.shared.clear()
        self._frames.clear()

    def count(self, event_type: str) -> int:
        return int(self.type_counts.get(event_type, 0))

    def rows(self, *types: str) -> list[Row]:
        """Events of `types` in file order (each dict carries `seq`); cached per type set."""
        key = tuple(sorted(types))
        if key not in self._cache:
            present = tuple(t for t in key if self.count(t) > 0)
            rows = self.rows_provider(present) if present else []
            self._cache[key] = [r for r in rows if r.get("type") not in LOG_TYPES
                                or (r.get("src") == METADATA_LOG_SOURCE) == self.log_view]
        return self._cache[key]

    def metadata_log(self) -> CheckContext:
        """The same run with the partition states and broker liveness of the KRaft controllers' metadata log in
        place of the observers' (every other type as it is); rows only, caches of its own. Empty of those types
        when the history holds no `src: log` event."""
        return CheckContext(run=self.run, type_counts=self.type_counts, end_t=self.end_t,
                            rows_provider=self.rows_provider, skipped_lines=self.skipped_lines, damage=self.damage,
                            log_view=True)

    def df(self, *types: str) -> DataFrame:
        """Events of `types` as a DataFrame (Spark contexts only); one frame per type set, built once (each
        build is a handful of JVM round trips, and checks ask for the same sets)."""
        if self.events is None:
            raise RuntimeError("this check needs Spark; the context has no DataFrame")
        key = tuple(sorted(set(types)))
        if key not in self._frames:
            self._frames[key] = self.events.where(of_types(self.events, list(key)))
        return self._frames[key]

    def until(self, t: float) -> CheckContext:
        """The same run's events before `t` alone, as rows (no Spark: a check judged on a phase runs on rows, on
        both paths alike), with caches of its own; the run's ending events are kept, so `completed` answers for the
        whole run."""
        def provide(types: tuple[str, ...]) -> list[Row]:
            return [r for r in self.rows(*types) if r.get("type") in ENDING_TYPES or float(r.get("t") or 0.0) < t]

        return CheckContext(run=self.run, type_counts=self.type_counts, end_t=min(self.end_t, t),
                            rows_provider=provide, skipped_lines=self.skipped_lines, damage=self.damage)

    @property
    def faults(self) -> FaultIndex:
        if self._faults is None:
            self._faults = build_fault_index(self.rows("fault.start", "fault.end"))
        return self._faults

    @property
    def operations(self) -> OperationIndex:
        if self._operations is None:
            self._operations = build_operation_index(self.rows("op.start", "op.end"))
        return self._operations

    @property
    def transactions(self) -> TransactionIndex:
        """The run's transactions and how each ended (`spark_analysis.facts.transactions`); empty without any."""
        if self._transactions is None:
            self._transactions = build_transaction_index(self.rows(*TXN_TYPES))
        return self._transactions

    @property
    def completed(self) -> bool:
        """Whether the run ended normally: run.json (if any) says `completed` and so does the
        history's run.end (`spark_analysis.facts.completion.incompleteness`)."""
        return incompleteness(self.run, self.rows(*ENDING_TYPES)) is None

    def _drains_ended_behind(self) -> list[Row]:
        """The `group.drain` events that say the group was still behind (not ok)."""
        return [r for r in self.rows("group.drain") if r.get("ok") is False]

    @property
    def drains_behind(self) -> dict[str, float]:
        """Per group whose drain ended behind (`group.drain` not ok): when it ended. Its consumers were still
        expected to read there, so a partition of it left waiting stalls until then (`slo.read_unavailable`)."""
        return {str(r["group"]): float(r["t"]) for r in self._drains_ended_behind()
                if r.get("group") is not None and r.get("t") is not None}

    @property
    def drained(self) -> bool:
        """Whether the consumers read everything there was to read: the run completed and no group's drain ended
        behind (`group.drain` not ok). Only then is an acked write no consumer polled lost rather than unread."""
        return self.completed and not self._drains_ended_behind()


def spark_context(
    run: RunInfo,
    spark: SparkSession,
    events: DataFrame,
    type_counts: Mapping[str, int],
    end_t: float,
    skipped_lines: int = 0,
    damage: HistoryDamage | None = None,
) -> CheckContext:
    return CheckContext(
        run=run,
        type_counts=dict(type_counts),
        end_t=end_t,
        rows_provider=spark_rows_provider(events),
        spark=spark,
        events=events,
        skipped_lines=skipped_lines,
        damage=damage,
    )


def once_per_verify(compute: Callable[[CheckContext], T]) -> Callable[[CheckContext], T]:
    """`compute(ctx)` computed once per verify and shared by every check that asks (kept in `ctx.shared` under the
    function's qualified name; a persisted DataFrame there is released by `CheckContext.close`)."""
    key = f"{compute.__module__}.{compute.__qualname__}"

    @functools.wraps(compute)
    def shared(ctx: CheckContext) -> T:
        if key not in ctx.shared:
            ctx.shared[key] = compute(ctx)
        return cast(T, ctx.shared[key])

    return shared
