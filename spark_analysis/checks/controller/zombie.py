"""The zombie that names itself controller (KAFKA-BEHAVIOUR.md §1, rule C3 of §9), for `controller.unique`.

In ZooKeeper mode a controller cut off from ZooKeeper keeps believing it is the controller: its
ZooKeeper client only learns that the session expired when it reaches the ensemble again
(`KafkaController` handles the `Expire` event then, `onControllerResignation`). Meanwhile the other
brokers elect a new controller in a higher epoch and fence the old one's requests by epoch. So a broker
whose own Metadata answer (`controller.view`, the Metadata observer) names ITSELF while ZooKeeper's
`/controller` names another broker elected after it is what Apache Kafka does only while that broker is
cut off (a fault on it is in force), and for a short while after the cut heals (`ZOMBIE_GRACE_S`: it
reconnects, learns of the expiry, resigns, and the new controller's UpdateMetadata reaches it). Any
other self-named view means two brokers act as controller at once: a violation.

The stale-view rule (`controller.stale_views`) cannot see this: the zombie's views never go back, they
stay on its own epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spark_analysis.checks.shared.common import evidence
from spark_analysis.facts.faults import FaultIndex

ZOMBIE_GRACE_S = 10.0
"""How long after the cut heals a former controller may still name itself."""
NOTICE_S = 3.0
"""How long one observer may lag the other (skew): a broker's own answer after ZooKeeper names a new
controller, or ZooKeeper's `/controller` event after the new controller already names itself (seen: the
Metadata observer 1 ms ahead of the ZooKeeper observer's record of the same election)."""


def _controller_view(view: dict[str, Any]) -> int | None:
    value = view.get("controller", view.get("leader"))
    return int(value) if value is not None else None


def zombie_self_views(controllers: Sequence[dict[str, Any]], views: Sequence[dict[str, Any]], faults: FaultIndex,
                      horizon: float) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Evidence rows of self-named controller views that ZooKeeper contradicts outside a cut-off, and counts
    (`self_named_after_failover`: all such views; `zombie_views_allowed`: those while cut off or within the grace).
    Each violation gives the new controller's election, then the view with a `problem`."""
    elections = sorted((e for e in controllers if e.get("epoch") is not None and e.get("broker") is not None
                        and int(e["broker"]) >= 0), key=lambda e: float(e.get("t") or 0.0))
    rows: list[dict[str, Any]] = []
    contradicted = allowed = 0
    for view in views:
        broker, named = view.get("broker"), _controller_view(view)
        if broker is None or named != int(broker):
            continue
        t = float(view.get("t") or 0.0)
        before = [e for e in elections if float(e.get("t") or 0.0) <= t - NOTICE_S]
        if not before or int(before[-1]["broker"]) == named:
            continue
        newest = before[-1]
        if any(int(e["broker"]) == named and float(newest.get("t") or 0.0) < float(e.get("t") or 0.0) <= t + NOTICE_S
               for e in elections):
            continue  # elected since, or just after: the ZooKeeper observer may record it after the broker says so
        contradicted += 1
        if _cut_off(faults, named, t, horizon):
            allowed += 1
            continue
        rows.append(evidence(newest))
        rows.append(evidence(view, controller=named, problem=(
            f"broker {named} named itself controller {t - float(newest.get('t') or 0.0):.1f}s after ZooKeeper "
            f"elected broker {newest['broker']} (epoch {newest['epoch']}), and no fault cut it off")))
    return rows, {"self_named_after_failover": contradicted, "zombie_views_allowed": allowed}


def _cut_off(faults: FaultIndex, broker: int, t: float, horizon: float) -> bool:
    """A fault that took `broker` away (stopped it or cut it off) in force at t, or healed less than
    ZOMBIE_GRACE_S before t."""
    return any(w.effect.takes_away(broker, ("broker",)) and w.contains(t, ZOMBIE_GRACE_S, horizon)
               for w in faults.windows)
