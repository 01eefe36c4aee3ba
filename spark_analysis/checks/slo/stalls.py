"""Client-side stalls in pure Python: the twin of `checks/slo/stall_frames.py` that `checks.slo.stall` runs on a
context without Spark and the in-process evaluator runs on its parse, and the pieces both implementations share
(the `Stall` and `Cell` records, the stall order, the fault a stall is tied to). The slo family's own module, so
the Spark checks and the in-process evaluator (a layer above them) both import it downwards.

Inputs are minimal tuples, as `spark_analysis.inprocess.evaluator` collects them while it parses (it drops
the bulk events): `Outcome` (an ack, or a send.error that names a partition) and `Poll`. The
semantics are those of `spark_analysis.checks.slo.stall` (see its docstring); each rule here has its
Spark twin in `stall_frames`, and the tests check that both reach the same stalls.

A `Cell` is what reaches the judge: per key (write: `topic/p`; read: `group topic/p`) and fault
window (or none), the worst stall, the worst closed duration, how many stalls and how many of them
are open. Spark returns exactly these rows; here `cells_of` folds the stalls into them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from spark_analysis.facts.faults import ATTRIBUTION_GRACE_S, FaultWindow
from spark_analysis.facts.transactions import COMMITTED, TransactionIndex, committed_only


class Outcome(NamedTuple):
    """An ack, or a send.error with a partition: the producer learnt how its write to `partition` went."""

    who: str
    topic: str
    partition: int
    t: float
    seq: int
    is_ack: bool
    latency_ms: float | None
    value: int | None
    offset: int | None
    txn: int | None = None
    """The transaction the record belongs to (a transactional producer's), else None."""


class Poll(NamedTuple):
    """A record a group's consumer received."""

    who: str
    topic: str
    partition: int
    t: float
    seq: int
    offset: int
    value: int | None
    consumer: str = ""
    committed_only: bool = True
    """The consumer reads committed records only (`transactions.committed_only`)."""


ReadableAt = Callable[[Outcome], float | None]
"""When an acked record becomes readable to a read_committed group (None: never)."""


@dataclass(frozen=True, slots=True)
class Stall:
    """One stall of `who` (producer or group) on `topic/partition`, from `start` to `end` (None: open at
    the end, measured to `until`); `start_seq`/`end_seq` are the events that start and end it."""

    who: str
    topic: str
    partition: int
    start: float
    end: float | None
    until: float
    start_seq: int
    end_seq: int | None
    events: int = 0
    """The outcome events the (write) stall spans; 0 for read stalls."""

    @property
    def duration(self) -> float:
        return self.until - self.start

    def order(self) -> tuple[float, float, str, int, int]:
        """Worst first: longest, then earliest, then by producer/group name and events (Spark sorts the same)."""
        return (-self.duration, self.start, self.who, self.start_seq, -1 if self.end_seq is None else self.end_seq)


@dataclass(frozen=True, slots=True)
class Cell:
    """Per key and fault window (index into the run's windows, or None): the worst stall, the longest
    closed one, how many stalls, how many open, and the outcome events they span."""

    key: str
    fault: int | None
    best: Stall
    closed_max: float | None
    count: int
    open: int
    events: int = 0


def write_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def read_key(group: str, topic: str, partition: int) -> str:
    return f"{group} {topic}/{partition}"


def stall_fault(windows: Sequence[FaultWindow], start: float, until: float) -> int | None:
    """The index of the fault a stall is tied to: the latest in force at its start; else the nearest to its start
    within `ATTRIBUTION_GRACE_S`, ended before it or begun after it (and before the stall ended: a stall starts at the
    last write or read before it, so the fault that caused it can begin a moment later), the first on a tie; else
    the first in force at any point of it. `stall_frames.fault_case` is this rule as a Spark SQL expression."""
    for i in range(len(windows) - 1, -1, -1):
        if windows[i].contains(start):
            return i
    near = [(gap, i) for i, w in enumerate(windows)
            if (gap := fault_gap(w, start, until)) is not None and gap <= ATTRIBUTION_GRACE_S]
    if near:
        return min(near)[1]
    for i, w in enumerate(windows):
        if w.start <= until and (w.end is None or w.end >= start):
            return i
    return None


def fault_gap(w: FaultWindow, start: float, until: float) -> float | None:
    """How far a stall's start lies from a fault not in force then: after the fault's end, or before its start when
    the fault begins within the stall; None otherwise."""
    if start < w.start <= until:
        return w.start - start
    if w.end is not None and start > w.end:
        return start - w.end
    return None


def cells_of(stalls: Iterable[Stall], windows: Sequence[FaultWindow], key_of_read: bool) -> list[Cell]:
    """Fold stalls into cells (per key and tied fault), as `stall_frames` aggregates them."""
    acc: dict[tuple[str, int | None], list[Any]] = {}
    for s in stalls:
        key = read_key(s.who, s.topic, s.partition) if key_of_read else write_key(s.topic, s.partition)
        slot = (key, stall_fault(windows, s.start, s.until))
        cur = acc.get(slot)
        closed = s.duration if s.end is not None else None
        if cur is None:
            acc[slot] = [s, closed, 1, int(s.end is None), s.events]
            continue
        if s.order() < cur[0].order():
            cur[0] = s
        if closed is not None and (cur[1] is None or closed > cur[1]):
            cur[1] = closed
        cur[2] += 1
        cur[3] += int(s.end is None)
        cur[4] += s.events
    return [Cell(key, fault, v[0], v[1], v[2], v[3], v[4]) for (key, fault), v in acc.items()]


def valid_latency(value: object) -> float | None:
    """latency_ms as a finite number, else None (missing, null, NaN, infinite, not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def send_time(o: Outcome, send_min: Mapping[int, float]) -> float:
    """When the write was sent: t - latency (negative latencies count as 0); without a usable latency,
    the first send of its value (never after t); else t."""
    if o.latency_ms is not None:
        return o.t - max(o.latency_ms, 0.0) / 1000.0
    sent = send_min.get(o.value) if o.value is not None else None
    return o.t if sent is None else min(sent, o.t)


def write_stalls(outcomes: Iterable[Outcome], send_min: Mapping[int, float], horizon: float) -> Iterator[Stall]:
    """Per (producer, topic, partition), in (t, seq) order: a stall ends at each ack A, from
    max(previous ack's t, the earliest send time of the outcomes since it, A included) to A.t;
    outcomes after the last ack form an open stall measured to `horizon`."""
    streams: dict[tuple[str, str, int], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        streams[(o.who, o.topic, o.partition)].append(o)
    for (who, topic, partition), evs in streams.items():
        evs.sort(key=lambda o: (o.t, o.seq))
        prev: tuple[float, int] | None = None
        first: tuple[float, float, int] | None = None  # (send_t, t, seq) of the earliest send since `prev`
        n = 0
        for o in evs:
            cand = (send_time(o, send_min), o.t, o.seq)
            if first is None or cand < first:
                first = cand
            n += 1
            if o.is_ack:
                yield _write_stall(who, topic, partition, prev, first, o.t, o.seq, o.t, n)
                prev, first, n = (o.t, o.seq), None, 0
        if first is not None:
            yield _write_stall(who, topic, partition, prev, first, None, None, horizon, n)


def _write_stall(who: str, topic: str, partition: int, prev: tuple[float, int] | None,
                 first: tuple[float, float, int], end: float | None, end_seq: int | None, until: float,
                 n: int) -> Stall:
    if prev is not None and prev[0] >= first[0]:
        start, start_seq = prev
    else:
        start, start_seq = first[0], first[2]
    return Stall(who, topic, partition, start, end, until, start_seq, end_seq, n)


def open_until(last_poll: dict[str, float], behind: Mapping[str, float]) -> None:
    """Where each group's open read stalls end, in place: at its last poll of anything (a group that stopped
    consuming is not stalled), or at the end of its drain when that drain ended behind (`behind`: group -> the
    drain's end; a client that stopped fetching is). Both paths (this module's and `stall_frames`) end them here."""
    for group, t in behind.items():
        if group in last_poll:
            last_poll[group] = max(last_poll[group], t)


def read_stalls(acks: Iterable[Outcome], polls: Iterable[Poll], readable_at: ReadableAt | None = None,
                behind: Mapping[str, float] | None = None) -> Iterator[Stall]:
    """Per (group, topic, partition) of the topics the group polls, in (t, seq) order: acks raise the
    high watermark to offset+1, the group's polls its position. A stall ends at each poll P: from the
    previous poll (if records were already waiting then, i.e. high watermark > position) or else from the
    first ack after it above the position, to P.t; before the group's first poll of the partition, from
    the later of the group's first poll of the topic and the partition's first ack. Records still waiting
    after the group's last poll of the partition: an open stall until the group's last poll of anything, or
    until its drain's end when the drain ended behind (`behind`: group -> that time; a stuck client is stalled,
    a group that stopped consuming is not).

    For a read_committed group (some poll of it reads committed records only) and `readable_at`, an ack
    counts at `readable_at(ack)` instead of its t (a committed transaction's record waits from the commit),
    or not at all when that is None (a record of an aborted or unknown transaction never waits for it)."""
    by_stream: dict[tuple[str, str, int], list[Poll]] = defaultdict(list)
    first_poll: dict[tuple[str, str], tuple[float, int]] = {}
    last_poll: dict[str, float] = {}
    committed_groups: set[str] = set()
    for p in polls:
        by_stream[(p.who, p.topic, p.partition)].append(p)
        gt = (p.who, p.topic)
        if gt not in first_poll or (p.t, p.seq) < first_poll[gt]:
            first_poll[gt] = (p.t, p.seq)
        last_poll[p.who] = max(last_poll.get(p.who, p.t), p.t)
        if p.committed_only:
            committed_groups.add(p.who)
    open_until(last_poll, behind or {})
    readers: dict[str, list[str]] = defaultdict(list)
    for group, topic in first_poll:
        readers[topic].append(group)
    acks_of: dict[tuple[str, int], list[Outcome]] = defaultdict(list)
    for a in acks:
        if a.is_ack and a.offset is not None and a.topic in readers:
            acks_of[(a.topic, a.partition)].append(a)
    streams = set(by_stream) | {(g, topic, p) for (topic, p) in acks_of for g in readers[topic]}
    for group, topic, partition in sorted(streams):
        here = acks_of.get((topic, partition), ())
        merged: list[tuple[float, int, bool, int]]
        if readable_at is not None and group in committed_groups:
            merged = [(at, a.seq, True, int(a.offset or 0)) for a in here if (at := readable_at(a)) is not None]
        else:
            merged = [(a.t, a.seq, True, int(a.offset or 0)) for a in here]
        merged.extend((p.t, p.seq, False, p.offset) for p in by_stream.get((group, topic, partition), ()))
        merged.sort(key=lambda e: (e[0], e[1]))
        yield from _read_stream(group, topic, partition, merged, first_poll[(group, topic)], last_poll[group])


def _read_stream(group: str, topic: str, partition: int, merged: list[tuple[float, int, bool, int]],
                 g0: tuple[float, int], last: float) -> Iterator[Stall]:
    pos = hw = 0
    prev: tuple[float, int] | None = None  # the previous poll of this partition
    waiting = False  # records were waiting right after `prev`
    first: tuple[float, int] | None = None  # the first ack above the position since `prev`

    def start() -> tuple[float, int] | None:
        if prev is None:
            return None if first is None else (first if first[0] >= g0[0] else g0)
        if waiting:
            return prev
        return first

    for t, seq, is_ack, offset in merged:
        if is_ack:
            if first is None and offset + 1 > pos:
                first = (t, seq)
            hw = max(hw, offset + 1)
            continue
        began = start()
        if began is not None:
            yield Stall(group, topic, partition, began[0], t, t, began[1], seq)
        pos = max(pos, offset + 1)
        prev, waiting, first = (t, seq), hw > pos, None
    began = start()
    if began is not None and began[0] < last:
        yield Stall(group, topic, partition, began[0], None, last, began[1], None)


def from_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[list[Outcome], list[Poll], dict[int, float], int]:
    """The outcomes (acks and send.errors with a partition), polls (with an offset), first send time per
    value and the count of send.errors without a partition, from event dicts (a context without Spark)."""
    outcomes: list[Outcome] = []
    polls: list[Poll] = []
    send_min: dict[int, float] = {}
    errors_without_partition = 0
    for ev in rows:
        kind = ev.get("type")
        t = float(ev.get("t") or 0.0)
        if kind == "send":
            value = ev.get("value")
            if value is not None and (value not in send_min or t < send_min[value]):
                send_min[value] = t
        elif kind in ("ack", "send.error"):
            if ev.get("partition") is None:
                errors_without_partition += kind == "send.error"
                continue
            outcomes.append(outcome_of(ev, t, int(ev.get("seq") or 0)))
        elif kind == "poll" and ev.get("offset") is not None and ev.get("partition") is not None:
            polls.append(poll_of(ev, t, int(ev.get("seq") or 0)))
    return outcomes, polls, send_min, errors_without_partition


def _name(*values: object) -> str:
    return next((str(v) for v in values if v is not None), "?")


def outcome_of(ev: Mapping[str, Any], t: float, seq: int) -> Outcome:
    """An ack or send.error (with a partition) as an `Outcome`; producer falls back to src."""
    return Outcome(_name(ev.get("producer"), ev.get("src")), _name(ev.get("topic")), int(ev["partition"]), t, seq,
                   ev.get("type") == "ack", valid_latency(ev.get("latency_ms")), ev.get("value"), ev.get("offset"),
                   ev.get("txn"))


def poll_of(ev: Mapping[str, Any], t: float, seq: int) -> Poll:
    """A poll (with a partition and an offset) as a `Poll`; group and consumer fall back to src."""
    return Poll(_name(ev.get("group"), ev.get("src")), _name(ev.get("topic")), int(ev["partition"]), t, seq,
                int(ev["offset"]), ev.get("value"), _name(ev.get("consumer"), ev.get("src")),
                committed_only(ev.get("isolation")))


def readable_to_committed(index: TransactionIndex) -> ReadableAt | None:
    """When each acked record becomes readable to a read_committed group: at its ack outside transactions,
    at the later of its ack and its transaction's commit when committed, never otherwise; None (every ack
    at its t) for a run without transactions."""
    if not index.any:
        return None

    def at(o: Outcome) -> float | None:
        if o.txn is None:
            return o.t
        txn = index.get(o.who.removeprefix("producer:"), o.txn)
        if txn is None or txn.outcome != COMMITTED:
            return None
        return o.t if txn.end_t is None else max(o.t, txn.end_t)

    return at


def pending_sends(rows: Iterable[Mapping[str, Any]]) -> int:
    """Values sent that got neither an ack nor a send.error (as the delivery checks count `unfinished`)."""
    sent: set[int] = set()
    done: set[int] = set()
    for ev in rows:
        value = ev.get("value")
        if value is None:
            continue
        if ev.get("type") == "send":
            sent.add(value)
        elif ev.get("type") in ("ack", "send.error"):
            done.add(value)
    return len(sent - done)


def events_at(seqs: Iterable[int], outcomes: Iterable[Outcome], polls: Iterable[Poll]) -> dict[int, dict[str, Any]]:
    """The evidence fields of the outcomes and polls at `seqs` (one pass over both)."""
    wanted = set(seqs)
    out: dict[int, dict[str, Any]] = {}
    for o in outcomes:
        if o.seq in wanted:
            out[o.seq] = {"seq": o.seq, "t": o.t, "type": "ack" if o.is_ack else "send.error", "topic": o.topic,
                          "partition": o.partition, "offset": o.offset, "value": o.value, "producer": o.who}
    for p in polls:
        if p.seq in wanted:
            out[p.seq] = {"seq": p.seq, "t": p.t, "type": "poll", "topic": p.topic, "partition": p.partition,
                          "offset": p.offset, "value": p.value, "group": p.who}
    return out
