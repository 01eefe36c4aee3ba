"""How the single-process reference (`spark_analysis.reference`) reads one history line as Spark's JSON reader
does: which lines are damaged and how (`damage_kind`: torn, untyped, ill-typed, by `HISTORY_SCHEMA`'s column
types as Spark checks them), the per-run tally of damaged lines (`Damage`, reported as
`spark_analysis.load.read_damage` reports them), and a small event shaped as the row a Spark-collected check
receives (`spark_row`)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import ArrayType, BooleanType, DataType, DoubleType, LongType, StringType

from spark_analysis import load
from spark_analysis.context import Row
from spark_analysis.context import _decode as decode_row
from spark_analysis.load import (
    CORRUPT,
    HISTORY_SCHEMA,
    LOOSE_LEADER_TYPES,
    MAX_LISTED_DAMAGE,
    UNUSED_COLUMNS,
    DamagedLine,
    HistoryDamage,
)

_DOUBLE_WORDS = frozenset({"NaN", "+INF", "+Infinity", "Infinity", "-INF", "-Infinity"})
"""Strings Spark's JSON reader takes as a double."""
_LEADER_TEXT = re.compile(r"-?[0-9]{1,18}")
_TYPE_IN_TEXT = re.compile(load._TYPE_IN_TEXT)  # what Spark's conversion reads from a damaged line's text
_T_IN_TEXT = re.compile(load._T_IN_TEXT)
Check = Callable[[Any], bool]


def _is_long(v: Any) -> bool:
    return type(v) is int and -(2**63) <= v < 2**63


def is_double(v: Any) -> bool:
    return type(v) is float or type(v) is int or (type(v) is str and v in _DOUBLE_WORDS)


def _is_bool(v: Any) -> bool:
    return type(v) is bool


def _anything(v: Any) -> bool:
    return True


def _type_check(dt: DataType) -> Check:
    """Whether a (non-null) JSON value fits a column of type `dt` as Spark's JSON reader reads it."""
    if isinstance(dt, LongType):
        return _is_long
    if isinstance(dt, DoubleType):
        return is_double
    if isinstance(dt, BooleanType):
        return _is_bool
    if isinstance(dt, StringType):
        return _anything  # Spark keeps the JSON text of numbers, objects and arrays
    if isinstance(dt, ArrayType):
        element = _type_check(dt.elementType)
        return lambda v: type(v) is list and all(x is None or element(x) for x in v)
    raise TypeError(f"no JSON type check for {dt}")


_FIELD_CHECKS: dict[str, Check] = {
    f.name: _type_check(f.dataType) for f in HISTORY_SCHEMA.fields
    if f.name not in (CORRUPT, "leader", *UNUSED_COLUMNS) and not isinstance(f.dataType, StringType)
}
"""The typed columns (a string column takes any JSON value; `leader` is checked on its own)."""


def _leader_ok(value: Any, kind: object) -> bool:
    """`leader` is a broker id (an integer, or its digits as a string) except in LOOSE_LEADER_TYPES."""
    if value is None or kind in LOOSE_LEADER_TYPES:
        return True
    if type(value) is int:
        return _LEADER_TEXT.fullmatch(str(value)) is not None
    return type(value) is str and _LEADER_TEXT.fullmatch(value) is not None


def damage_kind(ev: dict[str, Any]) -> str | None:
    """How a parsed line is damaged (DAMAGE_KINDS), or None for an event (`spark_analysis.load.with_damage`)."""
    corrupt = False
    for name, value in ev.items():
        if value is not None:
            check = _FIELD_CHECKS.get(name)
            if check is not None and not check(value):
                corrupt = True
                break
    kind = ev.get("type")
    if corrupt:
        return "torn" if kind is None else "ill-typed"
    if not _leader_ok(ev.get("leader"), kind):
        return "ill-typed"
    return "untyped" if kind is None else None


def json_text(value: Any) -> str:
    """A JSON value as Spark's string column holds it: a string as is, any other value as its JSON text."""
    return value if type(value) is str else json.dumps(value, separators=(",", ":"))


def type_text(value: Any) -> str | None:
    return None if value is None else json_text(value)


def json_object(text: str) -> Any:
    """The JSON value a line holds; like Spark's reader, text after a complete value is ignored."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise
        return json.JSONDecoder().raw_decode(text.lstrip())[0]


_READ_TYPES: dict[str, DataType] = {f.name: f.dataType for f in HISTORY_SCHEMA.fields
                                    if f.name not in (CORRUPT, *UNUSED_COLUMNS)}


def _as_read(value: Any, dt: DataType) -> Any:
    """A (well-typed) JSON value as Spark's JSON reader stores it in a column of type `dt`."""
    if value is None:
        return None
    if isinstance(dt, StringType):
        return json_text(value)
    if isinstance(dt, DoubleType):
        return float(value)
    if isinstance(dt, LongType):
        return int(value)
    if isinstance(dt, ArrayType):
        return [_as_read(x, dt.elementType) for x in value]
    return value


def spark_row(ev: Row) -> Row:
    """A small event as Spark's rows provider hands it to a check (`context.spark_rows_provider`): the
    schema's columns only, typed as Spark read them, without nulls, JSON-valued fields decoded."""
    row = {k: _as_read(v, _READ_TYPES[k]) for k, v in ev.items()
           if k in _READ_TYPES and v is not None and k != "leader"}
    leader = ev.get("leader")
    if leader is not None and _LEADER_TEXT.fullmatch(str(leader)):  # else a member id (group.state): null
        row["leader"] = int(leader)
    row["seq"] = ev["seq"]
    return decode_row(row)


def _text_time(text: str) -> float | None:
    m = _T_IN_TEXT.search(text)
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


@dataclass
class Damage:
    """The damaged lines of one parse, as `spark_analysis.load.read_damage` reports them."""

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
