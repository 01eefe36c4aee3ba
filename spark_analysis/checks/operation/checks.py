"""The operation family: `operation.completes`.

Every scheduled operation (`action:` entries: reassign, elect_preferred) must finish within its timeout.
A reassignment is done when none of its partitions has a move pending and Metadata lists the new
replica lists; a preferred election when the controller answered (per-partition answers such as
`PREFERRED_LEADER_NOT_AVAILABLE` are results, judged by `partition.election_conforms`). A timeout is
the cluster's failure to finish: fail. An error means the harness could not carry the operation out
(refused, or cut short by the run's end): unknown, never pass. A run without operations passes with
nothing to judge.
"""

from __future__ import annotations

from collections import Counter

from spark_analysis.checks.shared.common import plural
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed, unknown


class OperationCompletes:
    id = "operation.completes"
    family = "operation"
    needs = frozenset({"phase"})
    """The engine's own record of the run: without it, whether operations ran cannot be told."""

    def run(self, ctx: CheckContext) -> CheckResult:
        ops = ctx.operations.windows
        outcomes = Counter(w.outcome or "unfinished" for w in ops)
        metrics = {"operations": len(ops), "by_outcome": dict(outcomes),
                   "by_action": dict(Counter(w.action for w in ops)),
                   "longest_s": round(max(((w.end or ctx.end_t) - w.start for w in ops), default=0.0), 3)}
        if not ops:
            return passed(self.id, "no operation in the run (nothing to judge)", metrics)
        late = [w for w in ops if w.outcome == "timeout"]
        if late:
            first = late[0]
            evidence = [{"type": "op.end", "t": w.end, "op_id": w.op_id, "action": w.action, "topic": w.topic,
                         "outcome": w.outcome, "problem": f"{w.label} did not finish: {w.detail}"} for w in late]
            return failed(self.id, f"{plural(len(late), 'operation')} did not finish within the timeout: "
                                   f"{first.label}: {first.detail}", evidence, metrics)
        broken = [w for w in ops if w.outcome != "done"]
        if broken:
            first = broken[0]
            why = first.detail or "no op.end: the run ended while it ran"
            return unknown(self.id, f"{plural(len(broken), 'operation')} could not be carried out: "
                                    f"{first.label}: {why}", metrics)
        return passed(self.id, f"all {plural(len(ops), 'operation')} finished "
                               f"(longest {metrics['longest_s']:.1f}s)", metrics)
