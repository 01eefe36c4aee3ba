"""What the controller must do when a broker goes (KAFKA-BEHAVIOUR.md §7.3, §7.4, §7.6), in Python over
the authoritative `partition.state` events (`partition.authoritative`) and the registrations.

- `partition.offline_replica_leaves_isr`: once the controller has seen a broker go (its registration
  vanished: `broker.down`; in KRaft also `broker.fenced`), the broker leaves the ISR of every
  partition it was in, the ones it led and the ones it followed. Apache Kafka's ZooKeeper controller
  does it in one pass (`KafkaController.onBrokerFailure` -> `onReplicasBecomeOffline`: the led
  partitions get an election without it, then `ReplicaStateMachine` moves every replica of it to
  OfflineReplica, `removeReplicasFromIsr`); KRaft's does it when it fences the broker
  (`ReplicationControlManager.handleBrokerFenced`). The only exception is a partition where it was
  the last ISR member (the ISR never becomes empty). The rule holds for the controller's whole answer to
  the event: brokers lost together leave one write per replica, so a write that lists the broker and is
  followed at once by writes that take only gone replicas out, it among them, is a step (`_steps_out`).
  A ZooKeeper controller still answering an earlier event (another broker gone, or its own election, within
  `BACKLOG_S`, counted for a failover from its first write as the election check counts it) may write states that
  list the broker before it reaches the BrokerChange event, if the broker leaves within `OFFLINE_GRACE_S`
  (`_answered_late`, counted as `left_after_backlog`).
  Fails when a controller write for such a
  partition after the broker went (a state with a higher leader epoch) still lists it, or when no
  state without it appears while the broker stays down longer than `OFFLINE_GRACE_S` with a controller in office
  (no controller, no write: brokers cut off from ZooKeeper while the controller's own session expired left none
  for 25 s on Apache Kafka 3.9.2, false-fail hunt zookeeper schedule 8). A replica already
  out of the ISR when its broker went (a controlled shutdown took it out) holds the rule; a run whose
  only gone broker did that passes, saying so (it was unknown, as if nothing could be judged).
- `partition.unclean_only_when_enabled`: a leader from outside the last ISR (in KRaft also outside
  the ELR and not the last known leader, which Kafka may elect cleanly) only when
  `unclean.leader.election.enable` is true; then each such election is recorded as unclean in the
  metrics and evidence (`unclean_elections`). A replica that joined the ISR between two observed states
  (`partitions.joined_unobserved`: the leader epoch skipped one, or its broker came back in between) is not
  outside it.
- `partition.controlled_shutdown_moves_leaders` lives in `checks.partition.shutdown`, over the same timeline.

Event order: the states and the registrations come from the same observer (ZooKeeper watches, or the
KRaft metadata observer), so "before" is file order (`seq`) there and the history clock otherwise.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

from spark_analysis.checks.partition.checks import STEP_S
from spark_analysis.checks.shared.common import evidence, plural, summary_with_fault, tp_label
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.facts.liveness import (
    BACKLOG_S,
    LIVENESS_TYPES,
    Liveness,
    build_liveness,
    controller_events,
    first_writes,
    took_office_before,
)
from spark_analysis.facts.partitions import PartitionTimeline, UncleanElection, leader_elections, partition_timeline
from spark_analysis.result import CheckResult, failed, passed, unknown

OFFLINE_GRACE_S = 10.0
"""How long a broker may stay in an ISR after its registration vanished with no controller write at all
(the controller's reaction takes milliseconds; the observers' polls and a loaded machine take seconds)."""

def controllers_by_time(ctx: CheckContext) -> list[Row]:
    """The authoritative `controller` events (`liveness.controller_events`), by the history clock."""
    return sorted(controller_events(ctx.rows("controller")), key=lambda e: float(e.get("t") or 0.0))


def controller_in_office(controllers: list[Row], t0: float, t1: float, faults: FaultIndex | None = None) -> float:
    """Seconds of [t0, t1] during which some controller held office, by the authoritative `controller` events
    (`liveness.controller_events`: broker -1 is none). Before the first event, and with none recorded, all of it
    (nothing says it was missing). With `faults`, an office ends when a fault stops its broker (killed, stopped or
    paused): ZooKeeper keeps a killed controller's `/controller` until its session expires, but it writes nothing
    (3.9.2, weak-isr seed 2's minimal beside two other runs: controller 1 killed 4.3 s after taking office, during
    its failover, and its node kept for 5.4 s more)."""
    if t1 <= t0:
        return 0.0
    if not controllers:
        return t1 - t0
    first = float(controllers[0].get("t") or 0.0)
    total = max(0.0, min(first, t1) - t0)
    for ev, nxt in itertools.zip_longest(controllers, controllers[1:]):
        if ev.get("broker") is None or int(ev["broker"]) < 0:
            continue
        start, end = float(ev.get("t") or 0.0), float(nxt.get("t") or 0.0) if nxt is not None else t1
        if faults is not None:
            end = _stopped_at(faults, int(ev["broker"]), start, end)
        total += max(0.0, min(end, t1) - max(start, t0))
    return total


def _steps_out(states: list[Row], broker: int, live: Liveness) -> bool:
    """Whether `states[0]`, which still lists `broker` in the ISR, is a step of the controller's answer rather than
    its end: each following write, within `STEP_S` of the one before, only takes replicas of gone brokers out of
    the ISR, until one takes `broker` out. Apache Kafka's controller takes the replicas of brokers lost in one
    event out one replica at a time (`ReplicaStateMachine.doRemoveReplicasFromIsr`, a write per replica; seen on
    3.9.2 with brokers 2 and 3 expiring together: `leader -1, isr [3, 1]`, then `isr [1]` 52 ms later)."""
    for cur, nxt in itertools.pairwise(states):
        t = float(nxt.get("t") or 0.0)
        removed, added = set(_isr(cur)) - set(_isr(nxt)), set(_isr(nxt)) - set(_isr(cur))
        if added or not removed or t - float(cur.get("t") or 0.0) > STEP_S:
            return False
        if any(live.state_at(b, t) is not False for b in removed):
            return False
        if broker in removed:
            return True
    return False


def _answered_late(tl: PartitionTimeline, down: Row, kept: Row, left: Row, controllers: list[Row],
                   writes: dict[int, float]) -> bool:
    """Whether `kept` (a write after `down` that still lists its broker) was the controller answering an earlier
    event: another broker went, or a controller took office, within `BACKLOG_S` before `down` (strictly
    before: brokers seen gone in one watch firing are one BrokerChange event, answered together), or first wrote
    (`writes`: its failover reads ZooKeeper before it writes, `liveness.took_office_before`, the one definition the
    election check uses too), and
    the broker left the ISR (`left`) within `OFFLINE_GRACE_S` of going. Apache Kafka's ZooKeeper controller
    handles its events one at a time, in order (`ControllerEventManager`'s single event thread): a controller
    that took office, or lost another broker, just before acts on the liveness it read then until it reaches the
    BrokerChange event. Seen on 3.9.2 (weak-durability, a ZooKeeper partition): broker 3's registration vanished
    at 22.752 s, broker 1 took office at 22.914 s, broker 2's vanished at 23.241 s; the new controller still wrote
    `leader -1, isr [2, 1]` (23.796 s) and elected broker 2 (24.358 s) before taking it out (24.673 s). KRaft's
    controller fences a broker and takes it out of every ISR in one batch of records
    (`ReplicationControlManager.handleBrokerFenced`), so its writes get no such allowance."""
    t_down = float(down.get("t") or 0.0)
    late = float(left.get("t") or 0.0) - t_down > OFFLINE_GRACE_S
    if tl.order(left) < tl.order(kept) or late:
        return False
    return _in_backlog(tl, down, kept, controllers, writes)


def _in_backlog(tl: PartitionTimeline, down: Row, kept: Row, controllers: list[Row], writes: dict[int, float]) -> bool:
    """Whether `kept`, a ZooKeeper controller's write after `down` that still lists its broker, may be the controller
    answering an earlier event (`_answered_late`'s rule, without the broker's leaving)."""
    t_down = float(down.get("t") or 0.0)
    if kept.get("src") != "zk":
        return False
    earlier = [ev for ev in tl.downs if ev.get("broker") != down.get("broker")]
    elected = [ev for ev in controllers if ev.get("broker") is not None and int(ev["broker"]) >= 0]
    office = took_office_before(controllers, t_down, writes)
    return any(t_down - BACKLOG_S <= float(ev.get("t") or 0.0) < t_down for ev in [*earlier, *elected]) or (
        office is not None and office < t_down)


def _office_ended(controllers: list[Row], kept: Row, t_down: float, horizon: float, faults: FaultIndex) -> bool:
    """Whether the office of the controller that wrote `kept` (a write answering an earlier event, `_in_backlog`)
    ended while the broker was still away and within `OFFLINE_GRACE_S` of its going: the next `controller` event
    after the write came before the broker's return (`horizon`). Nothing more was due from that controller, and its
    successor reads the ISR afresh (3.9.2, weak-isr seed 2's minimal: controller 1, still answering its own failover,
    wrote ISR [1, 2] 1.4 s after broker 2 went, was killed 1.8 s later, and its session ended 9.1 s after broker 2
    went, before broker 2 registered again; recorded zk-3.9.2-backlog-write-then-controller-killed). A controller
    still in office when the broker returns owes the removal (Kafka's `processBrokerChange` fails a bounced broker
    over, `onBrokerFailure`), so that case stays judged. The office ends as `controller_in_office` has it: at the
    next `controller` event, or at a fault that stops the writer's broker."""
    t_kept = float(kept.get("t") or 0.0)
    writer = next((ev for ev in reversed(controllers) if float(ev.get("t") or 0.0) <= t_kept), None)
    end = next((float(ev.get("t") or 0.0) for ev in controllers if float(ev.get("t") or 0.0) > t_kept), math.inf)
    if writer is not None and writer.get("broker") is not None and int(writer["broker"]) >= 0:
        end = _stopped_at(faults, int(writer["broker"]), t_kept, end)
    return end < horizon and end - t_down <= OFFLINE_GRACE_S


def _stopped_at(faults: FaultIndex, broker: int, t0: float, t1: float) -> float:
    """When the first fault in [t0, t1) that stops `broker` (killed, stopped or paused) began, else `t1`: where a
    controller's office ends short of its next `controller` event."""
    starts = (w.start for w in faults.windows if t0 <= w.start < t1 and broker in w.effect.stopped(("broker",)))
    return min([t1, *starts])


def _isr(st: Row) -> list[int]:
    return [int(b) for b in st.get("isr") or []]


def _epoch(st: Row) -> int:
    value = st.get("leader_epoch")
    return int(value) if value is not None else -1


def _result(check_id: str, ctx: CheckContext, bad: list[dict[str, Any]], metrics: dict[str, Any],
            noun: str, ok_text: str, none_text: str | None) -> CheckResult:
    if bad:
        first = next(e for e in bad if "problem" in e)
        summary, fault = summary_with_fault(ctx, f"{plural(metrics['violations'], noun)}: {first['problem']}",
                                             float(first.get("t") or 0.0))
        return failed(check_id, summary, bad, metrics, fault)
    if none_text is not None:
        return unknown(check_id, none_text, metrics)
    return passed(check_id, ok_text, metrics)


class OfflineReplicaLeavesIsr:
    id = "partition.offline_replica_leaves_isr"
    family = "partition"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        tl = partition_timeline(ctx)
        if not tl.states:
            return unknown(self.id, "no partition.state event carries an ISR")
        judged = last_member = not_judged = already_out = no_controller = backlog = 0
        bad: list[dict[str, Any]] = []
        live = build_liveness(ctx.rows(*LIVENESS_TYPES))
        controllers = controllers_by_time(ctx)
        writes = first_writes([st for states in tl.states.values() for st in states])
        for down in tl.downs:
            broker, t_down = int(down["broker"]), float(down.get("t") or 0.0)
            back = tl.next_up(down)
            horizon = float(back.get("t") or 0.0) if back is not None else ctx.end_t
            for (topic, part), states in tl.states.items():
                prev = tl.before(down, states)
                if prev is None:
                    continue
                if broker not in _isr(prev):
                    already_out += broker in (prev.get("replicas") or [])  # a controlled shutdown took it out
                    continue
                if len(_isr(prev)) == 1:
                    last_member += 1
                    continue
                later = tl.after(down, states, back)
                kept = [st for i, st in enumerate(later) if broker in _isr(st) and _epoch(st) > _epoch(prev)
                        and _isr(st) != [broker]  # the other members went first: it stays as the last one (seen
                        # on 3.9.2: `leader 2, isr [2]` then `leader -1, isr [2]`, hunt zookeeper schedule 6)
                        and not _steps_out(later[i:], broker, live)]
                left = [st for st in later if broker not in _isr(st)]
                role = "led" if prev.get("leader") == broker else "followed"
                label = tp_label(topic, part)
                lagging = kept and left and _answered_late(tl, down, kept[0], left[0], controllers, writes)
                if kept and not left and _in_backlog(tl, down, kept[0], controllers, writes) and _office_ended(
                        controllers, kept[0], t_down, horizon, ctx.faults):
                    not_judged += 1
                    continue
                if kept and (not left or tl.order(kept[0]) < tl.order(left[0])) and not lagging:
                    judged += 1
                    bad += [evidence(down), evidence(prev), evidence(
                        kept[0], problem=f"{label}: broker {broker} (which {role} it) is still in the ISR "
                                         f"{_isr(kept[0])} written in leader epoch {_epoch(kept[0])} after its "
                                         f"registration vanished at {t_down:.3f}s")]
                elif left:
                    judged += 1
                    backlog += bool(lagging)
                elif any(_isr(st) == [broker] for st in later):
                    last_member += 1  # the others went first: it stays as the last member (Kafka keeps one)
                elif controller_in_office(controllers, t_down, horizon, ctx.faults) > OFFLINE_GRACE_S:
                    judged += 1
                    bad += [evidence(down), evidence(
                        prev, problem=f"{label}: broker {broker} (which {role} it) is still in the ISR "
                                      f"{_isr(prev)} {horizon - t_down:.1f}s after its registration vanished "
                                      f"at {t_down:.3f}s: the controller wrote nothing for the partition",
                        t=t_down)]
                elif horizon - t_down > OFFLINE_GRACE_S:
                    no_controller += 1  # no controller to write anything (all cut off from ZooKeeper, say)
                else:
                    not_judged += 1
        violations = sum(1 for e in bad if "problem" in e)
        metrics = {"brokers_gone": len(tl.downs), "replicas_judged": judged, "last_isr_member": last_member,
                   "not_judged_short": not_judged, "not_judged_no_controller": no_controller,
                   "out_before_going": already_out, "left_after_backlog": backlog, "violations": violations}
        if not tl.downs:
            return passed(self.id, "no broker went away during the run (nothing to judge)", metrics)
        none = None if judged or already_out else (
            f"no replica of a gone broker could be judged ({plural(len(tl.downs), 'broker')} went, {not_judged} "
            f"not down for {OFFLINE_GRACE_S:g}s before the end, {no_controller} while no controller was in office "
            f"for {OFFLINE_GRACE_S:g}s)")
        text = f"every gone broker left the ISR of all {plural(judged, 'partition')} it was in"
        if not judged:
            text = f"every gone broker had left the ISR before it went ({plural(already_out, 'replica')}: " \
                   "controlled shutdown)"
        elif already_out:
            text += (f"; {plural(already_out, 'replica')} had left the ISR before its broker went (controlled "
                     f"shutdown)")
        return _result(self.id, ctx, bad, metrics, "replica", text, none)


class UncleanOnlyWhenEnabled:
    id = "partition.unclean_only_when_enabled"
    family = "partition"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        tl = partition_timeline(ctx)
        if not tl.states:
            return unknown(self.id, "no partition.state event carries an ISR")
        elections, found = leader_elections(ctx)
        refused = [u for u in found if not ctx.run.unclean_for(u.topic)]
        allowed = [u for u in found if ctx.run.unclean_for(u.topic)]
        metrics = {"elections": elections, "unclean_elections": len(found), "unclean_enabled": ctx.run.unclean_election,
                   "violations": len(refused)}
        if refused:
            return _result(self.id, ctx, _unclean_rows(refused), metrics, "unclean election", "", None)
        if allowed:
            rows = _unclean_rows(allowed)
            result = passed(self.id, f"{plural(len(allowed), 'unclean election')} recorded, allowed by "
                                     f"unclean.leader.election.enable=true, e.g. {rows[1]['problem']}", metrics)
            return replace(result, evidence=tuple(rows), permitted=("unclean.leader.election.enable=true",))
        if not elections:
            return passed(self.id, "no leader was elected after the first state (nothing unclean)", metrics)
        return passed(self.id, f"all {plural(elections, 'election')} chose from the ISR"
                      + (" or the ELR" if any(st.get("elr") is not None for s in tl.states.values() for st in s)
                         else ""), metrics)


def _unclean_rows(found: list[UncleanElection]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for u in found:
        elr = f" and the ELR {list(u.prev['elr'])}" if u.prev.get("elr") else ""
        rows += [evidence(u.prev), evidence(u.ev, unclean=True, problem=f"{tp_label(u.topic, u.partition)}: unclean "
                                            f"election of broker {u.leader}, outside the ISR {_isr(u.prev)}{elr}")]
    return rows
