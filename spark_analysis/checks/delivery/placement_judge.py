"""The verdicts of `delivery.inconsistent_offsets` and `delivery.key_order` (`checks.delivery.checks`): where writes
were
stored, from facts either path gathers.

The Spark checks (`checks.delivery.checks`) and the in-process evaluator (`spark_analysis.inprocess.evaluator`) gather
the same
facts (`TwoValuedOffsets`, `KeyOrderFacts`) their own way; the status, summary, evidence and metrics, and which
anomalies the configuration permits (`checks.shared.permits`), are decided here only, as `checks.delivery.judge` decides
the lost-write and duplicate checks. Samples are chosen in a fixed order on both paths (offsets by partition,
offset and values; reordered writes by send position), so the evidence is the same too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_analysis.checks.delivery.judge import EVIDENCE_ROWS, Row, ev_row, first_per_location
from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.checks.shared.permits import Weighed, judge_weighed
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.result import CheckResult, failed, passed

INCONSISTENT_OFFSETS = "delivery.inconsistent_offsets"
KEY_ORDER = "delivery.key_order"
SAMPLE = EVIDENCE_ROWS // 2
"""Offsets holding two values, or reordered writes, a failure shows (the first in the order above)."""
ONE_VALUE = "every observed offset holds one value"
KEY_ORDER_PASS = "every key's acked writes are in send order within their partition"


@dataclass(frozen=True, slots=True)
class TwoValued:
    """A (topic, partition, offset) seen holding two values: the least and the greatest seen there."""

    partition: int | None
    offset: int
    vmin: int
    vmax: int

    def order(self) -> tuple[int, int, int, int]:
        """The sample order: partition, offset, values (the topic is not in it: Spark knows only its hash)."""
        return (self.partition if self.partition is not None else -1, self.offset, self.vmin, self.vmax)


@dataclass(frozen=True, slots=True)
class OffsetSample:
    """Offsets holding two values: how many, the first SAMPLE of them (`TwoValued.order`), and every ack and poll
    of their values."""

    offsets: int
    sample: Sequence[TwoValued] = ()
    rows: Sequence[Row] = ()


@dataclass(frozen=True, slots=True)
class TwoValuedOffsets:
    """The offsets seen holding two values, weighed by `permits.ack_permit` (permitted when the partition had a
    permitted unclean election, or either value's writer took acknowledgements weaker than acks=all); None when
    every observed offset holds one value."""

    found: Weighed[OffsetSample] | None = None


def judge_inconsistent_offsets(facts: TwoValuedOffsets, faults: FaultIndex) -> CheckResult:
    if facts.found is None:
        return passed(INCONSISTENT_OFFSETS, ONE_VALUE, {"inconsistent_offsets": 0})

    def judge(found: OffsetSample) -> CheckResult:
        at = {(s.partition, s.offset) for s in found.sample}
        rows = [r for r in first_per_location(found.rows) if (r.get("partition"), r.get("offset")) in at]
        rows.sort(key=lambda r: (str(r.get("topic")), r.get("partition", 0), r.get("offset", 0), r.get("seq", 0)))
        ev = rows[:EVIDENCE_ROWS]
        first = ev[0]
        holders = sorted({r["value"] for r in ev if r.get("partition") == first.get("partition")
                          and r.get("offset") == first.get("offset") and r.get("topic") == first.get("topic")})
        summary = (f"{plural(found.offsets, 'offset')} seen with two values, e.g. "
                   f"{tp_label(first['topic'], first['partition'])}@{first['offset']} holds "
                   f"{' and '.join(map(str, holders))}")
        fault = faults.active_at(max(float(r.get("t") or 0.0) for r in ev))
        return failed(INCONSISTENT_OFFSETS, summary, ev, {"inconsistent_offsets": found.offsets},
                      fault.label if fault else None)

    return judge_weighed(facts.found, judge, ("offset holding two values", "offsets holding two values"))


@dataclass(frozen=True, slots=True)
class ReorderedWrite:
    """A write stored before the write its producer sent before it with the same key, in the same partition."""

    send_seq: int
    """Where it was sent (the sample order)."""
    offset: int
    prev_offset: int
    """The offset of the key's write sent right before it (in that partition)."""
    ack_seq: int
    prev_ack_seq: int


@dataclass(frozen=True, slots=True)
class Reordering:
    """Writes stored out of key order: how many, the first SAMPLE (by send position), and their acks and those of
    the writes sent before them (by seq)."""

    writes: int
    sample: Sequence[ReorderedWrite] = ()
    acks: Mapping[int, Row] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KeyOrderFacts:
    """The writes stored out of key order, weighed by `permits.order_permit` (by their writer and partition); None
    when every key's acked writes are in send order."""

    found: Weighed[Reordering] | None = None


def judge_key_order(facts: KeyOrderFacts, faults: FaultIndex) -> CheckResult:
    if facts.found is None:
        return passed(KEY_ORDER, KEY_ORDER_PASS, {"reordered": 0})

    def judge(found: Reordering) -> CheckResult:
        ev: list[dict[str, Any]] = []
        for r in sorted(found.sample, key=lambda r: r.send_seq):
            before, after = found.acks.get(r.prev_ack_seq, {}), found.acks.get(r.ack_seq, {})
            ev.append(ev_row(before, problem="sent first"))
            ev.append(ev_row(after, problem=f"sent later, stored before (offset {r.offset} <= {r.prev_offset})"))
        first = ev[1]
        summary = (f"{plural(found.writes, 'write')} stored out of send order for their key, e.g. key "
                   f"{first.get('key')!r} of {first.get('producer')}: value {first.get('value')} at offset "
                   f"{first.get('offset')} after value {ev[0].get('value')} at {ev[0].get('offset')}")
        fault = faults.active_at(float(first.get("t") or 0.0))
        return failed(KEY_ORDER, summary, ev, {"reordered": found.writes}, fault.label if fault else None)

    return judge_weighed(facts.found, judge, ("write stored out of key order", "writes stored out of key order"))
