"""Partition checks (KAFKA-BEHAVIOUR.md §7.3-§7.5), in Python over `partition.state` events.

- `partition.leader_in_isr`: every leader (>= 0) is in its ISR (tolerated, and said so, when
  `unclean.leader.election.enable` is true in the run's broker config).
- `partition.election_conforms`: every leader change matches `harness.model.election.elect_leader`
  applied to the state just before it: the previous ISR and AR, the brokers registered then
  (from broker.up/down, with a grace for observer skew: every plausible live set is tried),
  and the brokers shutting down (faults whose effect is a graceful stop: `FaultIndex.stopping_gracefully`).
  The strategy is inferred: AR changed -> reassign; previous leader gone or none -> offline; previous leader
  stopping -> controlled shutdown; a scheduled reassignment of the partition in progress whose new list leaves
  the old leader out -> reassign, from that new list (`spark_analysis.facts.operations`); a scheduled preferred
  election in progress, or new leader is AR[0] -> preferred. A change none of these explains is counted, not
  judged.
  A partition's first observed state while an `add_partitions` creating it runs is judged as `new`: the
  first live replica in AR order leads.
  A broker that came back between two observed states and is in the new ISR (with a member of the old
  one) may have rejoined the ISR unobserved in between; so may a replica outside the old ISR when the
  leader epoch skipped a value (a reassignment's new replica caught up); the election is judged with and
  without them. A broker whose graceful stop began before the state judged from, not seen back, is no
  candidate (shutting down, or fenced at its shutdown, though unobserved); a broker a fault stopped or cut off
  from the metadata quorum between the two states may have been fenced and back unobserved (an observer
  reading a frozen cache): tried with and without (`_with_unseen_losses`).
  A write of leader -1 that only takes the dead leader out of a larger ISR, or keeps it as the last ISR
  member just before a write that elects a leader, is the controller's OfflineReplica step (Apache Kafka
  does it on controller failover, before electing), not an election: the election is the write after it.
  KRaft (Kafka's `metadata/.../controller/PartitionChangeBuilder.java`, `electLeader`,
  `isValidNewLeader`): liveness is "registered and unfenced" (`broker.fenced` is down), and when a
  state carries an ELR (KIP-966 eligible leader replicas; null when the version lacks them) a clean
  election chooses from the ISR members still live, or, when none is, from the ELR, in AR order;
  when the ISR and the ELR are both empty, the single last known leader (`last_known_elr`) may be
  elected too (Kafka tries it before any unclean election, whatever unclean.leader.election.enable
  says). Anything else is unclean: only with unclean.leader.election.enable, first live in AR order.
  Whatever the strategy, a leader the observer saw fenced around the state (`leader_fenced`) breaks K4:
  only an unfenced broker is an acceptable leader (Kafka 4.0 elected a fenced last known leader: KAFKA-19522).
  Each judged election's evidence says where the leader came from (`eligibility`: isr, elr,
  last_known_leader or outside).
- `partition.leader_epoch_monotonic`: per observer and partition, leader_epoch never decreases and
  strictly increases with every leader change.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from spark_analysis.checks.shared.common import evidence, plural, summary_with_fault, tp_label
from spark_analysis.facts import liveness as lv_facts
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.facts.liveness import LIVENESS_GRACE_S, LIVENESS_TYPES, Liveness, authoritative, build_liveness
from spark_analysis.facts.operations import OperationIndex
from spark_analysis.facts.partitions import eligibility, joined_unobserved, last_known_leader
from spark_analysis.result import CheckResult, failed, passed, unknown


def _by_partition(events: Iterable[Row], per_source: bool = True) -> dict[tuple[str, str, int], list[Row]]:
    out: dict[tuple[str, str, int], list[Row]] = defaultdict(list)
    for ev in events:
        if ev.get("topic") is None or ev.get("partition") is None:
            continue
        src = str(ev.get("src")) if per_source else ""
        out[(src, str(ev["topic"]), int(ev["partition"]))].append(ev)
    return out


def _states(ctx: CheckContext) -> list[Row]:
    """partition.state events; only the ZooKeeper (else the KRaft metadata) observer's when it reported any."""
    return authoritative(ctx.rows("partition.state"))


class LeaderInIsr:
    id = "partition.leader_in_isr"
    family = "partition"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        events = [e for e in ctx.rows("partition.state") if e.get("isr") is not None]
        if not events:
            return unknown(self.id, "no partition.state event carries an ISR")
        bad = [evidence(e, problem=f"leader {e['leader']} not in ISR {e['isr']}")
               for e in events if e.get("leader") is not None and e["leader"] >= 0 and e["leader"] not in e["isr"]]
        parts = {tp_label(e["topic"], e["partition"]) for e in bad}
        metrics = {"states": len(events), "violations": len(bad), "partitions_affected": len(parts)}
        if bad and ctx.run.unclean_election:
            return passed(self.id, f"{plural(len(bad), 'leader')} outside the ISR tolerated "
                                   "(unclean.leader.election.enable=true)", metrics)
        if bad:
            first = bad[0]
            text = (f"{plural(len(bad), 'state')} with the leader outside the ISR on "
                    f"{plural(len(parts), 'partition')}, first {tp_label(first['topic'], first['partition'])}: "
                    f"{first['problem']}")
            summary, fault = summary_with_fault(ctx, text, float(first.get("t") or 0.0))
            return failed(self.id, summary, bad, metrics, fault)
        return passed(self.id, f"leader in ISR in all {plural(len(events), 'partition state')}", metrics)


def _strategy(prev: Row, ev: Row, live: Liveness, shutting: set[int], t: float,
              ops: OperationIndex) -> tuple[str | None, list[int] | None]:
    """The election strategy of a leader change, and the replica list it elects from when that is not
    the partition's AR as observed (a reassignment in progress: the operation's new list)."""
    old_ar, new_ar = prev.get("replicas") or [], ev.get("replicas") or []
    if old_ar and new_ar and list(old_ar) != list(new_ar):
        return "reassign", None
    old = prev.get("leader")
    if old is None or old < 0:
        return "offline", None
    if live.state_at(old, t) is False or live.goes_down_within(old, t - LIVENESS_GRACE_S, t + LIVENESS_GRACE_S):
        return "offline", None
    if old in shutting:
        return "controlled_shutdown", None
    topic, part = str(ev.get("topic")), int(ev.get("partition") or 0)
    moving = ops.covering(topic, part, t, "reassign")
    if moving is not None and part in moving.targets and old not in moving.targets[part]:
        return "reassign", list(moving.targets[part])  # the leader leaves: the first live ISR member of the new list
    ar = new_ar or old_ar
    preferred = ops.covering(topic, part, t, "elect_preferred")
    if preferred is not None and preferred.refused(topic, part):
        preferred = None  # PREFERRED_LEADER_NOT_AVAILABLE here: whatever changed the leader, it was not this
    if preferred is not None or (ar and ev.get("leader") == ar[0]):
        return "preferred", None
    return None, None


def _first_leader(ev: Row, live: Liveness, ops: OperationIndex) -> tuple[set[int | None], int | None] | None:
    """A partition's first observed state while an `add_partitions` creating it runs: the leaders the `new`
    strategy allows (the first live replica, for each plausible live set) and the one observed; None when no
    such operation covers it (a topic's first states at setup are not judged)."""
    from harness.model.election import elect_leader

    t = float(ev.get("t") or 0.0)
    if ev.get("leader") is None or ops.covering(str(ev.get("topic")), int(ev.get("partition") or 0), t,
                                                "add_partitions") is None:
        return None
    assigned = [int(b) for b in ev.get("replicas") or []]
    expected = {elect_leader("new", assigned, (), lv) for lv in _plausible_live_sets(live, t, set())}
    return expected, None if ev["leader"] < 0 else int(ev["leader"])


UNSEEN_UP_S = 1.0
"""How long before an election write a broker may have registered without the controller knowing yet."""
MAX_UNSURE = 4
"""Up to this many brokers registering that close to an election, every subset of them is tried as unknown."""
STEP_S = 2.0
"""How far apart two writes of one controller answer may be seen (the controller makes them milliseconds apart;
the observers' watches and a loaded machine spread them)."""


def _dead_leader_left_isr(prev: Row, ev: Row, nxt: Row | None, live: Liveness | None = None) -> bool:
    """The controller's OfflineReplica step for the leader's replica, which is no election: it writes
    NoLeader (-1) and the ISR without the old leader, and the election follows in a later write.
    Kafka's controller does this when it takes over with the leader already gone (ReplicaStateMachine
    `doRemoveReplicasFromIsr`: `newLeader = NoLeader` when the removed replica is the leader; the ISR
    keeps its last member, so a dead leader that was the last ISR member is written as leader -1 with the
    same ISR: seen on Apache Kafka 3.9.2, `leader -1, isr [1]` 130 ms before the unclean election of broker 3).
    That last case is a step only when a write electing a leader follows it (`nxt`, within `STEP_S`): alone it is
    the controller's answer, an election that found no leader (unclean election disabled; KRaft's NO_LEADER).

    Several brokers lost in one event give one such write per dead replica (one leader epoch each), and a watch
    that reads the partition's state after the last of them sees them as one: the ISR without every dead
    replica, the leader -1, the epoch risen by at most the number removed (seen on Apache Kafka 3.9.2: brokers 2
    and 3 expired together, `leader 2, epoch 0, isr [2, 3, 1]` then `leader -1, epoch 2, isr [1]`, then the
    election of broker 1 in epoch 3). Each removed broker's registration must be gone (`live`)."""
    old, isr, new_isr = prev.get("leader"), list(prev.get("isr") or []), list(ev.get("isr") or [])
    if ev.get("leader") != -1 or old is None or old < 0 or old not in isr:
        return False
    if len(isr) > 1:
        removed = [b for b in isr if b not in new_isr]
        if not new_isr or new_isr != [b for b in isr if b in new_isr] or old not in removed:
            return False
        if removed == [old]:
            return True
        t = float(ev.get("t") or 0.0)
        gone = live is not None and all(live.state_at(b, t) is False or live.goes_down_within(b, t, t + STEP_S)
                                        for b in removed)
        bumps = int(ev.get("leader_epoch") or 0) - int(prev.get("leader_epoch") or 0)
        return gone and 1 <= bumps <= len(removed)
    leader = nxt.get("leader") if nxt is not None else None
    elected = (nxt is not None and leader is not None and int(leader) >= 0
               and float(nxt.get("t") or 0.0) - float(ev.get("t") or 0.0) <= STEP_S)
    return new_isr == isr and elected


def _reassigned_in(prev: Row, ev: Row, assigned: list[int]) -> list[int]:
    """Replicas a reassignment added that are in the ISR it completed with: a reassignment completes only once its
    new replicas are in the ISR, and KRaft does not bump the leader epoch when the ISR grows, so their joining may
    fall between two observed states (seen on Apache Kafka 4.1.0: leader 1, ISR [1], replicas [2, 1], then 0.8 s
    later leader 2, ISR [2], replicas [2], epoch 0 -> 1)."""
    old = {int(b) for b in prev.get("isr") or []}
    return [int(b) for b in ev.get("isr") or [] if int(b) in assigned and int(b) not in old]


def _plausible_live_sets(live: Liveness, t: float, exclude: set[int],
                         took_office: float | None = None) -> list[frozenset[int]]:
    """The live sets the controller may have elected with at t: the observed one, with or without the brokers
    going down near t, with or without the brokers coming up near t (the controller handles a registration as an
    event of its own, after the failover or election it is busy with: seen on Apache Kafka 3.9.2, a new controller
    elected broker 3 uncleanly though broker 2, first in AR order, had registered 47 ms before the write).
    A ZooKeeper-mode controller that took office at `took_office` (`liveness.took_office_before`) elects with the
    brokers it read then until it reaches their BrokerChange events, so a broker registered since may be unknown,
    and one lost since still live to it, however long its failover takes (3.9.2, weak-durability: controller 2
    took office at 31.375 s, broker 3 registered at 31.710 s, and the failover's offline election at 32.732 s
    chose 2 over 3, first in AR order; recorded zk-3.9.2-election-in-a-failover-before-a-registration)."""
    base = live.live_at(t)
    near = {b for b in live.transitions if live.goes_down_within(b, t - LIVENESS_GRACE_S, t + LIVENESS_GRACE_S)}
    ups = {b for b, trans in live.transitions.items()
           if any(up and t - LIVENESS_GRACE_S <= tt <= t + LIVENESS_GRACE_S for tt, up in trans)}
    # and a loss is an event of its own too: the controller elects, for an earlier loss, among brokers whose own
    # registration vanished moments before (3.9.2: brokers 3 and 2 expired 0.5 s apart; the new controller elected
    # 2 for orders/1 after 3's loss, then 1 after 2's; recorded zk-3.9.2-election-before-a-loss-is-handled)
    # and, for a controller still in its failover, every broker lost since it took office: the failover elects with
    # the brokers it read then, the loss a later BrokerChange event (3.9.2, weak-isr seed 1's minimal: controller 3
    # took office at 61.566 s, broker 2's registration went at 62.4 s, and the failover, first writing at 65.733 s,
    # elected 2 at 66.67 s; the symmetric case of a registration since, below)
    lost_from = t - LIVENESS_GRACE_S if took_office is None else min(t - LIVENESS_GRACE_S, took_office)
    ups |= {b for b in live.transitions if live.goes_down_within(b, lost_from, t)}
    since = t - UNSEEN_UP_S if took_office is None else min(t - UNSEEN_UP_S, took_office)
    unseen = sorted(b for b, trans in live.transitions.items() if any(up and since <= tt <= t for tt, up in trans))
    # A broker registered since may be unknown whether or not the ups after t (observer skew) are counted: a new
    # controller reads the registered brokers once (`initializeControllerContext`) and elects with them in its
    # failover (3.9.2, weak-isr: controller 3 took office at 27.875 s, broker 1 registered at 28.462 s and broker
    # 2 at 29.952 s; the failover's election at 28.627 s chose 3 uncleanly, the only broker it knew; recorded
    # zk-3.9.2-failover-election-before-two-registrations).
    known = [base | ups] + ([start - set(some) for start in (base | ups, base) for n in range(1, len(unseen) + 1)
                             for some in itertools.combinations(unseen, n)] if len(unseen) <= MAX_UNSURE else [])
    sets = {frozenset(live_set - exclude) for with_ups in known for live_set in (with_ups, with_ups - near)}
    sets |= {frozenset(base - exclude), frozenset((base - near) - exclude)}
    return sorted(sets, key=sorted)


def _with_unseen_losses(lives: list[frozenset[int]], prev: Row, t: float, ctx: CheckContext, shut: set[int],
                        live: Liveness) -> list[frozenset[int]]:
    """The live sets, without the brokers that were surely not acceptable leaders and with or without those that
    may have been lost unobserved between the state before (`prev`) and the election observed at t.
    - A broker whose graceful stop began before `prev`, not seen back since, was shutting down or down: neither
      Kafka's ZooKeeper controller (`liveBrokerIds` leaves out `shuttingDownBrokerIds`) nor KRaft's
      (`isAcceptableLeader`: unfenced and not in controlled shutdown; its completed shutdown fences it,
      `processBrokerHeartbeat` SHUTDOWN_NOW) elects it, though the fence went unobserved (hunt kraft schedule 29:
      the ELR's only member was stopped).
    - A broker a fault stopped or cut off from the metadata quorum in between may have been fenced or expired and
      back unobserved: the observer asked a broker whose cache froze (hunt kraft schedule 24: brokers 1 and 2 cut
      off from the controllers, 3 elected; the observer saw neither fence)."""
    t0 = float(prev.get("t") or 0.0)
    started = {b: w.start for w in ctx.faults.windows if w.contains(t0) for b in w.effect.stopped_gracefully()}
    surely = {b for b in shut & set(started)  # back (registered, unfenced) before the heal ended: electable again
              if not any(up and started[b] < tt <= t + LIVENESS_GRACE_S for tt, up in live.transitions.get(b, ()))}
    unsure = sorted(ctx.faults.maybe_gone_between(t0, t) - surely)
    if len(unsure) > MAX_UNSURE:
        unsure = []
    drops = [frozenset(c) for n in range(len(unsure) + 1) for c in itertools.combinations(unsure, n)]
    return sorted({lv - surely - d for lv in lives for d in drops}, key=sorted)


def _eligible(prev: Row, usable: frozenset[int]) -> list[int]:
    """The replicas a clean election chooses from: the ISR; in KRaft with an ELR, the ELR instead
    when no ISR member is `usable` (PartitionChangeBuilder.isValidNewLeader: in the ISR, or in the
    ELR when the target ISR is empty; the unusable leave the target ISR)."""
    isr = list(prev.get("isr") or [])
    elr = prev.get("elr")
    if elr is None or any(b in usable for b in isr):
        return isr
    return [int(b) for b in elr]


def _state_text(prev: Row, assigned: list[int]) -> str:
    text = f"AR {assigned}, ISR {prev['isr']}"
    if prev.get("elr") is not None:
        text += f", ELR {list(prev['elr'])}"
        if prev.get("last_known_elr"):
            text += f", last known ELR {list(prev['last_known_elr'])}"
    return text


class ElectionConforms:
    id = "partition.election_conforms"
    family = "partition"
    needs = frozenset({"partition.state", "broker.up"})

    def run(self, ctx: CheckContext) -> CheckResult:
        from harness.model.election import elect_leader

        registrations = authoritative(ctx.rows(*LIVENESS_TYPES))
        live = build_liveness(registrations)
        controllers = lv_facts.controller_events(ctx.rows("controller"))
        judged = unexplained = offline_replica_steps = 0
        per_strategy: dict[str, int] = defaultdict(int)
        per_eligibility: dict[str, int] = defaultdict(int)
        bad: list[dict[str, Any]] = []
        states = _states(ctx)
        writes = lv_facts.first_writes(states)
        for (_src, topic, part), evs in _by_partition(states).items():
            prev = None
            for i, ev in enumerate(evs):
                nxt = evs[i + 1] if i + 1 < len(evs) else None
                first = _first_leader(ev, live, ctx.operations) if prev is None else None
                if first is not None:
                    judged += 1
                    per_strategy["new"] += 1
                    expected, got = first
                    if got not in expected:
                        want = sorted(-1 if x is None else x for x in expected)
                        problem = (f"{tp_label(topic, part)} new partition's first leader is {ev['leader']}, model "
                                   f"prescribes {' or '.join(map(str, want))} (the first live of replicas "
                                   f"{list(ev.get('replicas') or [])})")
                        bad += [evidence(ev, strategy="new", expected=want),
                                evidence(ev, strategy="new", expected=want, problem=problem)]
                elif prev is not None and _dead_leader_left_isr(prev, ev, nxt, live):
                    offline_replica_steps += 1
                elif prev is not None and ev.get("leader") != prev.get("leader") and ev.get("leader") is not None:
                    t = float(ev.get("t") or 0.0)
                    shutting = ctx.faults.stopping_gracefully(t)
                    strategy, elect_from = _strategy(prev, ev, live, shutting, t, ctx.operations)
                    if strategy is None or prev.get("isr") is None:
                        unexplained += 1
                    else:
                        judged += 1
                        per_strategy[strategy] += 1
                        old = prev.get("leader")
                        shut = set(shutting)
                        if strategy == "controlled_shutdown" and old is not None:
                            shut.add(old)
                        exclude = {old} if strategy == "offline" and old is not None and old >= 0 else set()
                        assigned = elect_from or list(ev.get("replicas") or prev.get("replicas") or [])
                        rejoined = sorted({*joined_unobserved(prev, ev, live),
                                           *(_reassigned_in(prev, ev, assigned) if strategy == "reassign" else ())})
                        views = [prev, {**prev, "isr": [*prev["isr"], *rejoined]}] if rejoined else [prev]
                        took_office = lv_facts.took_office_before(controllers, t, writes)
                        lives = _with_unseen_losses(_plausible_live_sets(live, t, exclude, took_office),
                                                    prev, t, ctx, shut, live)
                        expected = {elect_leader(strategy, assigned, _eligible(p, frozenset(lv) - shut), lv,
                                                 frozenset(shut), ctx.run.unclean_election)
                                    for p in views for lv in lives}
                        last_known = last_known_leader(prev, ev, live)
                        if last_known is not None:
                            expected.add(last_known)
                        got = None if ev["leader"] < 0 else ev["leader"]
                        came_from = None if got is None else eligibility(prev, ev, live)
                        if came_from is not None:
                            per_eligibility[came_from] += 1
                        if ev.get("leader_fenced"):  # K4: only an active broker may lead, the last known one too
                            bad += [evidence(prev, elr=prev.get("elr")), evidence(
                                ev, strategy=strategy, eligibility=came_from, leader_fenced=True,
                                problem=f"{tp_label(topic, part)} {strategy} election picked broker {got} while it "
                                        f"was fenced (only an unfenced broker may lead; "
                                        f"{_state_text(prev, assigned)})")]
                        elif got not in expected:
                            want = sorted(-1 if x is None else x for x in expected)
                            bad += [evidence(prev, elr=prev.get("elr")), evidence(
                                ev, strategy=strategy, expected=want, eligibility=came_from, elr=ev.get("elr"),
                                problem=f"{tp_label(topic, part)} {strategy} election picked {ev['leader']}, "
                                        f"model prescribes {' or '.join(map(str, want))} "
                                        f"({_state_text(prev, assigned)})")]
                prev = ev
        metrics = {"elections_judged": judged, "unexplained_leader_changes": unexplained,
                   "offline_replica_steps": offline_replica_steps, "by_strategy": dict(per_strategy),
                   "by_eligibility": dict(per_eligibility), "violations": len(bad) // 2}
        if bad:
            summary, fault = summary_with_fault(
                ctx, f"{plural(len(bad) // 2, 'election')} off the model: {bad[1]['problem']}",
                float(bad[1].get("t") or 0.0))
            return failed(self.id, summary, bad, metrics, fault)
        if judged == 0 and unexplained == 0:  # a run without faults or elections: a baseline passes
            return passed(self.id, "no leader changed after the first state (nothing to judge)", metrics)
        if judged == 0:
            return unknown(self.id, f"no leader change could be judged ({plural(unexplained, 'unexplained change')})",
                           metrics)
        return passed(self.id, f"all {plural(judged, 'election')} conform to the model"
                               + (f" ({unexplained} unexplained not judged)" if unexplained else ""), metrics)


class LeaderEpochMonotonic:
    id = "partition.leader_epoch_monotonic"
    family = "partition"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        events = [e for e in ctx.rows("partition.state") if e.get("leader_epoch") is not None]
        if not events:
            return unknown(self.id, "no partition.state event carries a leader_epoch")
        bad: list[dict[str, Any]] = []
        changes = 0
        for (_src, topic, part), evs in _by_partition(events).items():
            prev = None
            for ev in evs:
                if prev is not None:
                    changed = ev.get("leader") != prev.get("leader")
                    changes += int(changed)
                    if ev["leader_epoch"] < prev["leader_epoch"]:
                        bad += [evidence(prev), evidence(ev, problem=f"{tp_label(topic, part)} leader_epoch went "
                                                        f"back {prev['leader_epoch']} -> {ev['leader_epoch']}")]
                    elif changed and ev["leader_epoch"] == prev["leader_epoch"]:
                        bad += [evidence(prev), evidence(ev, problem=f"{tp_label(topic, part)} leader changed "
                                                        f"{prev.get('leader')} -> {ev.get('leader')} in the same "
                                                        f"leader_epoch {ev['leader_epoch']}")]
                prev = ev
        metrics = {"states": len(events), "leader_changes": changes, "violations": len(bad) // 2}
        if bad:
            summary, fault = summary_with_fault(
                ctx, f"{plural(len(bad) // 2, 'violation')}: {bad[1]['problem']}", float(bad[1].get("t") or 0.0))
            return failed(self.id, summary, bad, metrics, fault)
        return passed(self.id, f"leader_epoch increased at all {plural(changes, 'leader change')}", metrics)
