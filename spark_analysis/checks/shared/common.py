"""Small helpers the checks share: event normalisation, distributions, evidence rows.

Owns how a `partitions` field ([[topic, p], ...] as JSON numbers or Spark strings) becomes
`(topic, int)` pairs, how `members` (ids or objects) becomes member ids, the p50/p90/p99/max
distribution SLO checks report, and the trimming of evidence events to their useful fields.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_analysis.facts.context import CheckContext

TopicPartition = tuple[str, int]

EVIDENCE_FIELDS = (
    "seq", "t", "src", "type", "broker", "controller", "epoch", "topic", "partition", "leader", "leader_epoch", "isr",
    "replicas", "controller_epoch", "group", "state", "generation", "coordinator", "protocol", "members",
    "member", "partitions", "producer", "consumer", "value", "key", "offset", "error", "definite",
    "fault_id", "kind", "target", "status", "name",
)


def tp_label(topic: object, partition: object) -> str:
    return f"{topic}/{partition}"


def as_partitions(value: object) -> list[TopicPartition]:
    """[[topic, p], ...] (numbers or strings, or a JSON text of it) -> [(topic, p)]; bad items dropped."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    out: list[TopicPartition] = []
    if not isinstance(value, (list, tuple)):
        return out
    for item in value:
        if isinstance(item, Mapping):
            item = (item.get("topic"), item.get("partition"))
        if isinstance(item, (list, tuple)) and len(item) == 2:
            try:
                out.append((str(item[0]), int(item[1])))
            except (TypeError, ValueError):
                continue
    return out


def member_id(value: object) -> str:
    """A member id from a member entry (a string id, or an object with member_id/id)."""
    if isinstance(value, str) and value[:1] == "{":
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    if isinstance(value, Mapping):
        for key in ("member_id", "member", "id"):
            if key in value:
                return str(value[key])
        return json.dumps(value, sort_keys=True)
    return str(value)


def as_members(value: object) -> list[str]:
    if not isinstance(value, (list, tuple)):
        return []
    return [member_id(v) for v in value]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def distribution(values: Iterable[float]) -> dict[str, Any]:
    """count, p50, p90, p99, max (seconds, rounded to ms) of `values`."""
    data = sorted(float(v) for v in values)
    if not data:
        return {"count": 0}
    return {
        "count": len(data),
        "p50": round(percentile(data, 50), 3),
        "p90": round(percentile(data, 90), 3),
        "p99": round(percentile(data, 99), 3),
        "max": round(data[-1], 3),
    }


def evidence(event: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """The event's useful fields (no nulls), plus `extra` annotations (e.g. expected=...)."""
    row = {k: event[k] for k in EVIDENCE_FIELDS if event.get(k) is not None}
    row.update({k: v for k, v in extra.items() if v is not None})
    return row


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def summary_with_fault(ctx: CheckContext, text: str, t: float) -> tuple[str, str | None]:
    """`text` with the fault in force at t named after it ("... during fault #2 kill broker 3"), and that fault's
    label (None outside every fault): a failed check's summary and `fault`."""
    fault = ctx.faults.active_at(t)
    return (f"{text} during {fault.label}" if fault else text), (fault.label if fault else None)
