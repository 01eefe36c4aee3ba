"""KRaft controller-quorum checks (KAFKA-BEHAVIOUR.md §8), in Python over `quorum.state` events.

The quorum observer (src `quorum`) asks every voter for its view of the Raft quorum and writes a
`quorum.state` event {voter, leader, epoch, role, high_watermark, voters, observers, error} whenever
that voter's (role, leader, epoch, error) changes, and about once a second while it answers as
leader (so a leader's high-watermark progress is recorded). Only the leader answers DescribeQuorum
without error; the other voters answer NOT_LEADER_OR_FOLLOWER (role follower, usually with no
leader hint), so a leader claim is a `role: leader` answer without error.

- `quorum.no_split_brain` (KIP-595; Kafka's `raft/.../LeaderState.java`):
  (a) no two different voters answer as leader of the same epoch (Raft's election safety: a voter
      grants one vote per epoch and a leader needs a majority, so an epoch has at most one leader);
  (b) a superseded leader commits nothing more: once another voter is seen leading a higher epoch
      (as leader, or named leader by a voter's answer), the old leader's reports for its old epoch
      never carry a high watermark beyond the highest it reported before that moment. The high
      watermark only advances on offsets a majority of voters fetched (`maybeUpdateHighWatermark`),
      and the voters that elected the newer leader no longer fetch from the old one, so a leader
      cut off from the majority cannot commit. Reports within `REPORT_GRACE_S` after the newer
      epoch was first seen still count as "before": the old leader is polled about once a second,
      so an advance it made before the newer epoch existed can first be reported after it was seen;
      likewise within the grace after a fault that froze the old leader ends (it then handles the
      Fetch requests that reached it before the majority left it).
  Unknown when no voter ever answered as leader. The check applies to KRaft runs only
  (`spark_analysis.ingest.runinfo.MODE_FAMILIES`): in a ZooKeeper run it is not selected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from spark_analysis.checks.shared.common import evidence, plural
from spark_analysis.facts.context import CheckContext, Row
from spark_analysis.facts.faults import FaultIndex, parse_json_text
from spark_analysis.facts.liveness import quorum_answer
from spark_analysis.result import CheckResult, failed, passed, unknown

REPORT_GRACE_S = 2.0
"""How long after a newer epoch is first seen an old leader's report still counts as made before it."""


def quorum_row(ev: Row, **extra: Any) -> dict[str, Any]:
    """An evidence row of a `quorum.state` event: the common fields plus voter, role and high watermark."""
    return evidence(ev, voter=ev.get("voter"), role=ev.get("role"), high_watermark=ev.get("high_watermark"),
                    **extra)


def leader_named(ev: Row) -> int | None:
    """The leader an answer names: the voter itself when it answers as leader, else its `leader` (None if -1)."""
    if ev.get("role") == "leader":
        return int(ev["voter"])
    leader = ev.get("leader")
    return int(leader) if leader is not None and int(leader) >= 0 else None


def _t(ev: Row) -> float:
    return float(ev.get("t") or 0.0)


def _first_problem(rows: list[dict[str, Any]]) -> str:
    return str(next(r["problem"] for r in rows if "problem" in r))


def shared_epochs(claims: Iterable[Row]) -> tuple[list[dict[str, Any]], dict[int, list[int]]]:
    """Rule (a): evidence of epochs two voters answered as leader of (per epoch the first claim of
    its first leader, then the first claim of each other voter), and the leaders of every epoch."""
    first: dict[int, dict[int, Row]] = {}
    rows: list[dict[str, Any]] = []
    for ev in claims:
        epoch, voter = int(ev["epoch"]), int(ev["voter"])
        seen = first.setdefault(epoch, {})
        if voter in seen:
            continue
        if seen:
            earlier = next(iter(seen.values()))
            if len(seen) == 1:
                rows.append(quorum_row(earlier))
            rows.append(quorum_row(ev, problem=f"voters {', '.join(map(str, seen))} and {voter} both answered "
                                               f"as leader of epoch {epoch}"))
        seen[voter] = ev
    return rows, {epoch: list(voters) for epoch, voters in first.items()}


def resume_clock(faults: FaultIndex) -> Callable[[int, float], float]:
    """`resumed(voter, t)`: the last moment at or before t that a fault which stopped the voter (froze or killed
    it: its effect is `down`) ended; t itself while one is in force; -inf if none did. A stopped voter handles
    nothing, so what it does just after it comes back answers what reached it before."""
    stopping = [w for w in faults.windows if w.effect.down]

    def resumed(voter: int, t: float) -> float:
        last = float("-inf")
        for w in stopping:
            if voter in w.effect.stopped() and w.start <= t:
                if w.end is None or w.end > t:
                    return t
                last = max(last, w.end)
        return last

    return resumed


def _never(voter: int, t: float) -> float:
    return float("-inf")


def superseded_advances(answers: list[Row], grace: float = REPORT_GRACE_S,
                        resumed: Callable[[int, float], float] = _never) -> tuple[list[dict[str, Any]], int]:
    """Rule (b): evidence of superseded leaders whose high watermark advanced, and how many leaders
    (voter, epoch) were judged: superseded, and reporting a high watermark after the newer epoch was
    seen (plus the grace). Per violation: the old leader's highest report before that moment, the
    answer that first showed the newer epoch, and the first report beyond it. A leader frozen by a fault
    (`resumed`) gets the grace again once it thaws: it then handles the Fetch requests its voters sent before
    they left it, which acknowledge what a majority held in its epoch (seen on Kafka 3.3.1: a leader frozen
    for 25 s reported 41 -> 42 half a second after it thawed, 22 s after the newer epoch)."""
    reports: dict[tuple[int, int], list[Row]] = {}
    for ev in answers:
        if ev.get("role") == "leader" and ev.get("epoch") is not None and not ev.get("error"):
            reports.setdefault((int(ev["voter"]), int(ev["epoch"])), []).append(ev)
    rows: list[dict[str, Any]] = []
    judged = 0
    for (voter, epoch), own in sorted(reports.items()):
        newer = next((ev for ev in answers if ev.get("epoch") is not None and int(ev["epoch"]) > epoch
                      and leader_named(ev) not in (None, voter)), None)
        if newer is None:
            continue
        marks = [ev for ev in own if ev.get("high_watermark") is not None]
        early = [_t(ev) < max(_t(newer), resumed(voter, _t(ev))) + grace for ev in marks]
        before = [ev for ev, e in zip(marks, early, strict=True) if e]
        after = [ev for ev, e in zip(marks, early, strict=True) if not e]
        if not before and after:
            before, after = after[:1], after[1:]
        if not before or not after:
            continue
        judged += 1
        base = max(before, key=lambda ev: int(ev["high_watermark"]))
        hw = int(base["high_watermark"])
        advance = next((ev for ev in after if int(ev["high_watermark"]) > hw), None)
        if advance is None:
            continue
        rows += [quorum_row(base), quorum_row(newer, leader=leader_named(newer)), quorum_row(
            advance, problem=f"voter {voter}, leader of epoch {epoch}, advanced its high watermark {hw} -> "
                             f"{advance['high_watermark']} at {_t(advance):.3f}s after voter {leader_named(newer)} "
                             f"was seen leading epoch {newer['epoch']} at {_t(newer):.3f}s")]
    return rows, judged


class NoSplitBrain:
    id = "quorum.no_split_brain"
    family = "quorum"
    needs = frozenset({"quorum.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        states = ctx.rows("quorum.state")
        answers = sorted((ev for ev in states if quorum_answer(ev)), key=lambda ev: (_t(ev), ev.get("seq", 0)))
        claims = [ev for ev in answers if ev.get("role") == "leader" and ev.get("epoch") is not None
                  and not ev.get("error")]
        if not claims:
            return unknown(self.id, f"no voter answered as leader in {plural(len(states), 'quorum.state event')}",
                           {"quorum_states": len(states), "answers": len(answers)})
        shared, leaders = shared_epochs(claims)
        advances, judged = superseded_advances(answers, resumed=resume_clock(ctx.faults))
        n_shared = sum(1 for voters in leaders.values() if len(voters) > 1)
        n_advances = sum(1 for r in advances if "problem" in r)
        metrics = {"quorum_states": len(states), "answers": len(answers), "leader_reports": len(claims),
                   "epochs_with_leader": len(leaders), "max_epoch": max(leaders),
                   "epochs_with_two_leaders": n_shared, "superseded_leaders_judged": judged,
                   "superseded_advances": n_advances, "report_grace_s": REPORT_GRACE_S}
        if shared or advances:
            parts = []
            if shared:
                parts.append(f"{plural(n_shared, 'epoch')} with two leaders: {_first_problem(shared)}")
            if advances:
                parts.append(f"{plural(n_advances, 'superseded leader')} committed: {_first_problem(advances)}")
            first = next(r for r in shared + advances if "problem" in r)
            fault = ctx.faults.active_at(float(first.get("t") or 0.0))
            summary = "; ".join(parts) + (f" during {fault.label}" if fault else "")
            return failed(self.id, summary, shared + advances, metrics, fault.label if fault else None)
        note = (f"; {plural(judged, 'superseded leader')} reporting on never advanced its high watermark" if judged
                else "")
        return passed(self.id, f"one leader per epoch across {plural(len(leaders), 'epoch')}{note}", metrics)


FETCH_TIMEOUT_MS = 2000
"""Kafka's default `controller.quorum.fetch.timeout.ms` (`raft/QuorumConfig.java`)."""
CHECK_QUORUM_FACTOR = 1.5
"""`LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR`: a leader resigns after this many fetch timeouts without fetches from
a majority of the voters."""


def resign_deadline_s(fetch_timeout_ms: int) -> float:
    """How long a superseded leader may still answer as leader: the check-quorum timeout, plus the grace of the
    observer's reports (`REPORT_GRACE_S`)."""
    return CHECK_QUORUM_FACTOR * fetch_timeout_ms / 1000.0 + REPORT_GRACE_S


def majority_cut(faults: FaultIndex) -> Callable[[int, float, Iterable[int]], float | None]:
    """`cut(voter, t, others)`: since when, at t, faults in force have cut the links from enough of the `others`
    voters to `voter` that it can hear Fetch from no majority of them and itself (the links the faults recorded,
    `FaultEffect.cuts`; for each link the earliest cut in force, whole once its action returned, `start + took`:
    a `target: controller` asks who leads before it cuts; then the one that took the majority); None when a
    majority could still reach it."""
    def cut(voter: int, t: float, others: Iterable[int]) -> float | None:
        peers = sorted(set(others) - {voter})
        dst = f"controller:{voter}"
        starts = sorted(min(found) for x in peers if (found := [
            w.start + w.took for w in faults.windows if w.contains(t) and w.effect.cuts(f"controller:{x}", dst)]))
        voters = len(peers) + 1
        needed = voters - (voters // 2 + 1) + 1  # cut links after which the rest, itself counted, are no majority
        return starts[needed - 1] if len(starts) >= needed else None

    return cut


def _clock(ev: Row, voter: int, newer_t: float, seen: set[int], resumed: Callable[[int, float], float],
           cut: Callable[[int, float, Iterable[int]], float | None]) -> tuple[float, float | None]:
    """Where the resignation clock of `voter`'s leader claim `ev` starts (`late_leaders`), and when faults cut it
    off from a majority of the voters its answer lists (or the voters seen), None if they had not."""
    listed = parse_json_text(ev.get("voters"))  # JSON text in Spark's rows
    others = [int(v["id"]) for v in listed if isinstance(v, dict) and v.get("id") is not None] \
        if isinstance(listed, list) else []
    others = others or sorted(seen)
    lost = cut(voter, _t(ev), others)
    start = newer_t if lost is None else min(newer_t, lost)
    return max(start, resumed(voter, _t(ev))), lost


def late_leaders(answers: list[Row], resumed: Callable[[int, float], float], deadline_s: float,
                 cut: Callable[[int, float, Iterable[int]], float | None]
                 ) -> tuple[list[dict[str, Any]], int, float]:
    """Rule (c) of `LeaderResigns`: evidence of superseded leaders (another voter was seen leading a higher epoch)
    still answering as leader of their epoch longer than `deadline_s` after they could hear no majority, how many
    superseded leaders were judged, and the longest time one kept answering as leader after the newer leader was
    seen. A leader's clock starts at the earlier of the newer leader's first sighting (the voters that elected it
    fetch from it, not from the old one) and `cut(voter, t, others)`, when faults cut it off from a majority of the
    voters; `resumed(voter, t)`: the last moment at or before t that the voter came back from a fault that stopped
    it (-inf if none): a voter frozen or down cannot resign, so its clock starts again there."""
    claims: dict[tuple[int, int], list[Row]] = {}
    for ev in answers:
        if ev.get("role") == "leader" and ev.get("epoch") is not None and not ev.get("error"):
            claims.setdefault((int(ev["voter"]), int(ev["epoch"])), []).append(ev)
    seen = {int(ev["voter"]) for ev in answers if ev.get("voter") is not None}
    rows: list[dict[str, Any]] = []
    judged, longest = 0, 0.0
    for (voter, epoch), own in sorted(claims.items()):
        newer = next((ev for ev in answers if ev.get("epoch") is not None and int(ev["epoch"]) > epoch
                      and leader_named(ev) not in (None, voter)), None)
        if newer is None:
            continue
        judged += 1
        late = [ev for ev in own if _t(ev) > _t(newer)]
        if not late:
            continue
        last = late[-1]
        longest = max(longest, _t(last) - _t(newer))
        clocks = ((ev, *_clock(ev, voter, _t(newer), seen, resumed, cut)) for ev in late)  # up to the first over
        over, lost = next(((ev, lost) for ev, start, lost in clocks if _t(ev) - start > deadline_s), (None, None))
        if over is None:
            continue
        cut_note = f"{_t(over) - lost:.1f}s after faults cut it off from a majority of the voters at {lost:.3f}s " \
                   "and " if lost is not None and lost < _t(newer) else ""
        rows += [quorum_row(newer, leader=leader_named(newer)), quorum_row(
            over, problem=f"voter {voter} still answered as leader of epoch {epoch} at {_t(over):.3f}s, "
                          f"{cut_note}{_t(over) - _t(newer):.1f}s after voter {leader_named(newer)} was seen leading "
                          f"epoch {newer['epoch']} (a leader without fetches from a majority resigns within "
                          f"{deadline_s - REPORT_GRACE_S:g}s)"), quorum_row(last, note="its last answer as leader")]
    return rows, judged, round(longest, 3)


class LeaderResigns:
    """`quorum.leader_resigns` (KIP-595's check quorum, implemented by KAFKA-15489 in Kafka 3.7.0): a leader that
    hears no Fetch from a majority of the voters for 1.5 x `controller.quorum.fetch.timeout.ms` resigns. The
    voters that elected a newer leader fetch from it, so once another voter is seen leading a higher epoch, the
    old leader must stop answering as leader of its epoch within that timeout (plus the reports' grace), counted
    from the moment faults cut the links from a majority of the voters to it when that came first (the Fetches
    stopped there; `majority_cut`: a leader cut off from the voters for 9 s was judged from the newer leader's
    sighting, about 4 s into the cut, and so sat at the deadline); time it spent stopped by a fault (frozen,
    killed) does not count. Kafka 3.3-3.6 never resign: an isolated leader
    answers as leader until it hears of the newer epoch."""

    id = "quorum.leader_resigns"
    family = "quorum"
    needs = frozenset({"quorum.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        states = ctx.rows("quorum.state")
        answers = sorted((ev for ev in states if quorum_answer(ev)), key=lambda ev: (_t(ev), ev.get("seq", 0)))
        if not any(ev.get("role") == "leader" and not ev.get("error") for ev in answers):
            return unknown(self.id, f"no voter answered as leader in {plural(len(states), 'quorum.state event')}",
                           {"quorum_states": len(states)})
        fetch_ms = ctx.run.broker_setting("controller.quorum.fetch.timeout.ms", FETCH_TIMEOUT_MS)
        deadline = resign_deadline_s(fetch_ms)
        resumed = resume_clock(ctx.faults)
        rows, judged, longest = late_leaders(answers, resumed, deadline, majority_cut(ctx.faults))
        metrics = {"superseded_leaders_judged": judged, "longest_leader_after_superseded_s": longest,
                   "fetch_timeout_ms": fetch_ms, "deadline_s": deadline}
        if rows:
            first = next(r for r in rows if "problem" in r)
            fault = ctx.faults.active_at(float(first.get("t") or 0.0))
            return failed(self.id, str(first["problem"]) + (f" during {fault.label}" if fault else ""), rows,
                          metrics, fault.label if fault else None)
        if not judged:
            return passed(self.id, "no leader was superseded (nothing to judge)", metrics)
        return passed(self.id, f"{plural(judged, 'superseded leader')} stopped answering as leader within "
                               f"{deadline:g}s (longest {longest:g}s after the newer leader was seen)", metrics)
