"""Typed field readers over a located YAML document: each reads one field, checks its type and
range, and records a `Problem` (file, line, column, field path, bad value, hint) instead of raising,
so that one pass reports every error in the file. Numbers are finite (no .nan, no .inf) and within the
bounds the caller gives (harness/experiment/limits.py); durations are at most `MAX_DURATION_S`."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from harness.cluster.render import check_property
from harness.errors import ConfigError, Problem
from harness.experiment.durations import format_duration, parse_duration
from harness.experiment.limits import MAX_DURATION_S, MAX_PROBLEMS
from harness.experiment.yamlsource import Located, Path

T = TypeVar("T")
MISSING: Any = object()


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    match = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return match[0] if match else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    options = sorted(candidates)
    guess = nearest(word, options)
    prefix = f"did you mean {guess!r}? " if guess else ""
    return prefix + f"valid: {', '.join(options)}"


class Fields:
    """Reads fields of `doc` and collects problems in `self.problems`."""

    def __init__(self, doc: Located) -> None:
        self.doc = doc
        self.problems: list[Problem] = list(doc.problems)

    def error(self, path: Path, message: str, value: object = None, hint: str | None = None) -> None:
        self.problems.append(self.doc.problem(path, message, value, hint))

    def mapping(self, path: Path, value: object, allowed: Iterable[str], what: str) -> dict[str, Any] | None:
        """`value` as a mapping whose keys are all in `allowed` (unknown keys are reported)."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.error(path, f"{what} must be a mapping", value)
            return None
        allowed = tuple(allowed)
        for key in value:
            if key not in allowed:
                hint = did_you_mean(key, allowed) if len(self.problems) < MAX_PROBLEMS else None
                self.error((*path, key), f"unknown key in {what}", key, hint)
        return value

    def sequence(self, path: Path, value: object, what: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, f"{what} must be a list", value)
            return []
        return value

    def required(self, m: Mapping[str, Any], path: Path, key: str) -> Any:
        if key not in m or m[key] is None:
            self.error((*path, key), "required field is missing")
            return MISSING
        return m[key]

    def string(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
               choices: Iterable[str] | None = None) -> Any:
        raw = self.required(m, path, key) if default is MISSING else m.get(key, default)
        if raw is MISSING:
            return MISSING
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            self.error((*path, key), "must be a string", raw)
            return MISSING
        text = str(raw)
        if choices is not None:
            options = tuple(choices)
            if text not in options:
                self.error((*path, key), "not a valid choice", raw, did_you_mean(text, options))
                return MISSING
        return text

    def integer(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
                minimum: int | None = None, maximum: int | None = None, why: str | None = None) -> Any:
        """An integer in [minimum, maximum]; `why` (the reason for the maximum) is the hint when above it."""
        raw = self.required(m, path, key) if default is MISSING else m.get(key, default)
        if raw is MISSING:
            return MISSING
        if isinstance(raw, bool) or not isinstance(raw, int):
            self.error((*path, key), "must be an integer", raw)
            return MISSING
        if minimum is not None and raw < minimum:
            need = "positive" if minimum == 1 else f">= {minimum}"
            self.error((*path, key), f"must be {need}", raw)
            return MISSING
        if maximum is not None and raw > maximum:
            self.error((*path, key), f"must be at most {maximum}", raw, why)
            return MISSING
        return raw

    def number(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
               positive: bool = False, maximum: float | None = None, why: str | None = None,
               minimum: float | None = None) -> Any:
        """A finite number (as a float), positive if asked, at least `minimum`, at most `maximum`."""
        raw = self.required(m, path, key) if default is MISSING else m.get(key, default)
        if raw is MISSING:
            return MISSING
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            self.error((*path, key), "must be a number", raw)
            return MISSING
        try:
            value = float(raw)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            self.error((*path, key), "must be a finite number (not .nan or .inf)", raw)
            return MISSING
        if positive and value <= 0:
            self.error((*path, key), "must be positive", raw)
            return MISSING
        if minimum is not None and value < minimum:
            self.error((*path, key), f"must be at least {minimum:g}", raw, why)
            return MISSING
        if maximum is not None and value > maximum:
            self.error((*path, key), f"must be at most {maximum:g}", raw, why)
            return MISSING
        return value

    def boolean(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING) -> Any:
        raw = self.required(m, path, key) if default is MISSING else m.get(key, default)
        if raw is MISSING:
            return MISSING
        if not isinstance(raw, bool):
            self.error((*path, key), "must be true or false", raw)
            return MISSING
        return raw

    def duration(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
                 positive: bool = True) -> Any:
        raw = self.required(m, path, key) if default is MISSING else m.get(key, default)
        if raw is MISSING:
            return MISSING
        if raw is None:  # `key: null` means the default (None for an optional duration)
            return default
        if isinstance(raw, float) and default is not MISSING and raw == default:
            return raw
        if not isinstance(raw, str):
            self.error((*path, key), "must be a duration with a unit", raw, "write e.g. 500ms, 10s, 2m")
            return MISSING
        try:
            seconds = parse_duration(raw)
        except ValueError as exc:
            self.error((*path, key), str(exc), raw)
            return MISSING
        if positive and seconds <= 0:
            self.error((*path, key), "must be positive", raw)
            return MISSING
        if not seconds <= MAX_DURATION_S:
            self.error((*path, key), f"must be at most {format_duration(MAX_DURATION_S)}", raw,
                       "a chaos run is a CI job; durations are bounded (docs/design.md 'Input limits')")
            return MISSING
        return seconds

    def properties(self, m: Mapping[str, Any], path: Path, key: str, lines: bool = False) -> dict[str, str]:
        """A map of Kafka-style properties (`min.insync.replicas: 2`): keys and values as strings.

        Names are as server.properties allows them (`harness.cluster.render.check_property`); no value
        holds a NUL, and with `lines` (a file of key=value lines) no line break either.
        """
        raw = m.get(key)
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.error((*path, key), "must be a mapping of property names to values", raw)
            return {}
        out: dict[str, str] = {}
        for name, value in raw.items():
            where = (*path, key, name)
            if isinstance(value, (dict, list)) or value is None:
                self.error(where, "a property value must be a scalar", value)
                continue
            if isinstance(value, float) and not math.isfinite(value):
                self.error(where, "must be a finite number (not .nan or .inf)", value)
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            try:
                check_property(name, "", "")
            except ConfigError:
                self.error(where, "not a property name (letters, digits, '.', '_' and '-', starting with a "
                           "letter or digit)", name)
                continue
            if "\x00" in text or (lines and ("\n" in text or "\r" in text)):
                self.error(where, "a property value may not hold a NUL" + (" or a line break" if lines else ""),
                           value)
                continue
            out[name] = text
        return out

    def strings(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
                choices: Iterable[str] | None = None) -> Any:
        raw = self.required(m, path, key) if default is MISSING else m.get(key, default)
        if raw is MISSING:
            return MISSING
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, (list, tuple)):
            self.error((*path, key), "must be a list of strings", raw)
            return MISSING
        options = tuple(choices) if choices is not None else None
        out: list[str] = []
        for i, item in enumerate(raw):
            if not isinstance(item, str):
                self.error((*path, key, i), "must be a string", item)
            elif options is not None and item not in options:
                self.error((*path, key, i), "not a valid choice", item, did_you_mean(item, options))
            else:
                out.append(item)
        return tuple(out)


def count_items(f: Fields, path: Path, items: list[Any], maximum: int, what: str) -> None:
    """An error at `path` when a list holds more than `maximum` items (the input limits)."""
    if len(items) > maximum:
        f.error(path, f"at most {maximum} {what} are allowed, got {len(items)}", None,
                "docs/design.md 'Input limits'")
