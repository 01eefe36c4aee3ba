"""Fault windows from `fault.start` / `fault.end` events, and tying a failure to a fault.

Owns `FaultWindow` (id, kind, target, start/end on the history clock; an unhealed fault lasts
to the end of the history), how a fault is named in summaries ("fault #2 kill broker 1"), and
the two attribution rules: `active_at` (the fault in force at t, with a grace after its end for
effects that show up late) and `at_or_after` (the fault in force at t, else the next one to
start — for a lost write, the fault that hit after the write was acknowledged).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ATTRIBUTION_GRACE_S = 5.0


def parse_json_text(value: object) -> object:
    """A field Spark keeps as JSON text (a list, an object, a number), parsed; anything else as it is (the
    single-process reference hands the parsed value already)."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{\"" or text.lstrip("-").isdigit():
            try:
                return json.loads(text)
            except ValueError:
                return value
    return value


def describe_target(value: object) -> str:
    """A fault target for humans: 1 -> "broker 1", "broker:2" -> "broker 2", lists joined."""
    value = parse_json_text(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"broker {value}"
    if isinstance(value, (list, tuple)):
        return ", ".join(describe_target(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={describe_target(v)}" for k, v in value.items())
    return str(value).replace(":", " ", 1) if ":" in str(value) and "->" not in str(value) else str(value)


@dataclass(frozen=True, slots=True)
class FaultWindow:
    """One injected fault on the history clock (seconds since run start)."""

    fault_id: str
    kind: str
    target: str
    start: float
    end: float | None

    @property
    def label(self) -> str:
        text = f"fault #{self.fault_id} {self.kind}"
        return f"{text} {self.target}" if self.target else text

    def contains(self, t: float, grace: float = 0.0, horizon: float = float("inf")) -> bool:
        end = self.end if self.end is not None else horizon
        return self.start <= t <= end + grace

    def start_event(self) -> dict[str, Any]:
        """The window's start as a `fault.start` evidence row (what a check cites as the cause)."""
        return {"type": "fault.start", "t": self.start, "fault_id": self.fault_id, "kind": self.kind,
                "target": self.target}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.fault_id, "kind": self.kind, "target": self.target, "start": self.start,
                "end": self.end, "label": self.label}


@dataclass(frozen=True, slots=True)
class FaultIndex:
    """All fault windows of a run, in start order."""

    windows: tuple[FaultWindow, ...]

    def active_at(self, t: float, grace: float = ATTRIBUTION_GRACE_S) -> FaultWindow | None:
        for window in reversed(self.windows):
            if window.contains(t, grace):
                return window
        return None

    def at_or_after(self, t: float) -> FaultWindow | None:
        for window in self.windows:
            if window.contains(t):
                return window
        for window in self.windows:
            if window.start >= t:
                return window
        return None

    def targets_at(self, t: float, kinds: Iterable[str]) -> set[int]:
        """Broker ids targeted by faults of `kinds` in force at t (e.g. brokers shutting down)."""
        wanted = set(kinds)
        out: set[int] = set()
        for window in self.windows:
            if window.kind in wanted and window.contains(t):
                out |= broker_ids(window.target)
        return out


    def hit(self, broker: int, t0: float, t1: float, kinds: Iterable[str]) -> FaultWindow | None:
        """The earliest fault of `kinds` that started in [t0, t1] on `broker`: what took it away."""
        wanted = set(kinds)
        for window in self.windows:
            if window.kind in wanted and t0 <= window.start <= t1 and broker in broker_ids(window.target):
                return window
        return None


def broker_ids(target: str) -> set[int]:
    """Broker ids named in a rendered target ("broker 1, broker 3" -> {1, 3})."""
    out: set[int] = set()
    for part in target.split(","):
        words = part.strip().split()
        if len(words) == 2 and words[0] == "broker" and words[1].lstrip("-").isdigit():
            out.add(int(words[1]))
    return out


def build_fault_index(events: Sequence[Mapping[str, Any]]) -> FaultIndex:
    """Pair fault.start with fault.end by fault_id (events in file order)."""
    open_: dict[str, FaultWindow] = {}
    done: list[FaultWindow] = []
    for ev in events:
        fid = str(ev.get("fault_id"))
        t = float(ev.get("t") or 0.0)
        if ev.get("type") == "fault.start":
            if fid in open_:
                done.append(open_.pop(fid))
            open_[fid] = FaultWindow(fid, str(ev.get("kind") or "fault"), describe_target(ev.get("target")), t, None)
        elif ev.get("type") == "fault.end" and fid in open_:
            w = open_.pop(fid)
            done.append(FaultWindow(w.fault_id, w.kind, w.target, w.start, t))
    done.extend(open_.values())
    return FaultIndex(tuple(sorted(done, key=lambda w: (w.start, w.fault_id))))
