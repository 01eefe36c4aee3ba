"""`txn.verification_retriable`: transaction verification answers with errors clients retry (KAFKA-BEHAVIOUR.md T9).

KIP-890 part 1 (Kafka 3.6) has a partition leader ask the transaction coordinator whether a transactional produce
(and a TxnOffsetCommit) belongs to an ongoing transaction before it appends. For clients that predate it, the
retriable errors of that verification are converted into errors they already retry: NOT_ENOUGH_REPLICAS on the
Produce path, COORDINATOR_LOAD_IN_PROGRESS (KIP-890 says COORDINATOR_NOT_AVAILABLE) on TxnOffsetCommit. So a
valid transaction's write never fails because the leader could not reach the coordinator for a moment.
NETWORK_EXCEPTION is the client's own word for "the server disconnected before a response was received"
(`Errors.NETWORK_EXCEPTION`); no broker answers a request with it, except Kafka 3.6.0-3.7.0, which passed the
verification's lost connection through unconverted (KAFKA-16386, fixed in 3.7.1 and 3.8.0): librdkafka and the
Java client take it as a failed write and the transaction must abort.

Fails on each `send.error` of a transactional producer or pipeline (one with `txn`) whose error is
NETWORK_EXCEPTION, and each transaction end (`txn.commit`, `txn.abort`) that failed with it; librdkafka reports its
own lost connections as `_TRANSPORT`, never with Kafka's code 13. Passes when no transactional producer ran.
"""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.shared.common import evidence, plural
from spark_analysis.checks.shared.damage import TXN_LINES, Depends
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed

NETWORK_EXCEPTION = "NETWORK_EXCEPTION"
ENDS = ("txn.commit", "txn.abort")


class VerificationRetriable:
    id = "txn.verification_retriable"
    family = "txn"
    needs = frozenset({"send"})

    # a lost pipe.read line makes a committed offset look past what was read; a lost output line (send, ack,
    # send.error) an input look lost
    # a write or commit failed with NETWORK_EXCEPTION is proven by its intact line: no lost line can produce it
    damage = Depends(frozenset({"send.error"}) | TXN_LINES)

    def run(self, ctx: CheckContext) -> CheckResult:
        begun = ctx.count("txn.begin")
        errors = [r for r in ctx.rows("send.error") if r.get("txn") is not None]
        ends = ctx.rows(*ENDS)
        bad = sorted([r for r in (*errors, *ends) if r.get("error") == NETWORK_EXCEPTION],
                     key=lambda r: (float(r.get("t") or 0.0), r.get("seq") or 0))
        metrics = {"transactions": begun, "transactional_send_errors": len(errors),
                   "network_exceptions": len(bad)}
        if not begun:
            return passed(self.id, "no transactional producer ran (nothing to judge)", metrics)
        if not bad:
            return passed(self.id, f"no transactional write failed with {NETWORK_EXCEPTION} over "
                                   f"{plural(begun, 'transaction')}", metrics)
        first = bad[0]
        fault = ctx.faults.active_at(float(first.get("t") or 0.0))
        rows: list[dict[str, Any]] = [evidence(r, problem=f"{r.get('type')} of {r.get('producer')} failed with "
                                                          f"{NETWORK_EXCEPTION}: {r.get('error_detail') or ''}".strip())
                                      for r in bad]
        writes = sum(1 for r in bad if r.get("type") == "send.error")
        summary = (f"{plural(writes, 'transactional write')} and {plural(len(bad) - writes, 'transaction end')} "
                   f"failed with {NETWORK_EXCEPTION}, an error the broker must convert into one clients retry "
                   f"(first at {float(first.get('t') or 0.0):.3f}s)" + (f" during {fault.label}" if fault else ""))
        return failed(self.id, summary, rows, metrics, fault.label if fault else None)
