"""Controller checks (KAFKA-BEHAVIOUR.md §7.1, §7.2), in Python over the few controller events.

- `controller.unique`: at most one controller broker per controller epoch, and every controller
  is a registered live broker at the time it is seen (within the liveness grace).
- `controller.epoch_monotonic`: per observer, the epoch never decreases, and it increases by at
  least one at every controller change (a different broker, or the same one after a gap).
"""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.common import evidence, plural
from spark_analysis.checks.liveness import build_liveness
from spark_analysis.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed, unknown


class ControllerUnique:
    id = "controller.unique"
    family = "controller"
    needs = frozenset({"controller"})

    def run(self, ctx: CheckContext) -> CheckResult:
        events = ctx.rows("controller")
        live = build_liveness(ctx.rows("broker.up", "broker.down"))
        by_epoch: dict[int, dict[int, dict[str, Any]]] = {}
        bad: list[dict[str, Any]] = []
        not_live: list[dict[str, Any]] = []
        for ev in events:
            broker = ev.get("broker")
            if broker is None or broker < 0:
                continue
            if ev.get("epoch") is not None:
                seen = by_epoch.setdefault(int(ev["epoch"]), {})
                if broker not in seen and seen:
                    first = next(iter(seen.values()))
                    bad.append(evidence(first, problem=f"epoch {ev['epoch']} also held by {broker}"))
                    bad.append(evidence(ev, problem=f"second controller {broker} in epoch {ev['epoch']}"))
                seen.setdefault(broker, ev)
            if live.known and not live.ever_up_near(int(broker), float(ev.get("t") or 0.0)):
                not_live.append(evidence(ev, problem=f"controller {broker} is not a registered live broker"))
        metrics = {"controller_events": len(events), "epochs": len(by_epoch), "shared_epochs": len(bad) // 2,
                   "controllers_not_live": len(not_live)}
        if bad or not_live:
            parts = []
            if bad:
                parts.append(f"{plural(len(bad) // 2, 'epoch')} held by two controllers")
            if not_live:
                parts.append(f"{plural(len(not_live), 'controller event')} naming a broker not registered")
            t = float((bad or not_live)[0].get("t") or 0.0)
            fault = ctx.faults.active_at(t)
            summary = "; ".join(parts) + (f" during {fault.label}" if fault else "")
            return failed(self.id, summary, bad + not_live, metrics, fault.label if fault else None)
        if not by_epoch and not live.known:
            return unknown(self.id, "no controller event carries an epoch and no broker registrations seen",
                           metrics)
        note = "" if live.known else " (no broker.up/down events: liveness not checked)"
        return passed(self.id, f"one controller per epoch across {plural(len(by_epoch), 'epoch')}{note}",
                      metrics)


class ControllerEpochMonotonic:
    id = "controller.epoch_monotonic"
    family = "controller"
    needs = frozenset({"controller"})

    def run(self, ctx: CheckContext) -> CheckResult:
        events = [e for e in ctx.rows("controller") if e.get("epoch") is not None]
        if not events:
            return unknown(self.id, "no controller event carries an epoch")
        bad: list[dict[str, Any]] = []
        changes = 0
        last: dict[str, dict[str, Any]] = {}
        gap: dict[str, bool] = {}
        for ev in ctx.rows("controller"):
            src = str(ev.get("src"))
            broker = ev.get("broker")
            if broker is None or broker < 0:
                gap[src] = True
                continue
            if ev.get("epoch") is None:
                continue
            prev = last.get(src)
            if prev is not None:
                changed = prev["broker"] != broker or gap.get(src, False)
                if ev["epoch"] < prev["epoch"]:
                    bad.append(evidence(prev))
                    bad.append(evidence(ev, problem=f"epoch went back {prev['epoch']} -> {ev['epoch']}"))
                elif changed and ev["epoch"] <= prev["epoch"]:
                    bad.append(evidence(prev))
                    bad.append(evidence(ev, problem=f"controller changed {prev['broker']} -> {broker} "
                                                    f"without a new epoch ({ev['epoch']})"))
                changes += int(changed)
            last[src] = ev
            gap[src] = False
        metrics = {"controller_events": len(events), "controller_changes": changes,
                   "violations": len(bad) // 2, "max_epoch": max(int(e["epoch"]) for e in events)}
        if bad:
            fault = ctx.faults.active_at(float(bad[1].get("t") or 0.0))
            summary = f"{plural(len(bad) // 2, 'epoch violation')}: {bad[1]['problem']}"
            if fault:
                summary += f" during {fault.label}"
            return failed(self.id, summary, bad, metrics, fault.label if fault else None)
        return passed(self.id, f"epoch never decreased over {plural(changes, 'controller change')}", metrics)
