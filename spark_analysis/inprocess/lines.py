"""What the in-process evaluator (`spark_analysis.inprocess.evaluator`) makes of the lines it reads as Spark's JSON
reader does (`spark_analysis.ingest.json_read`): one pass over the history (`parse`) keeps per written value what the
Spark frames aggregate (`Value`: `frames.per_value`'s facts, its acks, locations and keys), the poll pairs of
`frames.poll_pairs`, the commits, the small events and the tuples of the stall checks (`Parsed`); the per-run
tally of damaged lines (`Damage`, reported as `spark_analysis.ingest.load.read_damage` reports them); an event shaped as
the row a Spark-collected check receives (`spark_row`); and the events a failure shows as evidence, read again from
the history (`events_at`, `events_of_values`) rather than kept for every line.

Same damaged-line policy as `spark_analysis.ingest.load`: a line that is not a complete JSON object
(torn), has no `type` (untyped), or has a field of the wrong JSON type for `HISTORY_SCHEMA`
(ill-typed: `"value": "not-a-number"`, a float offset, a scalar `isr`, a non-integer `leader` outside
`group.state`) is skipped and counted, never read as a half-event; the delivery and consumer checks
then answer under `checks.shared.damage`'s rule. The types follow what Spark's JSON reader accepts
(a double also takes the strings `NaN`/`Infinity`, a string column any JSON value, an array column
nulls; blank lines are not lines; text after a complete object is ignored; the columns no check reads
are not checked). Known differences: a key given twice counts once here (the last value; Spark checks
both), and a bulk event's field outside Arrow's columns is not checked by Spark when Arrow parses its
chunk (`arrow_split`), while it is here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.history.jsonl import iter_lines
from spark_analysis.checks.slo.stalls import Outcome, Poll, outcome_of, poll_of
from spark_analysis.facts.context import Row
from spark_analysis.facts.context import _decode as decode_row
from spark_analysis.facts.transactions import producer_name
from spark_analysis.ingest.json_read import (
    LEADER_TEXT,
    READ_TYPES,
    as_read,
    damage_kind,
    is_double,
    json_object,
    json_text,
    type_text,
)
from spark_analysis.ingest.load import MAX_LISTED_DAMAGE, DamagedLine, HistoryDamage
from spark_analysis.ingest.schema import BULK_TYPES, T_IN_TEXT, TYPE_IN_TEXT

_TYPE_IN_TEXT = re.compile(TYPE_IN_TEXT)  # what Spark's conversion reads from a damaged line's text
_T_IN_TEXT = re.compile(T_IN_TEXT)


def spark_row(ev: Row) -> Row:
    """A small event as Spark's rows provider hands it to a check (`context.spark_rows_provider`): the
    schema's columns only, typed as Spark read them, without nulls, JSON-valued fields decoded."""
    row = {k: as_read(v, READ_TYPES[k]) for k, v in ev.items()
           if k in READ_TYPES and v is not None and k != "leader"}
    leader = ev.get("leader")
    if leader is not None and LEADER_TEXT.fullmatch(str(leader)):  # else a member id (group.state): null
        row["leader"] = int(leader)
    row["seq"] = ev["seq"]
    return decode_row(row)


def _events(path: Path, wanted: Callable[[int], bool]) -> Iterator[Row]:
    """The events (lines read as events, not damaged ones) at the seqs `wanted` picks, as `spark_row`s."""
    for line in iter_lines(path, decode=lambda text: None):
        seq = line.number - 1
        if not wanted(seq):
            continue
        try:
            ev = json_object(line.text)
        except ValueError:
            continue
        if not isinstance(ev, dict) or damage_kind(ev) is not None:
            continue
        ev["type"] = json_text(ev["type"])
        ev["seq"] = seq
        yield spark_row(ev)


def events_at(path: Path, seqs: Collection[int]) -> dict[int, Row]:
    """The events at `seqs` (as `frames.events_by_seq` finds them in Spark)."""
    wanted = set(seqs)
    last = max(wanted, default=-1)
    found: dict[int, Row] = {}
    for row in _events(path, lambda seq: seq in wanted):
        found[int(row["seq"])] = row
        if row["seq"] == last:
            break
    return found


def events_of_values(path: Path, types: Collection[str], values: Collection[int]) -> list[Row]:
    """The events of `types` that name one of `values`, in file order."""
    wanted = set(values)
    if not wanted:
        return []
    return [row for row in _events(path, lambda _seq: True) if row.get("type") in types and row.get("value") in wanted]


def _text_time(text: str) -> float | None:
    m = _T_IN_TEXT.search(text)
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


@dataclass
class Damage:
    """The damaged lines of one parse, as `spark_analysis.ingest.load.read_damage` reports them."""

    by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    by_type: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    listed: list[DamagedLine] = field(default_factory=list)

    def add(self, seq: int, text: str, kind: str, event_type: str | None, t: float | None) -> None:
        if event_type is None:
            m = _TYPE_IN_TEXT.search(text)
            event_type = m.group(1) if m else "?"
        self.by_kind[kind] += 1
        self.by_type[event_type] += 1
        if len(self.listed) < MAX_LISTED_DAMAGE:
            self.listed.append(DamagedLine(seq + 1, t if t is not None else _text_time(text), kind, event_type,
                                           text.rstrip("\r\n")[:120]))

    def history_damage(self, total_lines: int) -> HistoryDamage:
        skipped = sum(self.by_kind.values())
        return HistoryDamage(total_lines, skipped, dict(self.by_kind), dict(self.by_type), tuple(self.listed))


SENT, ACKED, POLLED, ERRORED, DEFINITE, WEAK = 1, 2, 4, 8, 16, 32
"""A value's facts, OR-ed over its events as `frames.FACT_BITS` has them (the transaction outcomes come after)."""
Location = tuple[str, int | None, int]
Key = tuple[str | None, str]


@dataclass(slots=True)
class Value:
    """What the history says about one written value, as `frames.per_value` aggregates it (and the transaction
    checks' first ack and write)."""

    bits: int = 0
    send_seq: int = -1
    send_t: float | None = None
    txns: set[tuple[str, int]] | None = None
    """(producer, txn) of every send/ack/send.error/poll of it that names a transaction."""
    ack_seq: int = -1
    """Its first ack (any, with an offset or not); `ack_t`, `ack_partition`, `ack_offset`: the least of its acks'."""
    ack_t: float = 0.0
    ack_topic: str | None = None
    ack_partition: int | None = None
    ack_offset: int | None = None
    ack: tuple[float, int, str, int, int] | None = None
    """(t, seq, topic, partition, offset) of its first ack at an offset (the transaction checks)."""
    locs: set[Location] = field(default_factory=set)
    key_seq: int = -1
    key: Key | None = None
    """The seq and (producer, key) of its first send with a key."""
    key_ack: tuple[int, int, str, int | None, Key] | None = None
    """(offset, seq, topic, partition, (producer, key)) of its keyed ack at the least offset."""
    txn: tuple[str, int] | None = None
    """(producer, txn) of a transactional record (its first event that names a transaction)."""
    first: tuple[int, float, str, str, str | None] | None = None
    """(seq, t, type, producer, topic) of its first send/ack/send.error."""
    source: int | None = None
    """A pipeline's output record: the input value it was made from (its first write event naming one)."""
    zombie: bool = False
    """Written by a fenced (zombie) transactional client: some write event has `zombie: true`."""


@dataclass
class Parsed:
    """One pass over a history: per value, per location, per consumer partition, and the small events."""

    path: Path
    values: dict[int, Value] = field(default_factory=dict)
    at_offset: dict[Location, set[int]] = field(default_factory=dict)
    valueless: set[Location] = field(default_factory=set)
    """Locations an ack or poll without a value names (a poll skip's known offsets count them)."""
    frontier: dict[tuple[str, int], int] = field(default_factory=dict)
    """The highest offset polled (or pipe.read) per partition."""
    polled_topics: set[str] = field(default_factory=set)
    known: dict[tuple[str, int | None], set[int]] = field(default_factory=lambda: defaultdict(set))
    last_poll: dict[tuple[str, str, int | None], tuple[int, Row]] = field(default_factory=dict)
    nonmonotonic: list[tuple[Row, Row]] = field(default_factory=list)
    gaps: list[tuple[Row, Row]] = field(default_factory=list)
    commits: list[Row] = field(default_factory=list)
    """Every commit with an offset (`group.offsets_kept` reads them with the polls)."""
    small: list[Row] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    """Acks and send.errors that name a partition (the stall checks)."""
    polls: list[Poll] = field(default_factory=list)
    """Polls with a partition and an offset (the stall checks)."""
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    end_t: float = 0.0
    lines: int = 0
    damage: Damage = field(default_factory=Damage)
    keys: dict[Key, Key] = field(default_factory=dict)
    """One (producer, key) tuple per key, shared by the values written with it."""

    @property
    def skipped(self) -> int:
        return sum(self.damage.by_kind.values())


def as_int(value: object) -> int | None:
    """A long column's value (None for null)."""
    return None if value is None else int(value)  # type: ignore[call-overload]


def parse(path: Path) -> Parsed:
    """Read `path` once, line by line as Spark reads it; damaged lines are counted and skipped."""
    st = Parsed(path)
    for line in iter_lines(path, decode=json_object):  # a blank line is no line (Spark's reader skips it too)
        seq, text, ev = line.number - 1, line.text, line.record
        st.lines += 1
        if ev is None:  # not one JSON object (Spark: `_corrupt_record`)
            st.damage.add(seq, text, "torn", None, None)
            continue
        damaged = damage_kind(ev)
        if damaged is not None:
            t = ev.get("t")
            st.damage.add(seq, text, damaged, type_text(ev.get("type")),
                          float(t) if t is not None and is_double(t) else None)
            continue
        ev["seq"] = seq
        kind: str = ev["type"] if type(ev["type"]) is str else json_text(ev["type"])
        ev["type"] = kind
        st.counts[kind] += 1
        t = float(ev.get("t") or 0.0)
        st.end_t = max(st.end_t, t)
        if kind not in BULK_TYPES:
            st.small.append(ev)
            if kind == "pipe.read":
                _pipe_read(st, ev)
            if kind in ("assign", "revoke"):
                for tp in ev.get("partitions") or ():
                    if tp and len(tp) == 2:  # [topic, partition]: a new assignment epoch of the consumer's
                        part = int(tp[1]) if str(tp[1]).lstrip("-").isdigit() else None
                        st.last_poll.pop((str(ev.get("src")), str(tp[0]), part), None)
            continue
        if kind == "commit":
            if ev.get("offset") is not None:
                st.commits.append(spark_row(ev))
            continue
        topic, part, off = str(ev.get("topic")), as_int(ev.get("partition")), as_int(ev.get("offset"))
        if kind in ("ack", "send.error"):
            if part is not None:
                st.outcomes.append(outcome_of(ev, t, seq))
        elif kind == "poll" and off is not None:
            if part is not None:
                st.polls.append(poll_of(ev, t, seq))
                st.frontier[(topic, part)] = max(st.frontier.get((topic, part), -1), off)
            _poll_pair(st, ev, topic, part, off)
        if kind in ("ack", "poll") and off is not None:
            st.known[(topic, part)].add(off)
        value = ev.get("value")
        if value is None:
            if kind in ("ack", "poll") and off is not None:
                st.valueless.add((topic, part, off))
            continue
        v = st.values.get(value)
        if v is None:
            v = st.values[value] = Value()
        if ev.get("txn") is not None:
            pt = (producer_name(ev.get("producer"), ev.get("src")), int(ev["txn"]))
            if v.txns is None:
                v.txns = set()
            v.txns.add(pt)
            if v.txn is None and kind != "poll":
                v.txn = pt
        if kind != "poll":
            if v.first is None:
                raw_topic = ev.get("topic")
                v.first = (seq, t, kind, producer_name(ev.get("producer"), ev.get("src")),
                           None if raw_topic is None else json_text(raw_topic))
            if v.source is None and ev.get("input_value") is not None:
                v.source = int(ev["input_value"])
            v.zombie = v.zombie or ev.get("zombie") is True
        if kind == "send":
            _send(st, v, ev, seq, t)
        elif kind == "send.error":
            v.bits |= ERRORED | (DEFINITE if ev.get("definite") is True else 0)
        elif kind == "ack":
            _ack(st, v, ev, seq, t, topic, part, off)
        else:
            v.bits |= POLLED
            st.polled_topics.add(topic)
        if kind in ("ack", "poll") and off is not None:
            loc = (topic, part, off)
            v.locs.add(loc)
            st.at_offset.setdefault(loc, set()).add(value)
    return st


def _key(st: Parsed, ev: Row) -> Key | None:
    key = ev.get("key")
    if key is None:
        return None
    pk = (ev.get("producer"), json_text(key))
    return st.keys.setdefault(pk, pk)


def _send(st: Parsed, v: Value, ev: Row, seq: int, t: float) -> None:
    acks = ev.get("acks")
    v.bits |= SENT | (WEAK if acks is not None and json_text(acks).lower() not in ("all", "-1") else 0)
    if v.send_t is None or t < v.send_t:
        v.send_t = t
    if v.send_seq < 0:
        v.send_seq = seq
    if v.key is None:
        v.key = _key(st, ev)
        if v.key is not None:
            v.key_seq = seq


def _ack(st: Parsed, v: Value, ev: Row, seq: int, t: float, topic: str, part: int | None, off: int | None) -> None:
    if v.ack_seq < 0:
        v.ack_seq, v.ack_t, v.ack_topic = seq, t, topic
    v.ack_t = min(v.ack_t, t)
    v.bits |= ACKED
    if part is not None and (v.ack_partition is None or part < v.ack_partition):
        v.ack_partition = part
    if off is None:
        return
    if v.ack_offset is None or off < v.ack_offset:
        v.ack_offset = off
    if v.ack is None and part is not None:
        v.ack = (t, seq, topic, part, off)
    key = _key(st, ev)
    if key is not None and (v.key_ack is None or (off, seq) < v.key_ack[:2]):
        v.key_ack = (off, seq, topic, part, key)


def _poll_pair(st: Parsed, ev: Row, topic: str, part: int | None, off: int) -> None:
    """Pair the poll with the consumer's previous poll of the partition in this assignment (`frames.poll_pairs`)."""
    ckey = (str(ev.get("src")), topic, part)
    last = st.last_poll.get(ckey)
    if last is not None:
        if off <= last[0]:
            st.nonmonotonic.append((last[1], ev))
        elif off > last[0] + 1:
            st.gaps.append((last[1], ev))
    st.last_poll[ckey] = (off, ev)


def _pipe_read(st: Parsed, ev: Row) -> None:
    """A pipeline's pipe.read reads its input topic: its value counts as polled, and its offset as read, for
    `delivery.lost_write` (`checks.shared.frames.write_facts`)."""
    topic = str(ev.get("topic"))
    if ev.get("offset") is not None and ev.get("partition") is not None:
        tp = (topic, int(ev["partition"]))
        st.frontier[tp] = max(st.frontier.get(tp, -1), int(ev["offset"]))
    value = ev.get("value")
    if value is None:
        return
    v = st.values.get(value)
    if v is None:
        v = st.values[value] = Value()
    v.bits |= POLLED
    st.polled_topics.add(topic)
