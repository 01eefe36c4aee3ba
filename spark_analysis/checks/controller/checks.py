"""Controller checks (KAFKA-BEHAVIOUR.md §7.1, §7.2), in Python over the few controller events.

- `controller.unique`: at most one controller broker per controller epoch (per source: ZooKeeper's epochs and the
  quorum's Raft epochs count apart, and a migration has both), every controller
  is a registered live broker at the time it is seen (within the liveness grace), and no broker
  names itself controller after ZooKeeper elected another unless a fault cut it off
  (`controller.zombie`: the zombie that names itself, which Apache Kafka allows only while cut off). In KRaft the
  controller events come from the quorum observer (src `quorum`: the quorum leader's node id and
  its Raft epoch), and the controller is a Raft voter, which need not be a broker (dedicated
  controllers have ids 101..): for those events "live" means a live voter instead
  (`liveness.VoterLiveness`): it fails only when a kill, stop or pause fault had taken the voter
  down for the whole grace before the event and the voter did not answer the quorum observer
  within the grace; a voter neither seen answering nor taken down is counted as unconfirmed, not
  failed (a follower that answers without change emits nothing, so silence proves nothing).
  One leader per epoch carries over unchanged with the quorum's epochs.
- `controller.epoch_monotonic`: per observer, the epoch never decreases, and it increases by at
  least one at every controller change (a different broker, or the same one after a gap). It
  also owns the per-broker rule over `controller.view` events (the Metadata observer's answer of
  each broker: which controller that broker obeys): each view is given the epoch of the latest
  ZooKeeper `controller` event naming its controller at or before the view (plus
  `VIEW_EPOCH_TOLERANCE_S` for observer latency, so a legit re-election of the same broker is not
  read as its old epoch), and per answering broker those epochs must never decrease. A broker
  that named the controller of epoch 2 and then names the controller of epoch 1 obeys a stale
  (zombie) controller. This rule lives here, not in `controller.unique`, because what breaks is
  the epoch order a broker follows (a fenced epoch accepted after a newer one), not the number of
  controllers per epoch: the zombie's epoch still has one controller. Without views the rule is
  simply not applied; views whose controller no epoch-carrying event names are skipped. In KRaft
  the quorum epochs are judged the same way (per source, so per the quorum observer's stream);
  there are no views (the Metadata observer does not run).
"""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.controller.zombie import zombie_self_views
from spark_analysis.checks.shared.common import evidence, plural
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.liveness import (
    LIVENESS_TYPES,
    authoritative,
    build_liveness,
    build_voter_liveness,
    controller_events,
)
from spark_analysis.result import CheckResult, failed, passed, unknown

VIEW_EPOCH_TOLERANCE_S = 1.0
"""How long after a view a ZooKeeper `controller` event may be stamped and still count for it."""
QUORUM_SOURCE = "quorum"
"""The source of KRaft's controller events: the quorum leader, a voter rather than a broker."""


def view_controller(view: dict[str, Any]) -> int | None:
    """The controller a `controller.view` names (`leader` in histories written before the schema had `controller`)."""
    value = view.get("controller")
    if value is None:
        value = view.get("leader")
    return int(value) if value is not None else None


def stale_views(controllers: list[dict[str, Any]], views: list[dict[str, Any]],
                tolerance_s: float = VIEW_EPOCH_TOLERANCE_S) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Evidence rows of views whose controller's epoch is lower than one the same broker named before.

    Per violation: the broker's earlier view, the ZooKeeper event giving its epoch, the stale view,
    and the ZooKeeper event giving the stale epoch (each ZooKeeper event once). The first row with a
    `problem` is the first stale view. Also returns metrics (views, mapped views, stale views).
    """
    elections = [e for e in controllers
                 if e.get("epoch") is not None and e.get("broker") is not None and int(e["broker"]) >= 0]
    best: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # broker -> (view, election) of its max epoch
    rows: list[dict[str, Any]] = []
    shown: set[int] = set()
    mapped = stale = 0

    def election_row(ev: dict[str, Any]) -> None:
        if id(ev) not in shown:
            shown.add(id(ev))
            rows.append(evidence(ev))

    for view in views:
        controller, broker = view_controller(view), view.get("broker")
        if controller is None or controller < 0 or broker is None:
            continue
        t = float(view.get("t") or 0.0)
        named = [e for e in elections if e["broker"] == controller and float(e.get("t") or 0.0) <= t + tolerance_s]
        if not named:
            continue
        mapped += 1
        election = max(named, key=lambda e: float(e.get("t") or 0.0))
        epoch = int(election["epoch"])
        prev = best.get(int(broker))
        if prev is not None and epoch < int(prev[1]["epoch"]):
            stale += 1
            before, before_election = prev
            election_row(before_election)
            rows.append(evidence(before, controller=view_controller(before), named_epoch=int(before_election["epoch"])))
            election_row(election)
            rows.append(evidence(view, controller=controller, named_epoch=epoch,
                                 problem=f"broker {broker} named controller {controller} (epoch {epoch}) after "
                                         f"controller {view_controller(before)} (epoch {before_election['epoch']})"))
            continue
        best[int(broker)] = (view, election)
    return rows, {"controller_views": len(views), "views_with_epoch": mapped, "stale_views": stale}


class ControllerUnique:
    id = "controller.unique"
    family = "controller"
    needs = frozenset({"controller"})

    def run(self, ctx: CheckContext) -> CheckResult:
        events = ctx.rows("controller")
        # registrations and controllers as the election check reads them: ZooKeeper's own where it reported any, not
        # the AdminClient's answers, which come from a broker's cache and lag (3.9.2, weak-isr under explore: broker
        # 2 registered again at 13.02 s, an answer from broker 3's cache at 13.36 s still lacked it, and ZooKeeper's
        # election of broker 2 as controller at 19.71 s was judged "not a registered live broker"; recorded
        # zk-3.9.2-coalesced-offline-replica-steps: an answer naming controller 3 while ZooKeeper had lost it)
        registrations = authoritative(ctx.rows(*LIVENESS_TYPES))
        live = build_liveness(registrations)
        claims = {id(ev) for ev in controller_events(events)}
        voters = build_voter_liveness(ctx.rows("quorum.state"), ctx.faults)
        # per source: ZooKeeper's controller epochs and the quorum's Raft epochs are two counters, and a migration
        # has both (make test, 3.9.2: ZooKeeper epoch 1 held by broker 2, the quorum's epoch 1 by controller 101)
        by_epoch: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
        bad: list[dict[str, Any]] = []
        not_live: list[dict[str, Any]] = []
        voter_events = unconfirmed = 0
        for ev in events:
            broker = ev.get("broker")
            if broker is None or broker < 0:
                continue
            if ev.get("epoch") is not None:
                seen = by_epoch.setdefault((str(ev.get("src")), int(ev["epoch"])), {})
                if broker not in seen and seen:
                    first = next(iter(seen.values()))
                    bad.append(evidence(first, problem=f"epoch {ev['epoch']} also held by {broker}"))
                    bad.append(evidence(ev, problem=f"second controller {broker} in epoch {ev['epoch']}"))
                seen.setdefault(broker, ev)
            t = float(ev.get("t") or 0.0)
            if ev.get("src") == QUORUM_SOURCE:
                voter_events += 1
                state = voters.live_near(int(broker), t)
                unconfirmed += int(state is None)
                down = voters.taken_down(int(broker), t) if state is False else None
                if down is not None:
                    not_live.append(evidence(ev, problem=f"controller {broker} is not a live voter "
                                                         f"({down.label}, no quorum answer from it)"))
            elif id(ev) in claims and live.known and not live.ever_up_near(int(broker), t):
                not_live.append(evidence(ev, problem=f"controller {broker} is not a registered live broker"))
        zombies, zombie_metrics = zombie_self_views(events, ctx.rows("controller.view"), ctx.faults, ctx.end_t)
        metrics = {"controller_events": len(events), "epochs": len(by_epoch), "shared_epochs": len(bad) // 2,
                   "controllers_not_live": len(not_live), **zombie_metrics}
        if voter_events:
            metrics.update(quorum_controller_events=voter_events, voters_unconfirmed=unconfirmed)
        if bad or not_live or zombies:
            parts = []
            if bad:
                parts.append(f"{plural(len(bad) // 2, 'epoch')} held by two controllers")
            if not_live:
                what = "a node not live" if voter_events else "a broker not registered"
                parts.append(f"{plural(len(not_live), 'controller event')} naming {what}")
            if zombies:
                parts.append(f"{plural(len(zombies) // 2, 'zombie controller view')}: {zombies[1]['problem']}")
            t = float((bad or not_live or zombies[1:])[0].get("t") or 0.0)
            fault = ctx.faults.active_at(t)
            summary = "; ".join(parts) + (f" during {fault.label}" if fault else "")
            return failed(self.id, summary, bad + not_live + zombies, metrics, fault.label if fault else None)
        if not by_epoch and not live.known:
            return unknown(self.id, "no controller event carries an epoch and no broker registrations seen",
                           metrics)
        note = "" if live.known or voter_events else " (no broker.up/down events: liveness not checked)"
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
        views = ctx.rows("controller.view")
        stale, view_metrics = stale_views(ctx.rows("controller"), views)
        metrics = {"controller_events": len(events), "controller_changes": changes,
                   "violations": len(bad) // 2, "max_epoch": max(int(e["epoch"]) for e in events), **view_metrics}
        if bad or stale:
            parts: list[str] = []
            first = None
            if bad:
                parts.append(f"{plural(len(bad) // 2, 'epoch violation')}: {bad[1]['problem']}")
                first = bad[1]
            if stale:
                stale_first = next(r for r in stale if "problem" in r)
                n = view_metrics["stale_views"]
                parts.append(f"{plural(n, 'stale controller view')} (a broker obeys a controller of an older "
                             f"epoch): {stale_first['problem']}")
                first = first or stale_first
            assert first is not None
            fault = ctx.faults.active_at(float(first.get("t") or 0.0))
            summary = "; ".join(parts) + (f" during {fault.label}" if fault else "")
            return failed(self.id, summary, bad + stale, metrics, fault.label if fault else None)
        note = (f"; {plural(view_metrics['views_with_epoch'], 'broker view')} of the controller never went back"
                if views else "")
        return passed(self.id, f"epoch never decreased over {plural(changes, 'controller change')}{note}", metrics)
