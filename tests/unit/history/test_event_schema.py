"""The event classes and the verifiers' Spark schema (`spark_analysis.ingest.schema.HISTORY_SCHEMA`) agree: every field
a
class declares is a schema column of a compatible type or one of `NOT_READ` (recorded for people and the run's
own bookkeeping, never read by a verifier), and every schema column is some class's field. Fails when either side
gains, loses or retypes a field without the other."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest
from pyspark.sql.types import ArrayType, BooleanType, DataType, DoubleType, LongType, StringType

from harness.history.events import EVENT_CLASSES, HistoryEvent, Unset
from harness.history.events_base import event_fields
from spark_analysis.ingest.schema import CORRUPT, HISTORY_SCHEMA, LOOSE_LEADER_TYPES

NOT_READ = frozenset({
    "variant",  # run.start: the experiment's variant (run.json has it)
    "signal",  # signal
    "when",  # probe: before chaos or after heal
    "brokers",  # fault.*, op.start: the broker ids among the targets / a rolling restart's order
    "heal",  # fault.start
    "left_down",  # fault.end: ended by a teardown with its nodes left down (the run is interrupted, never a pass)
    "timeout_s", "elapsed_s", "via",  # op.start / op.end
    "source",  # controller: which call named it (a controller event's observer; test_kraft_checks.py keeps it out)
    "host", "port",  # broker.up
    "leader_recovery_state",  # partition.state (ZooKeeper)
    "call", "node",  # observer.error
    "retriable",  # send.error
    "client",  # client.error, client.crash
    "exit_code", "last_words",  # client.crash: the run's teardown reports it (a harness failure, not Kafka's)
    "assignment", "incremental",  # assign / revoke
})
"""Fields the classes declare that no verifier reads (not schema columns)."""

WRITER_COLUMNS = frozenset({"t"})
"""Columns the writer stamps on every event (no class declares them)."""

INTERNAL_COLUMNS = frozenset({CORRUPT})
"""Columns Spark's reader adds."""

TEXT_TOLERATED = frozenset({("poll", "value"), ("pipe.read", "value")})
"""(type, field) whose value may be text where the column is an integer: a record the harness did not write keeps
its text, and the verifiers count that line as ill-typed (`spark_analysis.ingest.json_read`)."""

COLUMNS: dict[str, DataType] = {f.name: f.dataType for f in HISTORY_SCHEMA.fields}


def _members(hint: Any) -> list[Any]:
    """A hint's alternatives, without None and UNSET."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(hint) for m in _members(a)]
    return [] if hint in (type(None), Unset) else [hint]


def _fits(hint: Any, column: DataType) -> bool:
    """Whether every value of `hint` is one the column reads as such."""
    if isinstance(column, StringType):
        return True  # Spark keeps the JSON text of any value in a string column
    for member in _members(hint):
        if isinstance(column, ArrayType):
            if typing.get_origin(member) is not tuple:
                return False
            args = [a for a in typing.get_args(member) if a is not Ellipsis]
            if not all(_fits(a, column.elementType) for a in args):
                return False
        elif isinstance(column, LongType):
            if member is not int:
                return False
        elif isinstance(column, DoubleType):
            if member not in (int, float):
                return False
        elif isinstance(column, BooleanType):
            if member is not bool:
                return False
        else:
            raise AssertionError(f"no rule for column type {column}")
    return True


def _hints(cls: type[HistoryEvent]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@pytest.mark.parametrize("cls", list(EVENT_CLASSES.values()), ids=list(EVENT_CLASSES))
def test_every_field_is_a_column_of_a_compatible_type_or_not_read(cls: type[HistoryEvent]) -> None:
    hints = _hints(cls)
    for name in ("src", "wall", *event_fields(cls)):
        if name in NOT_READ:
            assert name not in COLUMNS, f"{name} is a schema column: take it out of NOT_READ"
            continue
        assert name in COLUMNS, f"{cls.TYPE}.{name} is neither a HISTORY_SCHEMA column nor in NOT_READ"
        column = COLUMNS[name]
        if (cls.TYPE, name) in TEXT_TOLERATED or (name == "leader" and cls.TYPE in LOOSE_LEADER_TYPES):
            continue
        assert _fits(hints[name], column), f"{cls.TYPE}.{name}: {hints[name]} does not fit column type {column}"


def test_every_column_is_some_class_field() -> None:
    declared = {"type"} | {n for cls in EVENT_CLASSES.values() for n in ("src", "wall", *event_fields(cls))}
    missing = set(COLUMNS) - declared - WRITER_COLUMNS - INTERNAL_COLUMNS
    assert not missing, f"HISTORY_SCHEMA columns no event class declares: {sorted(missing)}"


def test_every_not_read_field_is_declared_and_the_exceptions_name_real_fields() -> None:
    declared = {n for cls in EVENT_CLASSES.values() for n in event_fields(cls)}
    assert declared >= NOT_READ, sorted(NOT_READ - declared)
    for kind, name in TEXT_TOLERATED:
        assert name in event_fields(EVENT_CLASSES[kind])
    for kind in LOOSE_LEADER_TYPES:
        assert "leader" in event_fields(EVENT_CLASSES[kind])


def test_the_check_sees_a_mismatch() -> None:
    assert not _fits(int | str | None, LongType())
    assert not _fits(tuple[str, ...], ArrayType(LongType()))
    assert _fits(tuple[tuple[str, int], ...], ArrayType(ArrayType(StringType())))
    assert _fits(int | Unset | None, LongType())
