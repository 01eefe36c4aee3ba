"""The verdicts of `delivery.lost_write` and `delivery.duplicate` (`checks.delivery.checks`), from facts either path
gathers.

The Spark checks (`checks.delivery.checks`, with their fast paths and per-value frames) and the in-process evaluator
(`spark_analysis.inprocess.evaluator`, from its parse) gather the same facts (`LostWrites`, `Duplicates`) their own
way; the
status, summary, evidence and metrics, and which anomalies the configuration permits (`checks.shared.permits`), are
decided here only, so both paths say the same words about the same history. `checks.delivery.placement_judge` does the
same for `delivery.inconsistent_offsets` and `delivery.key_order`. See `checks.delivery.checks` for the rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.checks.shared.permits import Weighed, judge_weighed, settle
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.result import CheckResult, failed, passed, unknown

LOST_WRITE = "delivery.lost_write"
DUPLICATE = "delivery.duplicate"
EVIDENCE_ROWS = 20
ATTRIBUTION_ROWS = 2000
"""Lost writes (the first, by ack) the fault attribution of `delivery.lost_write` looks at."""
NO_READS = "cannot conclude: no poll or pipe.read events in the history"
"""`delivery.lost_write` without any reader (a consumer's poll, or a pipeline reading its input topic)."""
LOST_COUNTERS = ("acked", "polled", "unfinished", "indefinite_errors", "unpolled_acks_weaker_than_all",
                 "acked_never_polled", "txn_aborted_records", "txn_unknown_records")
EV_FIELDS = ("seq", "t", "src", "type", "producer", "consumer", "value", "key", "topic", "partition", "offset",
             "txn")
"""The fields of a write event (send, ack, poll) the delivery checks show as evidence."""

Row = Mapping[str, Any]
TopicPartition = tuple[str, int]


def ev_row(row: Row, **extra: Any) -> dict[str, Any]:
    """A write event as evidence: its `EV_FIELDS` without nulls, and `extra`."""
    out = {k: row[k] for k in EV_FIELDS if row.get(k) is not None}
    out.update(extra)
    return out


def first_per_location(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """The acks and polls of some values as evidence: for each (value, topic, partition, offset) the first event
    there (by seq), ordered by (value, seq)."""
    first: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        row = ev_row(r)
        where = (row.get("value"), row.get("topic"), row.get("partition"), row.get("offset"))
        if where not in first or row.get("seq", 0) < first[where].get("seq", 0):
            first[where] = row
    return sorted(first.values(), key=lambda r: (r["value"], r.get("seq", 0)))


@dataclass(frozen=True, slots=True)
class WriteCounts:
    """The lost-write counters over every written value (`frames.per_value_stats`, `bitsets.write_counters`)."""

    acked: int = 0
    """Acknowledged writes: values acked outside aborted and unknown transactions."""
    polled: int = 0
    """Values polled (or read by a pipeline's pipe.read)."""
    unfinished: int = 0
    """Sent, never acked nor failed."""
    indefinite_errors: int = 0
    """Failed with an error that does not say the write did not happen, never acked (outside aborted and unknown
    transactions)."""
    unpolled_acks_weaker_than_all: int = 0
    acked_never_polled: int = 0
    """Acknowledged writes with acks=all (or no send seen), never polled: lost, unseen or unverifiable."""
    txn_aborted_records: int = 0
    txn_unknown_records: int = 0

    @staticmethod
    def of(counters: Mapping[str, Any]) -> WriteCounts:
        return WriteCounts(**{f.name: int(counters.get(f.name) or 0) for f in fields(WriteCounts)})

    def metrics(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in LOST_COUNTERS}


@dataclass(frozen=True, slots=True)
class LostWrites:
    """What became of the acknowledged writes (see `checks.delivery.checks`)."""

    readers: bool = True
    """Some poll or pipe.read is in the history: without one nothing can be judged."""
    counts: WriteCounts = field(default_factory=WriteCounts)
    lost: int = 0
    """Acked (acks=all), never polled, in a topic some consumer reads, at or below what consumers read on its
    partition (any, once the run completed)."""
    unseen: int = 0
    """Acked, never polled, beyond what consumers reached in a run cut short."""
    lost_by_tp: Mapping[TopicPartition, int] = field(default_factory=dict)
    sample: Sequence[Row] = ()
    """The acks of the first lost writes by (ack t, ack seq), at most ATTRIBUTION_ROWS."""
    unclean: Mapping[TopicPartition, str] = field(default_factory=dict)
    """The partitions a permitted unclean election truncated (`permits.unclean_partitions`; asked only when some
    write is lost)."""

    @property
    def unverifiable(self) -> int:
        """Acked, never polled, in topics no consumer reads."""
        return self.counts.acked_never_polled - self.lost - self.unseen


def lost_summary(
    lost_by_tp: Mapping[TopicPartition, int], sample: Sequence[Row], faults: FaultIndex
) -> tuple[str, str | None]:
    """'lost 3 acked writes on orders/2 during fault #2 kill broker 1' (+ the other partitions)."""
    total = sum(lost_by_tp.values())
    fault_of: dict[TopicPartition, Counter[str]] = {}
    power_lost = False
    for row in sample:
        window = faults.explaining_loss(float(row["t"]))
        if window is not None:
            fault_of.setdefault((str(row["topic"]), int(row["partition"])), Counter())[window.label] += 1
            power_lost = power_lost or window.effect.loses_unsynced
    ranked = sorted(lost_by_tp.items(), key=lambda kv: (-kv[1], kv[0]))
    overall: Counter[str] = Counter()
    for c in fault_of.values():
        overall.update(c)
    top_fault = overall.most_common(1)[0][0] if overall else None

    def part(tp: TopicPartition, n: int, with_count: bool) -> str:
        label = fault_of.get(tp, Counter()).most_common(1)
        text = tp_label(*tp) + (f" ({n}" if with_count else "")
        if label:
            text += (", " if with_count else " during ") + label[0][0]
        return text + (")" if with_count else "")

    why = ("; acknowledged before a power loss, from the replicas' page cache: Kafka fsyncs only every "
           "log.flush.interval.messages (default: never; it relies on replication), so a power loss of every replica "
           "takes what none had synced") if power_lost else ""
    if len(ranked) == 1:
        return f"lost {plural(total, 'acked write')} on {part(ranked[0][0], total, False)}{why}", top_fault
    shown = "; ".join(part(tp, n, True) for tp, n in ranked[:4])
    more = f"; +{len(ranked) - 4} more partitions" if len(ranked) > 4 else ""
    return f"lost {plural(total, 'acked write')} on {len(ranked)} partitions: {shown}{more}{why}", top_fault


def txn_note(metrics: Mapping[str, Any]) -> str:
    """'; 4 records of aborted transactions are no acknowledged writes; ...' (empty outside transactions)."""
    aborted, undecided = int(metrics.get("txn_aborted_records") or 0), int(metrics.get("txn_unknown_records") or 0)
    note = f"; {plural(aborted, 'record')} of aborted transactions are no acknowledged writes" if aborted else ""
    if undecided:
        note += f"; {plural(undecided, 'record')} of transactions with an unknown outcome are unknown outcomes"
    return note


def judge_lost_write(facts: LostWrites, faults: FaultIndex) -> CheckResult:
    if not facts.readers:
        return unknown(LOST_WRITE, NO_READS)
    metrics: dict[str, Any] = {**facts.counts.metrics(), "lost": facts.lost, "unseen": facts.unseen,
                               "unverifiable_no_consumer": facts.unverifiable}
    if not facts.lost:
        return _nothing_lost(metrics, facts.unseen)
    metrics["lost_by_partition"] = {tp_label(*tp): n for tp, n in sorted(facts.lost_by_tp.items())}
    unclean = facts.unclean

    def where(row: Row) -> TopicPartition:
        return str(row.get("topic")), int(row.get("partition") or 0)

    def lost_on(tps: Mapping[TopicPartition, int], rows: Sequence[Row]) -> CheckResult:
        summary, fault = lost_summary(tps, rows, faults)
        ev = [ev_row(r, problem="acknowledged (acks=all) but never polled", permitted_by=unclean.get(where(r)))
              for r in rows[:EVIDENCE_ROWS]]
        return failed(LOST_WRITE, summary, ev, metrics, fault)

    def violations(_n: int) -> CheckResult:
        return lost_on({tp: n for tp, n in facts.lost_by_tp.items() if tp not in unclean},
                       [r for r in facts.sample if where(r) not in unclean])

    return settle(lost_on(facts.lost_by_tp, facts.sample), [(unclean.get(tp), n) for tp, n in facts.lost_by_tp.items()],
                  ("lost acked write", "lost acked writes"), violations)


def _nothing_lost(metrics: dict[str, Any], unseen: int) -> CheckResult:
    """Pass, or unknown when writes were unseen (run cut short, or a group behind at the drain's end) or nothing
    could be judged."""
    info_note = ""
    if metrics.get("unfinished") or metrics.get("indefinite_errors"):
        info_note = (f"; {metrics.get('unfinished', 0)} unfinished sends and "
                     f"{metrics.get('indefinite_errors', 0)} indefinite errors are unknown outcomes, not lost")
    info_note += txn_note(metrics)
    if unseen:
        return unknown(LOST_WRITE, f"{plural(unseen, 'acked write')} not yet polled when the run ended early or "
                                   f"its consumers had not caught up by the drain's end (beyond what they reached)"
                                   f"{info_note}", metrics)
    unverifiable = metrics["unverifiable_no_consumer"]
    checked = metrics.get("acked", 0) - metrics.get("unpolled_acks_weaker_than_all", 0) - unverifiable
    if checked <= 0:
        return unknown(LOST_WRITE, "no acknowledged write to a topic some consumer reads" + info_note, metrics)
    if unverifiable:
        info_note += f"; {unverifiable} acked writes to topics no consumer reads not judged"
    return passed(LOST_WRITE, f"all {checked} acked writes were polled{info_note}", metrics)


@dataclass(frozen=True, slots=True)
class DuplicateSample:
    """Values seen at two locations: how many, and the acks and polls of the first of them."""

    values: int
    rows: Sequence[Row] = ()
    """Every ack and poll of the first (by value) EVIDENCE_ROWS // 2 values (`sample_size`)."""


@dataclass(frozen=True, slots=True)
class Duplicates:
    """Values seen (acked or polled) at more than one (topic, partition, offset)."""

    values_seen: int
    """Values seen at some location."""
    found: Weighed[DuplicateSample] | None = None
    """The values seen at two, weighed by `permits.once_permit` (by their writer and the partition of their ack);
    None when there is none."""


DUPLICATE_SAMPLE = EVIDENCE_ROWS // 2
"""Values whose acks and polls `delivery.duplicate` shows (the first, by value)."""


def judge_duplicate(facts: Duplicates, faults: FaultIndex) -> CheckResult:
    if facts.found is None:
        return passed(DUPLICATE, f"no value at two offsets among {facts.values_seen} values seen",
                      {"values_seen": facts.values_seen, "duplicated_values": 0})

    def judge(sample: DuplicateSample) -> CheckResult:
        ev = first_per_location(sample.rows)[:EVIDENCE_ROWS]
        first = [r for r in ev if r["value"] == ev[0]["value"]]
        # Rows without an offset (an ack whose offset librdkafka did not report) cannot say where.
        located = [r for r in first if r.get("offset") is not None]
        where = " and ".join(f"{tp_label(r.get('topic'), r.get('partition'))}@{r['offset']}" for r in located[:3])
        summary = (f"{plural(sample.values, 'value')} appear at more than one offset, e.g. value {ev[0]['value']} "
                   f"at {where}")
        fault = faults.active_at(max(float(r.get("t") or 0.0) for r in first))
        return failed(DUPLICATE, summary, ev, {"values_seen": facts.values_seen, "duplicated_values": sample.values},
                      fault.label if fault else None)

    return judge_weighed(facts.found, judge, ("value at two offsets", "values at two offsets"))
