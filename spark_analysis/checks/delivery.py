"""Delivery checks (KAFKA-BEHAVIOUR.md §7.6, §7.7; Jepsen's Kafka anomalies), in Spark.

- `delivery.lost_write`: a value acknowledged to an acks=all producer (a `send` without `acks`
  counts as acks=all) that no consumer ever polled. It is *lost* when its offset is at or below
  the highest offset polled from its partition (consumers read past it: Jepsen's definition) or
  the run completed (the drain should have read it); otherwise, in a run cut short, it is
  *unseen* and the check is unknown. Writes to topics no consumer ever polled cannot be judged
  (counted as `unverifiable_no_consumer`). Sends with no ack and no error, and errors that are not
  definite, are unknown outcomes (Jepsen's `info`): counted, never lost. A read-process-write
  pipeline's `pipe.read` of an input record is a poll here (of that value, at that offset): its input
  topic is a topic some consumer reads. With neither a poll nor a pipe.read the check is unknown.
- `delivery.duplicate`: a value seen (acked or polled) at more than one (topic, partition, offset).
- `delivery.inconsistent_offsets`: one (topic, partition, offset) seen holding two different values.
- `delivery.key_order`: one producer's sends of a key that landed in the same partition appear at
  offsets in send order (Jepsen's nonmonotonic send, per key).

Transactional records (a `send`/`ack`/`send.error` with `txn`: `spark_analysis.transactions`). A record is
written to the log when it is acked, but becomes an acknowledged write only when its transaction commits:
- lost write: an ack counts as an acknowledged write only outside transactions or in a transaction whose
  outcome is `committed`. A record of an `aborted` transaction is no acknowledged write (it never becomes
  readable to read_committed consumers), so it is never lost; a record of a transaction whose outcome is
  `unknown` (indefinite end, or no end: the run was cut short) is an unknown outcome, counted
  (`txn_aborted_records`, `txn_unknown_records`), never lost. `txn.lost_commit` judges committed
  transactions record by record.
- duplicate, inconsistent offsets: a record of an aborted transaction does occupy its offset, and a
  read_uncommitted consumer may poll it there: its ack and that poll name the same (topic, partition,
  offset), so it is one value at one location, like any other record. Commit and abort markers occupy
  offsets too, but no ack or poll names them. Neither check changes.
- key order: aborted and unknown records are stored at their offsets in the producer's send order like
  committed ones (one session of a transactional producer writes in order; a new session fences the old
  one first), so key order judges every ack whatever its transaction's outcome.
- poll skip (`checks.consumer`): a read_committed consumer legitimately jumps over the offsets of aborted
  records (and of records whose transaction's outcome is unknown); only a read_uncommitted consumer must
  return them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql.window import Window

from harness.model.promises import Writer, ack_withdrawn, once_withdrawn, order_withdrawn
from spark_analysis.checks.bitsets import per_location, write_counters
from spark_analysis.checks.common import plural, tp_label
from spark_analysis.checks.frames import (
    PIPE_READ,
    events_by_seq,
    keyed_acks,
    per_value,
    per_value_stats,
    poll_frontier,
    strong_ack,
    topic_hash,
)
from spark_analysis.checks.permits import settle, unclean_partitions, weigh
from spark_analysis.checks.slots import acks_in_value_order, location_summary
from spark_analysis.context import CheckContext
from spark_analysis.faults import FaultIndex
from spark_analysis.local_frame import local_frame
from spark_analysis.result import CheckResult, failed, passed, unknown

EVIDENCE_ROWS = 20
ATTRIBUTION_ROWS = 2000
NO_READS = "cannot conclude: no poll or pipe.read events in the history"
"""`delivery.lost_write` without any reader (a consumer's poll, or a pipeline reading its input topic)."""
LOST_COUNTERS = ("acked", "polled", "unfinished", "indefinite_errors", "unpolled_acks_weaker_than_all",
                 "acked_never_polled", "txn_aborted_records", "txn_unknown_records")
_EV_FIELDS = ("seq", "t", "src", "type", "producer", "consumer", "value", "key", "topic", "partition", "offset",
              "txn")


def _ev(row: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out = {k: row[k] for k in _EV_FIELDS if row.get(k) is not None}
    out.update(extra)
    return out


def lost_summary(
    lost_by_tp: dict[tuple[str, int], int], sample: list[dict[str, Any]], faults: FaultIndex
) -> tuple[str, str | None]:
    """'lost 3 acked writes on orders/2 during fault #2 kill broker 1' (+ the other partitions)."""
    total = sum(lost_by_tp.values())
    fault_of: dict[tuple[str, int], Counter[str]] = {}
    for row in sample:
        window = faults.at_or_after(float(row["t"]))
        if window is not None:
            fault_of.setdefault((str(row["topic"]), int(row["partition"])), Counter())[window.label] += 1
    ranked = sorted(lost_by_tp.items(), key=lambda kv: (-kv[1], kv[0]))
    overall: Counter[str] = Counter()
    for c in fault_of.values():
        overall.update(c)
    top_fault = overall.most_common(1)[0][0] if overall else None

    def part(tp: tuple[str, int], n: int, with_count: bool) -> str:
        label = fault_of.get(tp, Counter()).most_common(1)
        text = tp_label(*tp) + (f" ({n}" if with_count else "")
        if label:
            text += (", " if with_count else " during ") + label[0][0]
        return text + (")" if with_count else "")

    if len(ranked) == 1:
        return f"lost {plural(total, 'acked write')} on {part(ranked[0][0], total, False)}", top_fault
    shown = "; ".join(part(tp, n, True) for tp, n in ranked[:4])
    more = f"; +{len(ranked) - 4} more partitions" if len(ranked) > 4 else ""
    return f"lost {plural(total, 'acked write')} on {len(ranked)} partitions: {shown}{more}", top_fault


class LostWrite:
    id = "delivery.lost_write"
    family = "delivery"
    needs = frozenset({"ack"})
    """And a reader: some poll, or a pipeline's pipe.read (`NO_READS`)."""

    def run(self, ctx: CheckContext) -> CheckResult:
        if not ctx.count("poll") and not ctx.count(PIPE_READ):
            return unknown(self.id, NO_READS)
        fast = write_counters(ctx)
        if fast.get("acked_never_polled") == 0:
            # Every acked (acks=all) write was polled: nothing lost, nothing unseen.
            metrics: dict[str, Any] = {k: fast[k] for k in LOST_COUNTERS}
            metrics.update({"lost": 0, "unseen": 0, "unverifiable_no_consumer": metrics["acked_never_polled"]})
            return self._nothing_lost(metrics, 0)
        pv = per_value(ctx)
        acked, polled = F.col("acked_write") == 1, F.col("polled") == 1
        candidate = acked & ~polled & strong_ack()
        stats = per_value_stats(ctx)
        polled_topics = list(stats["polled_topics"])
        metrics = {k: int(stats.get(k) or 0) for k in LOST_COUNTERS} if stats else {}
        # Only topics some consumer reads can tell a lost write from an unread one.
        cand = pv.where(candidate & F.col("ack_topic_h").isin(polled_topics)).select(
            "value", "ack_t", "ack_seq", "ack_topic_h", "ack_partition", "ack_offset")
        frontier: list[tuple[str, int, int, int]] = []
        if not metrics.get("acked_never_polled"):
            classified, n_lost, unseen = cand, 0, 0
        elif ctx.completed:
            # A completed run drained its consumers: every acked write never polled is lost.
            classified = cand.withColumn("lost", F.lit(True))
            n_lost, unseen = cand.count(), 0
        else:
            frontier = poll_frontier(ctx)
            spark = ctx.spark
            assert spark is not None
            fr = local_frame(spark, [(h, p, o) for (_t, h, p, o) in frontier] or [(0, -1, -1)],
                             "ack_topic_h long, ack_partition long, frontier long")
            classified = cand.join(F.broadcast(fr), ["ack_topic_h", "ack_partition"], "left").withColumn(
                "lost", F.col("ack_offset") <= F.coalesce(F.col("frontier"), F.lit(-1)))
            by = classified.groupBy("lost").count().collect()
            n_lost = sum(int(r["count"]) for r in by if r["lost"])
            unseen = sum(int(r["count"]) for r in by if not r["lost"])
        metrics.update({"lost": n_lost, "unseen": unseen,
                        "unverifiable_no_consumer": metrics.get("acked_never_polled", 0) - n_lost - unseen})
        if n_lost:
            seqs = [int(r["ack_seq"]) for r in
                    classified.where("lost").orderBy("ack_t").limit(ATTRIBUTION_ROWS).select("ack_seq").collect()]
            rows = events_by_seq(ctx, seqs)
            sample = [rows[s] for s in seqs if s in rows]
            names = {h: t for (t, h, _p, _o) in frontier}
            by_tp = classified.where("lost").groupBy("ack_topic_h", "ack_partition").count().collect()
            if any(int(r["ack_topic_h"]) not in names for r in by_tp):
                names.update({int(r["h"]): str(r["topic"]) for r in ctx.df("ack").select(
                    "topic", topic_hash().alias("h")).distinct().collect()})
            lost_by_tp = {(names.get(int(r["ack_topic_h"]), "?"), int(r["ack_partition"])): int(r["count"])
                          for r in by_tp}
            metrics["lost_by_partition"] = {tp_label(*tp): n for tp, n in sorted(lost_by_tp.items())}
            unclean = unclean_partitions(ctx)

            def where(row: dict[str, Any]) -> tuple[str, int]:
                return str(row.get("topic")), int(row.get("partition") or 0)

            def lost_on(tps: dict[tuple[str, int], int], rows: list[dict[str, Any]]) -> CheckResult:
                summary, fault = lost_summary(tps, rows, ctx.faults)
                ev = [_ev(r, problem="acknowledged (acks=all) but never polled", permitted_by=unclean.get(where(r)))
                      for r in rows[:EVIDENCE_ROWS]]
                return failed(self.id, summary, ev, metrics, fault)

            def violations(_n: int) -> CheckResult:
                return lost_on({tp: n for tp, n in lost_by_tp.items() if tp not in unclean},
                               [r for r in sample if where(r) not in unclean])

            return settle(lost_on(lost_by_tp, sample), [(unclean.get(tp), n) for tp, n in lost_by_tp.items()],
                          ("lost acked write", "lost acked writes"), violations)
        return self._nothing_lost(metrics, unseen)

    def _nothing_lost(self, metrics: dict[str, Any], unseen: int) -> CheckResult:
        """Pass, or unknown when writes were unseen (run cut short) or nothing could be judged."""
        info_note = ""
        if metrics.get("unfinished") or metrics.get("indefinite_errors"):
            info_note = (f"; {metrics.get('unfinished', 0)} unfinished sends and "
                         f"{metrics.get('indefinite_errors', 0)} indefinite errors are unknown outcomes, not lost")
        info_note += txn_note(metrics)
        if unseen:
            return unknown(self.id, f"{plural(unseen, 'acked write')} not yet polled when the run ended early "
                                    f"(beyond what consumers reached){info_note}", metrics)
        unverifiable = metrics["unverifiable_no_consumer"]
        checked = metrics.get("acked", 0) - metrics.get("unpolled_acks_weaker_than_all", 0) - unverifiable
        if checked <= 0:
            return unknown(self.id, "no acknowledged write to a topic some consumer reads" + info_note, metrics)
        if unverifiable:
            info_note += f"; {unverifiable} acked writes to topics no consumer reads not judged"
        return passed(self.id, f"all {checked} acked writes were polled{info_note}", metrics)


def _once_permit(writer: Writer | None, unclean: str | None) -> str | None:
    """R5 holds for idempotent writers; a truncation by a permitted unclean election also stores a retry again."""
    return (once_withdrawn(writer) if writer is not None else None) or unclean


def _order_permit(writer: Writer | None, unclean: str | None) -> str | None:
    """R7 holds for idempotent writers and those with one request in flight; a permitted truncation reorders too."""
    return (order_withdrawn(writer) if writer is not None else None) or unclean


def _ack_permit(writer: Writer | None, unclean: str | None) -> str | None:
    """R3/R6: only acks=all writes survive every clean election; a permitted unclean one truncates any."""
    return unclean or (ack_withdrawn(writer) if writer is not None else None)


def txn_note(metrics: dict[str, Any]) -> str:
    """'; 4 records of aborted transactions are no acknowledged writes; ...' (empty outside transactions)."""
    aborted, undecided = int(metrics.get("txn_aborted_records") or 0), int(metrics.get("txn_unknown_records") or 0)
    note = f"; {plural(aborted, 'record')} of aborted transactions are no acknowledged writes" if aborted else ""
    if undecided:
        note += f"; {plural(undecided, 'record')} of transactions with an unknown outcome are unknown outcomes"
    return note


def _rows_for_values(ctx: CheckContext, values: list[int]) -> list[dict[str, Any]]:
    rows = (ctx.df("ack", "poll").where(F.col("value").isin(values))
            .select(*_EV_FIELDS).dropDuplicates(["value", "topic", "partition", "offset"]).collect())
    out = [{k: v for k, v in r.asDict().items() if v is not None} for r in rows]
    return sorted(out, key=lambda r: (r["value"], r.get("seq", 0)))


class Duplicate:
    id = "delivery.duplicate"
    family = "delivery"
    needs = frozenset({"poll"})

    def run(self, ctx: CheckContext) -> CheckResult:
        fast, places = write_counters(ctx), location_summary(ctx)
        if not places["two_valued"] and places["locations"] == fast["values_seen"]:
            # Every location holds one value and there are as many values as locations: none is at two.
            return passed(self.id, f"no value at two offsets among {fast['values_seen']} values seen",
                          {"values_seen": fast["values_seen"], "duplicated_values": 0})
        stats = per_value_stats(ctx)
        seen = int(stats.get("values_seen") or 0)
        if not int(stats.get("duplicated_values") or 0):
            return passed(self.id, f"no value at two offsets among {seen} values seen",
                          {"values_seen": seen, "duplicated_values": 0})
        pv = per_value(ctx)
        dups = pv.where(F.col("loc_min").isNotNull() & (F.col("loc_min") != F.col("loc_max")))
        weighed = weigh(ctx, dups, _once_permit, topic_h="ack_topic_h", partition="ack_partition")
        return settle(self._failed(ctx, dups, seen, int(stats["duplicated_values"])), weighed.anomalies,
                      ("value at two offsets", "values at two offsets"),
                      lambda n: self._failed(ctx, weighed.violations(dups), seen, n))

    def _failed(self, ctx: CheckContext, dups: Any, seen: int, n: int) -> CheckResult:
        sample = [int(r["value"]) for r in dups.select("value").limit(EVIDENCE_ROWS // 2).collect()]
        ev = _rows_for_values(ctx, sorted(sample))[:EVIDENCE_ROWS]
        first = [r for r in ev if r["value"] == ev[0]["value"]]
        # Rows without an offset (an ack whose offset librdkafka did not report) cannot say where.
        located = [r for r in first if r.get("offset") is not None]
        where = " and ".join(f"{tp_label(r.get('topic'), r.get('partition'))}@{r['offset']}" for r in located[:3])
        summary = f"{plural(n, 'value')} appear at more than one offset, e.g. value {ev[0]['value']} at {where}"
        fault = ctx.faults.active_at(max(float(r.get("t") or 0.0) for r in first))
        return failed(self.id, summary, ev, {"values_seen": seen, "duplicated_values": n},
                      fault.label if fault else None)


class InconsistentOffsets:
    id = "delivery.inconsistent_offsets"
    family = "delivery"
    needs = frozenset({"poll"})

    def run(self, ctx: CheckContext) -> CheckResult:
        if not location_summary(ctx).get("two_valued"):
            # No (topic, partition, offset) was seen holding two values: nothing to confirm.
            return passed(self.id, "every observed offset holds one value", {"inconsistent_offsets": 0})
        bad = per_location(ctx).where(F.col("vmin") != F.col("vmax"))
        if not bad.limit(1).collect():
            return passed(self.id, "every observed offset holds one value", {"inconsistent_offsets": 0})
        # Permitted when the partition had an unclean election the topic allows, or either value's writer took
        # acknowledgements weaker than acks=all (a clean election truncates what only the old leader held).
        by_min = weigh(ctx, bad, _ack_permit, value="vmin")
        rest = by_min.violations(bad)
        by_max = weigh(ctx, rest, _ack_permit, value="vmax")
        anomalies = [a for a in by_min.anomalies if a[0] is not None] + by_max.anomalies
        return settle(self._failed(ctx, bad), anomalies, ("offset holding two values", "offsets holding two values"),
                      lambda _n: self._failed(ctx, by_max.violations(rest)))

    def _failed(self, ctx: CheckContext, bad: Any) -> CheckResult:
        sample = bad.limit(EVIDENCE_ROWS // 2).collect()
        n = bad.count()
        values = sorted({int(r["vmin"]) for r in sample} | {int(r["vmax"]) for r in sample})
        rows = [r for r in _rows_for_values(ctx, values)
                if any(r.get("partition") == s["partition"] and r.get("offset") == s["offset"] for s in sample)]
        rows.sort(key=lambda r: (str(r.get("topic")), r.get("partition", 0), r.get("offset", 0), r.get("seq", 0)))
        ev = rows[:EVIDENCE_ROWS]
        first = ev[0]
        holders = sorted({r["value"] for r in ev if r.get("partition") == first.get("partition")
                          and r.get("offset") == first.get("offset") and r.get("topic") == first.get("topic")})
        summary = (f"{plural(n, 'offset')} seen with two values, e.g. {tp_label(first['topic'], first['partition'])}"
                   f"@{first['offset']} holds {' and '.join(map(str, holders))}")
        fault = ctx.faults.active_at(max(float(r.get("t") or 0.0) for r in ev))
        return failed(self.id, summary, ev, {"inconsistent_offsets": n}, fault.label if fault else None)


class KeyOrder:
    id = "delivery.key_order"
    family = "delivery"
    needs = frozenset({"send", "ack"})
    PASS = "every key's acked writes are in send order within their partition"

    def run(self, ctx: CheckContext) -> CheckResult:
        fast = write_counters(ctx)
        one_ack_each = ctx.count("ack") == fast.get("ack_seen") and fast.get("acked_unsent") == 0
        if one_ack_each and acks_in_value_order(ctx):
            # Value order is send order here, so ordering each key's acks by value is enough.
            return passed(self.id, self.PASS, {"reordered": 0})
        pv = keyed_acks(ctx)
        w = Window.partitionBy("pk_h", "ack_topic_h", "ack_partition").orderBy("send_seq")
        pairs = (pv.select("send_seq", "ack_seq", "ack_offset", "value", "ack_topic_h", "ack_partition",
                           F.lag("ack_offset").over(w).alias("prev_offset"),
                           F.lag("ack_seq").over(w).alias("prev_ack_seq"))
                 .where(F.col("prev_offset").isNotNull() & (F.col("ack_offset") <= F.col("prev_offset"))))
        if not pairs.limit(1).collect():
            return passed(self.id, self.PASS, {"reordered": 0})
        weighed = weigh(ctx, pairs, _order_permit, topic_h="ack_topic_h", partition="ack_partition")
        return settle(self._failed(ctx, pairs), weighed.anomalies,
                      ("write stored out of key order", "writes stored out of key order"),
                      lambda _n: self._failed(ctx, weighed.violations(pairs)))

    def _failed(self, ctx: CheckContext, pairs: Any) -> CheckResult:
        sample = pairs.limit(EVIDENCE_ROWS // 2).collect()
        n = pairs.count()
        rows = events_by_seq(ctx, [int(r["ack_seq"]) for r in sample] + [int(r["prev_ack_seq"]) for r in sample])
        ev: list[dict[str, Any]] = []
        for r in sorted(sample, key=lambda r: r["send_seq"]):
            before, after = rows.get(int(r["prev_ack_seq"]), {}), rows.get(int(r["ack_seq"]), {})
            ev.append(_ev(before, problem="sent first"))
            ev.append(_ev(after, problem=f"sent later, stored before (offset {r['ack_offset']} <= {r['prev_offset']})"))
        first = ev[1]
        summary = (f"{plural(n, 'write')} stored out of send order for their key, e.g. key {first.get('key')!r} of "
                   f"{first.get('producer')}: value {first.get('value')} at offset {first.get('offset')} after value "
                   f"{ev[0].get('value')} at {ev[0].get('offset')}")
        fault = ctx.faults.active_at(float(first.get("t") or 0.0))
        return failed(self.id, summary, ev, {"reordered": n}, fault.label if fault else None)
