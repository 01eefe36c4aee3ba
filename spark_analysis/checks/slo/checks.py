"""Time-bound checks (KAFKA-BEHAVIOUR.md §7.12): durations against the experiment's SLOs,
reported as distributions (count, p50, p90, p99, max in seconds).

- `slo.controller_failover`: from the controller vanishing until a controller event names a
  broker again. The controller vanishes when a fault takes its node away (the fault's effect
  stops it or cuts it off: `FaultIndex.took_away`; clocked from the fault's start, since ZooKeeper only notices a dead
  broker after the session timeout, and that detection time is part of the failover), else when a
  controller event says broker -1. The events read are those of the sources that carry epochs (the
  ZooKeeper observer's `/controller` + `/controller_epoch`, or in KRaft the quorum observer's
  quorum leader and Raft epoch), else all. A new controller is a different node or the same one
  in a higher epoch. In KRaft this measures from the fault that took the quorum leader (a
  controller, which need not be a broker: fault targets naming `controller N` count) to the
  first `controller` event naming the new quorum leader; there is no broker -1 event there.
- `slo.partition_unavailable`: per partition, from losing its leader until a state names a
  registered leader again. The leader is lost when a fault takes its broker from clients (the
  fault's effect stops it abruptly or cuts clients off from it: `FaultIndex.took_from_clients`; clocked from
  the fault's start), else when the leader becomes -1
  or its registration vanishes (in KRaft also when it is fenced). A graceful stop is not
  backdated: the leader serves until controlled shutdown moves it. States are the ZooKeeper
  observer's, else the KRaft metadata observer's, else all (`partition.authoritative`).
- `slo.rebalance`: per group, from leaving Stable (PreparingRebalance / CompletingRebalance /
  AwaitingSync) until Stable again.

An interval still open at the end of the history is censored: it counts against the SLO only
when it already exceeds it. With no SLO declared the check reports the distribution and passes.

Besides the summary, `metrics["samples"]` holds the closed durations themselves (seconds, rounded
to ms, ascending) so that runs can be aggregated (`spark_analysis.trend`); above `MAX_SAMPLES`
an evenly spaced subset of the sorted list is kept (always the minimum and the maximum), and
`len(samples) < distribution.count` tells that it was thinned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.shared.common import distribution, evidence, plural, tp_label
from spark_analysis.checks.slo.stalls import stall_fault
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.facts.liveness import (
    DOWN_TYPES,
    LIVENESS_TYPES,
    UP_TYPES,
    authoritative,
    build_liveness,
    controller_events,
)
from spark_analysis.result import CheckResult, failed, passed

REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance", "AwaitingSync"})
MAX_SAMPLES = 500


def samples(values: list[float], cap: int = MAX_SAMPLES) -> list[float]:
    """The durations ascending, rounded to ms; above `cap`, `cap` evenly spaced ones (min and max kept)."""
    data = sorted(round(float(v), 3) for v in values)
    if len(data) <= cap:
        return data
    last = len(data) - 1
    return [data[round(i * last / (cap - 1))] for i in range(cap)]


@dataclass(frozen=True, slots=True)
class Interval:
    what: str
    start: float
    end: float | None
    start_event: Mapping[str, Any]
    end_event: Mapping[str, Any] | None

    def duration(self, horizon: float) -> float:
        return (self.end if self.end is not None else horizon) - self.start


def judge(
    ctx: CheckContext, check_id: str, slo_key: str, noun: str, intervals: list[Interval]
) -> CheckResult:
    """Turn intervals into a result against `ctx.run.slo[slo_key]`."""
    horizon = ctx.end_t
    closed = [i.duration(horizon) for i in intervals if i.end is not None]
    open_ = [i for i in intervals if i.end is None]
    metrics: dict[str, Any] = {"distribution": distribution(closed), "open_at_end": len(open_),
                               "samples": samples(closed)}
    slo = ctx.run.slo.get(slo_key)
    metrics["slo_s"] = slo
    if slo is None:
        mx = metrics["distribution"].get("max")
        return passed(check_id, f"no SLO declared; {plural(len(closed), noun)}"
                                + (f", max {mx:.3f}s" if mx is not None else ""), metrics)
    over = sorted((i for i in intervals if i.duration(horizon) > slo), key=lambda i: -i.duration(horizon))
    if over:
        worst_i = over[0]
        ev: list[dict[str, Any]] = []
        for i in over[:10]:
            ev.append(evidence(i.start_event, problem=f"{i.what}: started"))
            if i.end_event is not None:
                ev.append(evidence(i.end_event, problem=f"{i.what}: ended after {i.duration(horizon):.3f}s"))
        tied = stall_fault(ctx.faults.windows, worst_i.start, worst_i.end if worst_i.end is not None else horizon)
        fault = None if tied is None else ctx.faults.windows[tied]
        summary = (f"{plural(len(over), noun)} over the {slo:g}s SLO, worst {worst_i.what} "
                   f"{worst_i.duration(horizon):.3f}s" + (" (still open at the end)" if worst_i.end is None else "")
                   + (f" during {fault.label}" if fault else ""))
        metrics["over_slo"] = len(over)
        return failed(check_id, summary, ev, metrics, fault.label if fault else None)
    mx = metrics["distribution"].get("max")
    return passed(check_id, f"{plural(len(closed), noun)} within the {slo:g}s SLO"
                            + (f" (max {mx:.3f}s)" if mx is not None else ""), metrics)


def _new_controller(current: Row, ev: Row) -> bool:
    """A different broker, or the same one in a higher epoch (re-elected)."""
    if current.get("broker") != ev.get("broker"):
        return True
    before, now = current.get("epoch"), ev.get("epoch")
    return before is not None and now is not None and int(now) > int(before)


class ControllerFailover:
    id = "slo.controller_failover"
    family = "slo"
    needs = frozenset({"controller"})

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge(ctx, self.id, "controller_failover", "controller failover", self.intervals(ctx))

    def intervals(self, ctx: CheckContext) -> list[Interval]:
        """Each controller failover: from the controller's loss (or the fault that caused it) to its successor, per
        source (a migration has two controllers' streams: ZooKeeper's and the KRaft quorum's)."""
        events = controller_events(ctx.rows("controller"))
        by_source: dict[str, list[Row]] = defaultdict(list)
        for ev in events:
            by_source[str(ev.get("src"))].append(ev)
        return sorted((i for src in sorted(by_source) for i in self._failovers(ctx, by_source[src])),
                      key=lambda i: i.start)

    @staticmethod
    def _failovers(ctx: CheckContext, events: list[Row]) -> list[Interval]:
        intervals: list[Interval] = []
        current: Row | None = None
        gone: Row | None = None
        for ev in events:
            broker = ev.get("broker")
            t = float(ev.get("t") or 0.0)
            hit = None
            if current is not None and _new_controller(current, ev):
                hit = ctx.faults.took_away(int(current["broker"]), float(current.get("t") or 0.0), t)
            if broker is None or broker < 0:
                if current is not None and gone is None:
                    gone = hit.start_event() if hit else ev
                continue
            if gone is not None:
                intervals.append(Interval(f"failover from {current['broker'] if current else '?'} to {broker}",
                                          float(gone.get("t") or 0.0), t, gone, ev))
                gone = None
            elif hit is not None and current is not None:
                intervals.append(Interval(f"failover from {current['broker']} to {broker}", hit.start, t,
                                          hit.start_event(), ev))
            current = ev
        if gone is not None:
            intervals.append(Interval("no controller", float(gone.get("t") or 0.0), None, gone, None))
        return intervals


class PartitionUnavailable:
    id = "slo.partition_unavailable"
    family = "slo"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge(ctx, self.id, "partition_unavailable", "unavailability window", self.intervals(ctx))

    def intervals(self, ctx: CheckContext) -> list[Interval]:
        """Each window in which a partition had no live leader, per partition. A window opened by its leader's broker
        going down ends when that broker is live again and still the recorded leader (a ZooKeeper-mode broker whose
        session expired re-registers, and with no controller to move its partitions nothing else is recorded: on 3.9.2
        a partition whose leader was cut off from ZooKeeper acked writes throughout, yet stayed "without a leader" for
        50.4 s, until its ISR next changed; `zk-3.9.2-leader-registered-again-without-a-state-change`)."""
        states = authoritative(ctx.rows("partition.state"))
        brokers = ctx.rows(*LIVENESS_TYPES)
        live = build_liveness(brokers)
        per_tp: dict[tuple[str, int], list[Row]] = defaultdict(list)
        for ev in states:
            if ev.get("topic") is not None and ev.get("partition") is not None:
                per_tp[(str(ev["topic"]), int(ev["partition"]))].append(ev)
        downs = [e for e in brokers if e.get("type") in LIVENESS_TYPES]  # a leader down, and up again
        intervals: list[Interval] = []
        for tp, evs in per_tp.items():
            timeline = sorted(evs + downs, key=lambda e: (float(e.get("t") or 0.0), int(e.get("seq") or 0)))
            leader: int | None = None
            led_since = 0.0
            since: Row | None = None
            for ev in timeline:
                t = float(ev.get("t") or 0.0)
                hit = None
                if leader is not None and leader >= 0 and since is None:
                    hit = ctx.faults.took_from_clients(leader, led_since, t)
                if ev["type"] in DOWN_TYPES:
                    if leader is not None and leader >= 0 and ev.get("broker") == leader and since is None:
                        since = hit.start_event() if hit else ev
                    continue
                if ev["type"] in UP_TYPES:  # the recorded leader's broker back: judged as a state naming it again
                    if since is None or ev.get("broker") != leader:
                        continue
                    previous = leader
                else:
                    previous, leader = leader, ev.get("leader")
                ok = leader is not None and leader >= 0 and live.state_at(leader, t) is not False
                if ok and leader != previous:
                    led_since = t
                if not ok and since is None:
                    since = hit.start_event() if hit else ev
                elif ok and since is None and hit is not None and leader != previous:
                    intervals.append(Interval(f"{tp_label(*tp)} without a leader", hit.start, t, hit.start_event(), ev))
                elif ok and since is not None:
                    intervals.append(Interval(f"{tp_label(*tp)} without a leader", float(since.get("t") or 0.0), t,
                                              since, ev))
                    since = None
            if since is not None:
                intervals.append(Interval(f"{tp_label(*tp)} without a leader", float(since.get("t") or 0.0), None,
                                          since, None))
        return intervals


class Rebalance:
    id = "slo.rebalance"
    family = "slo"
    needs = frozenset({"group.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        return judge(ctx, self.id, "rebalance", "rebalance", self.intervals(ctx))

    def intervals(self, ctx: CheckContext) -> list[Interval]:
        """Each rebalance of a group: from its first rebalancing state to Stable, per observer."""
        intervals: list[Interval] = []
        since: dict[tuple[str, str], Row] = {}
        for ev in ctx.rows("group.state"):
            key = (str(ev.get("src")), str(ev.get("group")))
            state = ev.get("state")
            if state in REBALANCING and key not in since:
                since[key] = ev
            elif state == "Stable" and key in since:
                start = since.pop(key)
                intervals.append(Interval(f"rebalance of {key[1]}", float(start.get("t") or 0.0),
                                          float(ev.get("t") or 0.0), start, ev))
            elif state in ("Empty", "Dead"):
                since.pop(key, None)
        for key, start in since.items():
            intervals.append(Interval(f"rebalance of {key[1]}", float(start.get("t") or 0.0), None, start, None))
        return intervals
