"""The machinery of the typed history events: the base class, structured targets, and JSON both ways.

Every event type is a frozen, slotted dataclass deriving from `HistoryEvent`; its `TYPE` is the history's
`type`, its fields the line's other fields. `to_json()` gives the record the writer stamps (`t`, and `wall`
unless the event carries one) and writes; `from_json` reads one back, ignoring unknown fields.

A field is written in one of three ways, declared with the field:
- plain (the default): always written, `null` when None;
- `omitted()`: left out of the line when None (an optional field, such as `op.start`'s `group`);
- `field(default=UNSET)`: left out when `UNSET`, written (possibly `null`) otherwise: for the few fields one
  source writes as `null` and another not at all (`partition.state`'s `elr`, a consumer's `member` on `client.error`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias, TypeVar

from harness.history.nodes import Target, parse_target

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
"""A value as `json.loads` gives it."""

JsonRecord: TypeAlias = dict[str, JsonValue]
"""One history line as a JSON object (what the writer writes, what the tolerant reader yields)."""


class Unset(enum.Enum):
    """The value of a `maybe()` field an event leaves out of its line (None is written as `null`)."""

    UNSET = 0

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset.UNSET

_OMIT = "omit_none"
_DECODE = "decode"


def omitted(decode: Callable[[Any], Any] | None = None) -> Any:
    """A field left out of the line when None."""
    return field(default=None, metadata={_OMIT: True, **({_DECODE: decode} if decode else {})})


def decoding(decode: Callable[[Any], Any]) -> dict[str, Any]:
    """The metadata of a field whose JSON value `decode` turns back into the field's type (`from_json`)."""
    return {_DECODE: decode}


def decoded(decode: Callable[[Any], Any], default: Any = dataclasses.MISSING) -> Any:
    """A plain field whose JSON value `decode` turns back into the field's type (`from_json`)."""
    return field(default=default, metadata={_DECODE: decode})


def parse_targets(value: Any) -> tuple[Target, ...]:
    return tuple(parse_target(str(v)) for v in value or ())


# -- JSON --------------------------------------------------------------------------------------------------


def to_json_value(value: object) -> JsonValue:
    """A field's value as JSON: structured values by their `to_json`, tuples and lists as lists, mappings as
    objects; scalars as they are."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    render = getattr(value, "to_json", None)
    if render is not None:
        out: JsonValue = render()
        return out
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_json_value(v) for v in value]
    raise TypeError(f"not a history value: {value!r}")


def as_tuple(value: Any) -> Any:
    """JSON lists back into tuples, at any depth (the default decoding of a list)."""
    if isinstance(value, list):
        return tuple(as_tuple(v) for v in value)
    return value


E = TypeVar("E", bound="HistoryEvent")


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEvent:
    """One history event. `TYPE` is its `type`; `src` who recorded it; `wall` the epoch-ms stamp its observer
    took when it saw what it reports (None: the writer stamps the time of writing). The writer adds `t`."""

    TYPE: ClassVar[str] = ""
    DOC: ClassVar[str] = ""
    """What the event records (docs/design.md's history reference)."""
    SOURCES: ClassVar[str] = ""
    """Who records it (its `src` values), for the reference."""

    src: str
    wall: float | None = None

    def to_json(self) -> JsonRecord:
        """The record written today: `type`, `src`, `wall` if stamped, then the fields (see the module doc)."""
        out: JsonRecord = {"type": self.TYPE, "src": self.src}
        if self.wall is not None:
            out["wall"] = self.wall
        for f in _own_fields(type(self)):
            value = getattr(self, f.name)
            if value is UNSET or (value is None and f.metadata.get(_OMIT)):
                continue
            out[f.name] = to_json_value(value)
        return out

    @classmethod
    def from_json(cls: type[E], record: Mapping[str, Any]) -> E:
        """An event of this class from its record, read as the verifiers read a line: unknown fields are ignored,
        a missing field is left out where the class may leave it out, else read as null."""
        kwargs: dict[str, Any] = {"src": str(record.get("src", "")), "wall": record.get("wall")}
        for f in _own_fields(cls):
            if f.name not in record:
                if f.default is dataclasses.MISSING:
                    kwargs[f.name] = None
                continue
            value = record[f.name]
            decode = f.metadata.get(_DECODE)
            kwargs[f.name] = decode(value) if decode is not None and value is not None else as_tuple(value)
        return cls(**kwargs)


_FIELDS: dict[type[HistoryEvent], tuple[dataclasses.Field[Any], ...]] = {}


def _own_fields(cls: type[HistoryEvent]) -> tuple[dataclasses.Field[Any], ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in dataclasses.fields(cls) if f.name not in ("src", "wall"))
    return found


def event_fields(cls: type[HistoryEvent]) -> tuple[str, ...]:
    """The names of the fields an event class declares besides `src` and `wall`."""
    return tuple(f.name for f in _own_fields(cls))


def omitted_fields(cls: type[HistoryEvent]) -> frozenset[str]:
    """The fields left out of the line when None (never written as `null`)."""
    return frozenset(f.name for f in _own_fields(cls) if f.metadata.get(_OMIT))


def optional_fields(cls: type[HistoryEvent]) -> frozenset[str]:
    """The fields an event may leave out of its line."""
    return frozenset(f.name for f in _own_fields(cls) if f.metadata.get(_OMIT) or f.default is UNSET)


def from_records(decode: Callable[[Mapping[str, Any]], Any]) -> Callable[[Any], tuple[Any, ...]]:
    """A decoder of a list of JSON objects into a tuple of structured values."""
    def run(value: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
        return tuple(decode(v) for v in value)
    return run
