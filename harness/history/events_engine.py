"""The engine's events (src `engine`): the run, its phases and probes, its faults and its operations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.history.events_base import (
    HistoryEvent,
    JsonRecord,
    JsonValue,
    Target,
    as_tuple,
    decoded,
    from_records,
    omitted,
    parse_targets,
)

ENGINE = "engine"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart(HistoryEvent):
    TYPE: ClassVar[str] = "run.start"
    DOC: ClassVar[str] = "the run began"
    src: str = ENGINE
    experiment: str
    variant: str | None = None
    backend: str
    seed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnd(HistoryEvent):
    TYPE: ClassVar[str] = "run.end"
    DOC: ClassVar[str] = "the run ended: status completed, aborted, crashed or interrupted"
    src: str = ENGINE
    status: str
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunError(HistoryEvent):
    TYPE: ClassVar[str] = "run.error"
    DOC: ClassVar[str] = "the run crashed, or its teardown failed"
    src: str = ENGINE
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Phase(HistoryEvent):
    TYPE: ClassVar[str] = "phase"
    DOC: ClassVar[str] = "a phase began: name (setup, steady, chaos, heal, drain, teardown)"
    src: str = ENGINE
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Signal(HistoryEvent):
    TYPE: ClassVar[str] = "signal"
    DOC: ClassVar[str] = "the run received a signal (SIGTERM, SIGINT, SIGHUP)"
    src: str = ENGINE
    signal: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe(HistoryEvent):
    TYPE: ClassVar[str] = "probe"
    DOC: ClassVar[str] = "a steady-state probe's answer, before chaos or after heal (when)"
    src: str = ENGINE
    name: str
    ok: bool
    detail: str
    when: str


# -- faults ------------------------------------------------------------------------------------------------


def _params(value: Any) -> Mapping[str, JsonValue]:
    return dict(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class _FaultEvent(HistoryEvent):
    """A fault's start, end or skip: fault_id (the schedule index; `"<op_id>.<k>"` for the k-th stop of a
    rolling restart), kind, target (the resolved nodes or links), brokers (the broker ids among them), params,
    description."""

    src: str = ENGINE
    fault_id: int | str
    kind: str
    target: tuple[Target, ...] = decoded(parse_targets)
    brokers: tuple[int, ...]
    params: Mapping[str, JsonValue] = decoded(_params)
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultStart(_FaultEvent):
    TYPE: ClassVar[str] = "fault.start"
    DOC: ClassVar[str] = ("a fault took effect, stamped when its action began: fault_id (the schedule index; "
                          "`\"<op_id>.<k>\"` for the k-th stop of a rolling restart), kind, target (the resolved "
                          "nodes or links), brokers (the broker ids among them), params, description, heal (how it "
                          "ends), effect (what the fault did, as data: below), took_ms (how long the action "
                          "took: its effect was whole by t + took_ms; a `target: controller` first asks who leads)")
    heal: str | None = None
    effect: Mapping[str, JsonValue] | None = omitted(_params)
    took_ms: int | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultEnd(_FaultEvent):
    TYPE: ClassVar[str] = "fault.end"
    DOC: ClassVar[str] = ("a fault was healed; error names the heal steps that failed; left_down: ended by the "
                          "teardown, its nodes not started again (every node is stopped next)")
    error: str | None = omitted()
    left_down: bool | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultSkipped(_FaultEvent):
    TYPE: ClassVar[str] = "fault.skipped"
    DOC: ClassVar[str] = ("a fault was not carried out (error says why): its target named nothing when it fired, or "
                          "the migration step it was timed from (`during`) did not begin in time; nothing was done")
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultError(HistoryEvent):
    TYPE: ClassVar[str] = "fault.error"
    DOC: ClassVar[str] = "injecting or healing a fault failed (action: inject, heal)"
    src: str = ENGINE
    fault_id: int | None = omitted()
    kind: str | None = omitted()
    action: str
    error: str


# -- operations --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReassignmentEntry:
    """One partition's target replicas in `op.start`'s reassignment."""

    partition: int
    replicas: tuple[int, ...]

    def to_json(self) -> JsonRecord:
        return {"partition": self.partition, "replicas": list(self.replicas)}

    @staticmethod
    def from_json(record: Mapping[str, Any]) -> ReassignmentEntry:
        return ReassignmentEntry(int(record["partition"]), tuple(record.get("replicas") or ()))


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One partition's answer in `op.end`'s results (replicas only where the operation reads them)."""

    topic: str | None
    partition: int
    error: str | None
    replicas: tuple[int, ...] | None = None

    def to_json(self) -> JsonRecord:
        out: JsonRecord = {"topic": self.topic, "partition": self.partition, "error": self.error}
        if self.replicas is not None:
            out["replicas"] = list(self.replicas)
        return out

    @staticmethod
    def from_json(record: Mapping[str, Any]) -> PartitionResult:
        replicas = record.get("replicas")
        return PartitionResult(record.get("topic"), int(record["partition"]), record.get("error"),
                               None if replicas is None else tuple(replicas))


@dataclass(frozen=True, slots=True, kw_only=True)
class OpStart(HistoryEvent):
    TYPE: ClassVar[str] = "op.start"
    DOC: ClassVar[str] = ("an operation began: op_id (its place in the schedule, numbered with the faults), action "
                          "(reassign, elect_preferred, add_partitions, scale_consumers, restart_producer, "
                          "rolling_restart, upgrade, finalize_upgrade), topic (null: every topic, or none), group "
                          "(scale_consumers), producer (restart_producer), partitions ([[topic, p], …]), reassignment "
                          "([{partition, replicas}], reassign only), brokers (rolling_restart, upgrade, "
                          "finalize_upgrade, migrate_to_kraft: the restart order), timeout_s, description; step "
                          "(migrate_to_kraft: one of its steps begins, under the same op_id)")
    src: str = ENGINE
    op_id: int
    action: str
    topic: str | None
    group: str | None = omitted()
    partitions: tuple[tuple[str, str], ...]
    reassignment: tuple[ReassignmentEntry, ...] = decoded(from_records(ReassignmentEntry.from_json))
    brokers: tuple[int, ...] | None = omitted(as_tuple)
    producer: str | None = omitted()
    timeout_s: float
    description: str
    step: str | None = omitted()


@dataclass(frozen=True, slots=True, kw_only=True)
class OpEnd(HistoryEvent):
    TYPE: ClassVar[str] = "op.end"
    DOC: ClassVar[str] = ("an operation ended: outcome (done, timeout, error), via (AlterPartitionReassignments, "
                          "/admin/reassign_partitions, ElectLeaders, CreatePartitions, consumer clients, a new "
                          "librdkafka producer, graceful stop and start), detail (what was awaited or failed, and "
                          "what was seen last), elapsed_s, results ([{topic, partition, error, replicas}]: each "
                          "partition's answer); step (migrate_to_kraft: that step ended)")
    src: str = ENGINE
    op_id: int
    action: str
    topic: str | None
    group: str | None = omitted()
    outcome: str
    via: str
    detail: str
    elapsed_s: float
    results: tuple[PartitionResult, ...] = decoded(from_records(PartitionResult.from_json))
    description: str
    step: str | None = omitted()


ENGINE_EVENTS: tuple[type[HistoryEvent], ...] = (
    RunStart, RunEnd, RunError, Phase, Signal, Probe, FaultStart, FaultEnd, FaultSkipped, FaultError,
    OpStart, OpEnd)
