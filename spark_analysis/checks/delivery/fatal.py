"""`delivery.fatal_error`: no producer was ended by a fatal client error (KAFKA-BEHAVIOUR.md R9).

librdkafka raises a fatal error when an idempotent producer can no longer keep its promises: a broker answered
OUT_OF_ORDER_SEQUENCE_NUMBER where no gap could arise, or fenced its epoch. On a cluster that keeps the producer
state it promises, that needs acknowledged data to have been lost (an unclean election, which the partition and
delivery checks judge too), or the cluster's producer-id and sequence bookkeeping to be broken (two sessions
given one producer id: the reference broker's `reuse_producer_ids`). The producer sends nothing after it and the
run goes on without it, so no other check sees it: the stall SLOs measure sends that were made.

A transactional producer's fence is recorded as `txn.fenced`, not as a `client.error`: Kafka fences a producer
whose transaction stayed open past `transaction.timeout.ms` (the coordinator aborts it and bumps the epoch;
KAFKA-BEHAVIOUR.md T8), and the workload goes on with a new session. That fence is explained when the fenced
transaction had been open at least `timeout_ms` by the client's clock (the coordinator's clock for it starts
later, at its first AddPartitionsToTxn), or when a fault stepped a broker's wall clock ahead while it was open: the
coordinator measures the timeout on its wall clock (`TransactionStateManager.timedOutTransactions`:
`txnStartTimestamp + txnTimeoutMs < time.milliseconds()`), so a step ahead makes ongoing transactions due at once
(seen with `experiments/clock-skew.yaml`). A fence with no transaction open, or one open for less with no clock
step, is nothing Kafka promises: it fails here like any other fatal error.

Fails on each `client.error` with `fatal: true` (or librdkafka's `_FATAL` code) from a producer
(`src: producer:<id>`), and on each unexplained `txn.fenced`, naming the producer, the error and librdkafka's
reason, and the fault in force. Fatal errors of consumers are not judged here (librdkafka raises none for a
classic-protocol consumer).
"""

from __future__ import annotations

from spark_analysis.checks.shared.common import plural
from spark_analysis.checks.shared.damage import Depends
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.faults import ATTRIBUTION_GRACE_S, FaultIndex
from spark_analysis.result import CheckResult, failed, passed

FATAL = "_FATAL"
"""The error code librdkafka's error callback reports a fatal error with (`RD_KAFKA_RESP_ERR__FATAL`)."""


class FatalError:
    id = "delivery.fatal_error"
    family = "delivery"
    needs = frozenset({"send"})
    """Producers ran: without them there is nothing to judge."""

    # a lost client.error line hides a producer's fatal error: a pass could be wrong, a failure could not
    damage = Depends(frozenset({"client.error", "txn.fenced"}))

    def run(self, ctx: CheckContext) -> CheckResult:
        rows = ctx.rows("client.error", "txn.fenced")
        by_timeout = [r for r in rows if _unexplained(r)]
        by_clock = [r for r in by_timeout if _clock_stepped_ahead(ctx.faults, r)]
        explained = {id(r) for r in by_clock}
        fatal = [r for r in by_timeout if id(r) not in explained]
        fences = [r for r in rows if r.get("type") == "txn.fenced"]
        stepped = len(by_clock)
        metrics = {"fatal_errors": len(fatal), "producers_ended": len({r.get("src") for r in fatal}),
                   "fenced_after_timeout": len(fences) - sum(1 for r in fatal if r.get("type") == "txn.fenced"),
                   "fenced_by_clock_step": stepped}
        if not fatal:
            after = (f"; {plural(metrics['fenced_after_timeout'], 'transactional session')} fenced after a "
                     "transaction outlived transaction.timeout.ms (as Kafka does)") if fences else ""
            after += (f", {stepped} of them on a coordinator's clock stepped ahead by a fault" if stepped else "")
            return passed(self.id, f"no producer was ended by a fatal client error{after}", metrics)
        first = fatal[0]
        who = str(first.get("src")).removeprefix("producer:")
        fault = ctx.faults.active_at(float(first.get("t") or 0.0))
        evidence = [{"seq": r.get("seq"), "t": r.get("t"), "src": r.get("src"), "type": r.get("type"),
                     "error": r.get("error"), "problem": _reason(r)} for r in fatal]
        reason = _reason(first)
        summary = (f"{plural(metrics['producers_ended'], 'producer')} ended by a fatal error: {who}: {reason}"
                   + (f" during {fault.label}" if fault else ""))
        return failed(self.id, summary, evidence, metrics, fault.label if fault else None)


def _clock_stepped_ahead(faults: FaultIndex, row: dict[str, object]) -> bool:
    """Whether a fault stepped a wall clock ahead while the fenced transaction was open (its coordinator's clock then
    counts it timed out at once; which broker coordinated it is not known here, so any step ahead explains it)."""
    open_ms = row.get("open_ms")
    if row.get("type") != "txn.fenced" or not isinstance(open_ms, int):
        return False
    t = float(row.get("t") or 0.0)  # type: ignore[arg-type]
    opened = t - open_ms / 1000.0
    return any(w.effect.steps_a_clock_ahead and w.start <= t
               and (w.end is None or w.end + ATTRIBUTION_GRACE_S >= opened) for w in faults.windows)


def _unexplained(row: dict[str, object]) -> bool:
    """A producer's fatal `client.error`, or a `txn.fenced` that no transaction timeout explains."""
    if row.get("type") == "txn.fenced":
        open_ms, timeout_ms = row.get("open_ms"), row.get("timeout_ms")
        return not (isinstance(open_ms, int) and isinstance(timeout_ms, int) and open_ms >= timeout_ms)
    return str(row.get("src") or "").startswith("producer:") and bool(row.get("fatal") or row.get("error") == FATAL)


def _reason(row: dict[str, object]) -> str:
    """`OUT_OF_ORDER_SEQUENCE_NUMBER: ProduceRequest for t [1] ...` (librdkafka's `_FATAL` code says nothing); a
    fence says how long its transaction had been open."""
    error, detail = str(row.get("error") or ""), str(row.get("error_detail") or "")
    text = detail if error in ("", FATAL) else f"{error}: {detail}" if detail else error
    if row.get("type") == "txn.fenced":
        opened = row.get("open_ms")
        return (f"fenced with no transaction open: {text}" if opened is None else
                f"fenced after its transaction was open {opened} ms, within transaction.timeout.ms "
                f"({row.get('timeout_ms')} ms): {text}")
    return text
