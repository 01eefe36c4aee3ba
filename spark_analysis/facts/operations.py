"""Operation windows from `op.start` / `op.end` events (reassign, elect_preferred), read the same way from
Spark rows (lists of objects arrive as JSON text) and from the raw JSON of the in-process evaluator.

Owns `OperationWindow` (what an operation acted on, its target replica lists, when it ran, how it ended)
and `OperationIndex.covering(topic, partition, t, action)`: the operation in progress on a partition at
a moment, which tells `partition.election_conforms` why a leader moved (reassignment: the first live
ISR member of the new replica list; preferred election: AR[0]).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.facts.faults import parse_json_text

OPERATION_GRACE_S = 2.0
"""A leader change this long after an operation's end is still its doing (observers see it late)."""


def _listed(value: object) -> list[Any]:
    """A list field of an op event (JSON text from Spark, a list from the in-process evaluator); [] for anything
    else."""
    parsed = parse_json_text(value)
    return parsed if isinstance(parsed, list) else []


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    topic: str
    partition: int
    error: str | None
    replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class OperationWindow:
    op_id: int
    action: str
    topic: str | None
    partitions: tuple[int, ...]
    """Empty with no topic: every partition of every topic."""
    targets: Mapping[int, tuple[int, ...]]
    """reassign: the new replica list per partition."""
    start: float
    end: float | None
    """None: no `op.end` (the run was cut short); it lasts to the end of the history."""
    outcome: str | None
    detail: str
    answers: tuple[PartitionAnswer, ...]
    description: str

    def acts_on(self, topic: str, partition: int) -> bool:
        if self.topic is None:
            return True
        return topic == self.topic and (not self.partitions or partition in self.partitions)

    def refused(self, topic: str, partition: int) -> bool:
        """Whether the controller answered this partition with an error (`PREFERRED_LEADER_NOT_AVAILABLE`,
        `ELECTION_NOT_NEEDED`, ...): then the operation changed nothing there (Kafka writes no record for it)."""
        return any(a.error is not None and a.topic == topic and a.partition == partition for a in self.answers)

    def contains(self, t: float, grace: float = OPERATION_GRACE_S) -> bool:
        return self.start <= t and (self.end is None or t <= self.end + grace)

    @property
    def label(self) -> str:
        return f"operation {self.description}" if self.description else f"operation #{self.op_id} {self.action}"

    def to_json(self) -> dict[str, Any]:
        """The operation as the timeline and the report show it."""
        return {"id": self.op_id, "action": self.action, "topic": self.topic, "start": self.start, "end": self.end,
                "outcome": self.outcome, "detail": self.detail, "label": self.label,
                "answers": {f"{a.topic}/{a.partition}": a.error for a in self.answers if a.error is not None}}


@dataclass(frozen=True, slots=True)
class OperationIndex:
    windows: tuple[OperationWindow, ...]

    def covering(self, topic: str, partition: int, t: float, action: str) -> OperationWindow | None:
        """The latest operation of `action` acting on the partition in progress at t (with the grace)."""
        for w in reversed(self.windows):
            if w.action == action and w.acts_on(topic, partition) and w.contains(t):
                return w
        return None

    @property
    def migration(self) -> OperationWindow | None:
        """The run's `migrate_to_kraft` (a cluster migrates once: rule M3)."""
        return next((w for w in self.windows if w.action == "migrate_to_kraft"), None)


def build_operation_index(events: Sequence[Mapping[str, Any]]) -> OperationIndex:
    """Pairs `op.start` with `op.end` by op_id (events in file order)."""
    starts: dict[int, Mapping[str, Any]] = {}
    ends: dict[int, Mapping[str, Any]] = {}
    for ev in events:
        try:
            op_id = int(ev.get("op_id"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if ev.get("step") is not None:  # a migration's step: inside its operation's own window
            continue
        (starts if ev.get("type") == "op.start" else ends)[op_id] = ev
    out: list[OperationWindow] = []
    for op_id, s in starts.items():
        e = ends.get(op_id, {})
        parts = tuple(sorted(int(p[1]) for p in _listed(s.get("partitions")) if isinstance(p, (list, tuple))))
        targets = {int(r["partition"]): tuple(int(b) for b in r["replicas"])
                   for r in _listed(s.get("reassignment")) if isinstance(r, Mapping)}
        answers = tuple(PartitionAnswer(str(a.get("topic")), int(a.get("partition", -1)), a.get("error"),
                                        tuple(a["replicas"]) if a.get("replicas") is not None else None)
                        for a in _listed(e.get("results")) if isinstance(a, Mapping))
        out.append(OperationWindow(op_id, str(s.get("action")), s.get("topic"), parts, targets,
                                   float(s.get("t") or 0.0), float(e["t"]) if e.get("t") is not None else None,
                                   e.get("outcome"), str(e.get("detail") or ""), answers,
                                   str(s.get("description") or "")))
    return OperationIndex(tuple(sorted(out, key=lambda w: (w.start, w.op_id))))
