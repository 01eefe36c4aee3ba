"""How Spark's JSON reader reads one history line, value by value, with `HISTORY_SCHEMA`: whether a value fits
its column (`damage_kind`: torn, untyped, ill-typed, as Spark checks the column types), and the value it
stores (`as_read`: a string column keeps the JSON text of a number, object or array). The in-process
evaluator (`inprocess.lines`) and the Python half of the Parquet conversion (`side_rows`) read lines by it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pyspark.sql.types import ArrayType, BooleanType, DataType, DoubleType, LongType, StringType

from spark_analysis.ingest.schema import CORRUPT, HISTORY_SCHEMA, LOOSE_LEADER_TYPES, UNUSED_COLUMNS

_DOUBLE_WORDS = frozenset({"NaN", "+INF", "+Infinity", "Infinity", "-INF", "-Infinity"})
"""Strings Spark's JSON reader takes as a double."""
LEADER_TEXT = re.compile(r"-?[0-9]{1,18}")
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
        return LEADER_TEXT.fullmatch(str(value)) is not None
    return type(value) is str and LEADER_TEXT.fullmatch(value) is not None


def damage_kind(ev: dict[str, Any]) -> str | None:
    """How a parsed line is damaged (DAMAGE_KINDS), or None for an event (`spark_analysis.ingest.load.with_damage`)."""
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


def json_text(value: Any, ascii_only: bool = True) -> str:
    """A JSON value as Spark's string column holds it: a string as is, any other value as its JSON text (as the
    recorder writes it: compact, non-ASCII escaped unless `ascii_only` is False)."""
    return value if type(value) is str else json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only)


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


READ_TYPES: dict[str, DataType] = {f.name: f.dataType for f in HISTORY_SCHEMA.fields
                                    if f.name not in (CORRUPT, *UNUSED_COLUMNS)}


def as_read(value: Any, dt: DataType, ascii_only: bool = True) -> Any:
    """A (well-typed) JSON value as Spark's JSON reader stores it in a column of type `dt` (`ascii_only`: see
    `json_text`)."""
    if value is None:
        return None
    if isinstance(dt, StringType):
        return json_text(value, ascii_only)
    if isinstance(dt, DoubleType):
        return float(value)
    if isinstance(dt, LongType):
        return int(value)
    if isinstance(dt, ArrayType):
        return [as_read(x, dt.elementType, ascii_only) for x in value]
    return value
