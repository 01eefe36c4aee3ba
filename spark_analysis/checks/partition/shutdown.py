"""`partition.controlled_shutdown_moves_leaders` (KAFKA-BEHAVIOUR.md E6): on a graceful stop (a fault whose effect is
a graceful stop: the `stop` fault, SIGTERM, the broker's controlled shutdown), every partition the broker led has a
new leader before its registration vanishes, wherever another ISR member was alive and not shutting down itself
(Kafka's `KafkaController.doControlledShutdown`, `ControlledShutdownPartitionLeaderElectionStrategy`; the broker
retries until it leads nothing, then deregisters). Judged only where the broker's ControlledShutdown request could
reach a controller: with none in office, or the link to it cut, Kafka gives up after its retries and shuts down
uncleanly (`KafkaServer.controlledShutdown`). A broker whose registration was gone before the stop leads nothing
Kafka can move. Over the same timeline as `checks.partition.isr`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from spark_analysis.checks.partition.isr import _isr, _result, controllers_by_time
from spark_analysis.checks.shared.common import evidence, plural, tp_label
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.facts.liveness import LIVENESS_TYPES, build_liveness
from spark_analysis.facts.partitions import partition_timeline
from spark_analysis.result import CheckResult, passed, unknown


class ControlledShutdownMovesLeaders:
    id = "partition.controlled_shutdown_moves_leaders"
    family = "partition"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        tl = partition_timeline(ctx)
        stops = [w for w in ctx.faults.windows if w.effect.graceful_stop]
        if not stops:
            return passed(self.id, "no graceful stop in the run (nothing to move)", {"graceful_stops": 0})
        if not tl.states:
            return unknown(self.id, "no partition.state event carries an ISR")
        live = build_liveness(ctx.rows(*LIVENESS_TYPES))
        moved = no_alternative = unseen = gone_before = cut_from_controller = led_nothing = unobserved = 0
        bad: list[dict[str, Any]] = []
        controllers = controllers_by_time(ctx)
        for window in stops:
            for broker in sorted(window.effect.stopped_gracefully()):
                if _controller_unreachable(ctx, controllers, broker, window.start):
                    cut_from_controller += 1  # its ControlledShutdown request cannot arrive: Kafka gives up
                    continue
                down = next((d for d in tl.downs if d.get("broker") == broker
                             and float(d.get("t") or 0.0) >= window.start), None)
                if down is None:
                    unseen += 1
                    gone_before += live.state_at(broker, window.start) is False
                    continue
                others_stopping = ctx.faults.stopping_gracefully(window.start) - {broker}
                usable = live.live_at(window.start) - others_stopping - {broker}
                leading = 0
                for (topic, part), states in tl.states.items():
                    led = _led_at(states, window.start)
                    unobserved += led is None
                    if led is None or led.get("leader") != broker:
                        continue
                    leading += 1
                    if not any(b in usable for b in _isr(led)):
                        no_alternative += 1
                        continue
                    between = [st for st in states if float(st.get("t") or 0.0) >= window.start
                               and tl.order(st) < tl.order(down)]
                    if any(st.get("leader") not in (None, broker) and int(st["leader"]) >= 0 for st in between):
                        moved += 1
                        continue
                    bad += [evidence(window.start_event()), evidence(led), evidence(
                        down, problem=f"{tp_label(topic, part)}: broker {broker} still led it when its "
                                      f"registration vanished during its graceful stop (live ISR members "
                                      f"{sorted(b for b in _isr(led) if b in usable)} could have taken over "
                                      f"before its registration went)")]
                led_nothing += not leading
        violations = sum(1 for e in bad if "problem" in e)
        metrics = {"graceful_stops": len(stops), "leaders_moved": moved, "no_live_alternative": no_alternative,
                   "stops_without_deregistration": unseen, "unregistered_before_the_stop": gone_before,
                   "controller_unreachable": cut_from_controller, "led_nothing": led_nothing,
                   "partitions_unobserved_at_a_stop": unobserved, "violations": violations}
        if cut_from_controller and not moved and not bad and not no_alternative and gone_before == unseen:
            cut = plural(cut_from_controller, "graceful stop")
            return passed(self.id, f"no graceful stop could reach its controller ({cut} cut off from it: Kafka's "
                                   "controlled shutdown then gives up, nothing to judge)", metrics)
        if not moved and not bad and not no_alternative and gone_before == unseen == len(stops):
            # its ZooKeeper session had already expired (an isolation, say): it led nothing Kafka could move
            return passed(self.id, f"every gracefully stopped broker had lost its registration before the stop "
                                   f"({plural(len(stops), 'graceful stop')}; nothing to move)", metrics)
        if not moved and not bad and not unobserved and gone_before == unseen:
            # Kafka moves a leadership only to a live ISR member that is not stopping too: a stopped broker that
            # led nothing (every partition offline or led elsewhere), or only partitions without such a member,
            # leaves the rule nothing to judge (hunt zookeeper schedule 28: the stopped controller led nothing).
            stopped = plural(len(stops), "graceful stop")
            alone = plural(no_alternative, "led partition")
            return passed(self.id, f"no graceful stop left a leadership Kafka could move ({stopped}: {led_nothing} "
                                   f"led nothing, {alone} without a live ISR member to take it, "
                                   f"{cut_from_controller} cut off from the controller, {gone_before} unregistered "
                                   "before; nothing to judge)", metrics)
        none = None if moved or bad else (
            f"no led partition with a live alternative could be judged across {plural(len(stops), 'graceful stop')}"
            f" ({unseen - gone_before} without an observed deregistration, {unobserved} partition states unobserved "
            "at a stop)")
        return _result(self.id, ctx, bad, metrics, "partition",
                       f"every graceful stop moved its {plural(moved, 'led partition')} before deregistering", none)


def _controller_unreachable(ctx: CheckContext, controllers: list[Row], broker: int, t: float) -> bool:
    """Whether `broker`'s ControlledShutdown request could not reach the controller in office at t, or the controller
    could not act on it: none was in office, a fault cut the link from the broker to it, or (ZooKeeper mode) cut the
    controller off from ZooKeeper, where it writes the new leaders. Kafka then retries
    `controlled.shutdown.max.retries` times and proceeds "to do an unclean shutdown as all the controlled shutdown
    attempts failed" (`KafkaServer.controlledShutdown`; seen on 3.9.2, hunt zookeeper schedules 8 and 13), moving
    nothing."""
    office = [c for c in controllers if float(c.get("t") or 0.0) <= t]
    if not office:
        return False
    named = office[-1].get("broker")
    controller = int(named) if named is not None else -1
    if controller < 0:
        return True
    if any(w.contains(t) and controller in w.effect.cut_off(("broker",), "zookeeper") for w in ctx.faults.windows):
        return True  # a ZooKeeper controller cut off from ZooKeeper writes no new leader (hunt zookeeper schedule 8)
    return controller != broker and any(ctx.faults.link_cut(f"broker:{broker}", f"{role}:{controller}", t)
                                        for role in ("broker", "controller"))


def _led_at(states: Iterable[Row], t: float) -> Row | None:
    """The last state at or before t."""
    last = None
    for st in states:
        if float(st.get("t") or 0.0) > t:
            break
        last = st
    return last
