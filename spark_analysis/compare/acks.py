"""Producers' ack stalls per fault window, in Spark (send and ack events can number millions).

Owns the fault windows on the history clock (`fault_segments`) and `ack_stalls`. A fault's window
is every moment `FaultIndex.active_at` attributes to it: from its start until its end plus the
attribution grace, minus the moments a later fault takes over (so each moment belongs to at most
one fault, as it does for the checks' summaries). A value's wait runs from its first send to its
first ack (the per-value frame `checks.shared.frames.per_value`, shared with the delivery checks); per
fault and acked partition, the longest wait that overlaps the window is the stall. Sends made
within the window that got no ack are counted apart: unanswered (no ack, no error) or errored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from pyspark.sql import functions as F

from spark_analysis.checks.shared.common import tp_label
from spark_analysis.checks.shared.frames import per_value, topic_hash
from spark_analysis.compare.facts import AckStall
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.faults import ATTRIBUTION_GRACE_S, FaultIndex
from spark_analysis.session.local_frame import local_frame


@dataclass(frozen=True, slots=True)
class Segment:
    """[lo, hi] on the history clock, attributed to fault `fault_id`."""

    fault_id: str
    lo: float
    hi: float


@dataclass(frozen=True, slots=True)
class FaultAcks:
    """What `ack_stalls` found for one fault."""

    stalls: tuple[AckStall, ...] = ()
    unanswered: int = 0
    errored: int = 0


def fault_segments(faults: FaultIndex, end_t: float, grace: float = ATTRIBUTION_GRACE_S) -> list[Segment]:
    """The stretches of time `faults.active_at` attributes to each fault, contiguous ones merged."""
    windows = faults.windows
    points = sorted({w.start for w in windows}
                    | {(w.end if w.end is not None else max(end_t, w.start)) + grace for w in windows})
    out: list[Segment] = []
    for lo, hi in pairwise(points):
        owner = faults.active_at((lo + hi) / 2.0, grace)
        if owner is None:
            continue
        if out and out[-1].fault_id == owner.fault_id and out[-1].hi == lo:
            out[-1] = Segment(owner.fault_id, out[-1].lo, hi)
        else:
            out.append(Segment(owner.fault_id, lo, hi))
    return out


def ack_stalls(ctx: CheckContext, segments: list[Segment], topics: Iterable[str]) -> dict[str, FaultAcks]:
    """Per fault id: the ack stall per partition (longest first) and the unanswered/errored sends.

    `topics` names the topics to label partitions with (the per-value frame keeps topic hashes);
    an ack on a topic not among them is labelled `topic#<hash>`. Needs Spark and send events.
    """
    if ctx.spark is None or ctx.events is None or not segments or ctx.count("send") == 0:
        return {}
    windows = local_frame(ctx.spark, [(s.fault_id, s.lo, s.hi) for s in segments],
                          "fault_id string, lo double, hi double")
    names = local_frame(ctx.spark, [(t,) for t in sorted(set(topics))], "topic string").select(
        topic_hash().alias("ack_topic_h"), "topic")
    acked = F.col("acked") == 1
    pv = per_value(ctx).where(F.col("sent") == 1).select(
        "value", "send_t", "ack_t", "ack_topic_h", "ack_partition", "acked", "errored",
        (F.col("ack_t") - F.col("send_t")).alias("wait"))
    overlaps = (F.col("send_t") <= F.col("hi")) & (
        (acked & (F.col("ack_t") >= F.col("lo"))) | (~acked & (F.col("send_t") >= F.col("lo"))))
    rows = (pv.join(F.broadcast(windows), overlaps)
            .groupBy("fault_id", "ack_topic_h", "ack_partition")
            .agg(F.max(F.when(acked, F.col("wait"))).alias("max_wait"),
                 F.count_distinct(F.when(acked, F.col("value"))).alias("acks"),
                 F.max_by(F.when(acked, F.col("value")), F.when(acked, F.col("wait"))).alias("value"),
                 F.max_by(F.when(acked, F.col("send_t")), F.when(acked, F.col("wait"))).alias("send_t"),
                 F.count_distinct(F.when(~acked & (F.col("errored") == 0), F.col("value"))).alias("unanswered"),
                 F.count_distinct(F.when(~acked & (F.col("errored") == 1), F.col("value"))).alias("errored"))
            .join(F.broadcast(names), "ack_topic_h", "left")
            .collect())
    stalls: dict[str, list[AckStall]] = {}
    unanswered: dict[str, int] = {}
    errored: dict[str, int] = {}
    for r in rows:
        fid = str(r["fault_id"])
        unanswered[fid] = unanswered.get(fid, 0) + int(r["unanswered"] or 0)
        errored[fid] = errored.get(fid, 0) + int(r["errored"] or 0)
        if r["max_wait"] is None:
            continue
        topic = r["topic"] if r["topic"] is not None else f"topic#{r['ack_topic_h']}"
        stalls.setdefault(fid, []).append(AckStall(
            partition=tp_label(topic, r["ack_partition"]), max_wait_s=float(r["max_wait"]), acks=int(r["acks"]),
            value=None if r["value"] is None else int(r["value"]),
            send_t=None if r["send_t"] is None else float(r["send_t"])))
    return {fid: FaultAcks(tuple(sorted(stalls.get(fid, []), key=lambda s: (-s.max_wait_s, s.partition))),
                           unanswered.get(fid, 0), errored.get(fid, 0))
            for fid in {*stalls, *unanswered}}
