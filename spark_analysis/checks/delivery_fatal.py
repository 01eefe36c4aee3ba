"""`delivery.fatal_error`: no producer was ended by a fatal client error (KAFKA-BEHAVIOUR.md R9).

librdkafka raises a fatal error when an idempotent producer can no longer keep its promises: a broker answered
OUT_OF_ORDER_SEQUENCE_NUMBER where no gap could arise, or fenced its epoch. On a cluster that keeps the producer
state it promises, that needs acknowledged data to have been lost (an unclean election, which the partition and
delivery checks judge too), or the cluster's producer-id and sequence bookkeeping to be broken (two sessions
given one producer id: the reference broker's `reuse_producer_ids`). The producer sends nothing after it and the
run goes on without it, so no other check sees it: the stall SLOs measure sends that were made.

Fails on each `client.error` with `fatal: true` (or librdkafka's `_FATAL` code) from a producer
(`src: producer:<id>`), naming the producer, the error and librdkafka's reason, and the fault in force. Fatal
errors of consumers are not judged here (librdkafka raises none for a classic-protocol consumer).
"""

from __future__ import annotations

from spark_analysis.checks.common import plural
from spark_analysis.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed

FATAL = "_FATAL"
"""The error code librdkafka's error callback reports a fatal error with (`RD_KAFKA_RESP_ERR__FATAL`)."""


class FatalError:
    id = "delivery.fatal_error"
    family = "delivery"
    needs = frozenset({"send"})
    """Producers ran: without them there is nothing to judge."""

    def run(self, ctx: CheckContext) -> CheckResult:
        fatal = [r for r in ctx.rows("client.error")
                 if str(r.get("src") or "").startswith("producer:") and (r.get("fatal") or r.get("error") == FATAL)]
        metrics = {"fatal_errors": len(fatal), "producers_ended": len({r.get("src") for r in fatal})}
        if not fatal:
            return passed(self.id, "no producer was ended by a fatal client error", metrics)
        first = fatal[0]
        who = str(first.get("src")).removeprefix("producer:")
        fault = ctx.faults.active_at(float(first.get("t") or 0.0))
        evidence = [{"seq": r.get("seq"), "t": r.get("t"), "src": r.get("src"), "type": "client.error",
                     "error": r.get("error"), "problem": _reason(r)} for r in fatal]
        reason = _reason(first)
        summary = (f"{plural(metrics['producers_ended'], 'producer')} ended by a fatal error: {who}: {reason}"
                   + (f" during {fault.label}" if fault else ""))
        return failed(self.id, summary, evidence, metrics, fault.label if fault else None)


def _reason(row: dict[str, object]) -> str:
    """`OUT_OF_ORDER_SEQUENCE_NUMBER: ProduceRequest for t [1] ...` (librdkafka's `_FATAL` code says nothing)."""
    error, detail = str(row.get("error") or ""), str(row.get("error_detail") or "")
    return detail if error in ("", FATAL) else f"{error}: {detail}" if detail else error
