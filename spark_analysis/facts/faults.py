"""Fault windows from `fault.start` / `fault.end` events, and tying a failure to a fault.

Owns `FaultWindow` (id, kind, target, start/end on the history clock, and what the fault did: its `effect`,
`spark_analysis.facts.fault_effect.FaultEffect`, as `fault.start` recorded it or, in a history from before `effect`,
as the legacy reader `spark_analysis.facts.faults_legacy` reads it from the kind name; an unhealed fault lasts to
the end of the history), the questions asked of a run's faults (`FaultIndex`: which brokers were in a graceful
stop at t, which fault took a node away), how a fault is named in summaries ("fault #2 kill broker 1"), and
the two attribution rules: `active_at` (the fault in force at t, with a grace after its end for effects that
show up late) and `at_or_after` (the fault in force at t, else the next one to start — for a lost write, the
fault that hit after the write was acknowledged).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from spark_analysis.facts.fault_effect import FaultEffect
from spark_analysis.facts.faults_legacy import legacy_effect

ATTRIBUTION_GRACE_S = 5.0


def parse_json_text(value: object) -> object:
    """A field Spark keeps as JSON text (a list, an object, a number), parsed; anything else as it is (the
    in-process evaluator hands the parsed value already)."""
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
    recorded: FaultEffect | None = None
    """`fault.start`'s `effect`; None in a history recorded before it."""
    took: float = 0.0
    """Seconds the fault's action took (`fault.start`'s `took_ms`; 0 in a history recorded before it): its effect was
    whole by `start + took`."""

    @property
    def effect(self) -> FaultEffect:
        """What the fault did: as recorded, else as the legacy reader reads it from the kind name."""
        return self.recorded if self.recorded is not None else legacy_effect(self.kind, self.target)

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

    def explaining_loss(self, t: float) -> FaultWindow | None:
        """The fault a loss of a write acknowledged at `t` is laid to: the first power loss from `t` on (it undid what
        the replicas had not fsynced, acknowledged before it), else the fault in force at `t` or the next one."""
        for window in self.windows:
            if window.start >= t and window.effect.loses_unsynced:
                return window
        return self.at_or_after(t)

    def stopping_gracefully(self, t: float) -> set[int]:
        """Brokers a fault in force at t stops by a controlled shutdown."""
        out: set[int] = set()
        for window in self.windows:
            if window.contains(t):
                out |= window.effect.stopped_gracefully()
        return out

    def maybe_gone_between(self, t0: float, t1: float) -> set[int]:
        """Brokers a fault in force at some time in (t0, t1] stopped or cut off from the metadata quorum (the KRaft
        controllers or ZooKeeper): the controller may have fenced or expired them in between, unobserved when the
        observer's view was frozen (it asked a broker cut off from the controllers too)."""
        out: set[int] = set()
        for w in self.windows:
            if w.start <= t1 and (w.end is None or w.end > t0):
                eff = w.effect
                out |= (eff.stopped(("broker",)) | eff.cut_off(("broker",), "controller")
                        | eff.cut_off(("broker",), "zookeeper"))
        return out

    def link_cut(self, src: str, dst: str, t: float) -> FaultWindow | None:
        """A fault in force at t that cuts the directed link `src -> dst` ("broker:3" -> "broker:1")."""
        return next((w for w in self.windows if w.contains(t) and w.effect.cuts(src, dst)), None)

    def took_away(self, node: int, t0: float, t1: float) -> FaultWindow | None:
        """The earliest fault that started in [t0, t1] and took node `node` (a broker or a KRaft controller) away:
        stopped it or cut it off (what a controller's loss is tied to)."""
        return next((w for w in self.windows if t0 <= w.start <= t1 and w.effect.takes_away(node)), None)

    def took_from_clients(self, broker: int, t0: float, t1: float) -> FaultWindow | None:
        """The earliest fault that started in [t0, t1] and took broker `broker` from clients without a controlled
        shutdown: stopped it abruptly, or cut clients off from it (what a leader's loss is tied to)."""
        return next((w for w in self.windows if t0 <= w.start <= t1 and w.effect.takes_from_clients(broker)), None)


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
            open_[fid] = FaultWindow(fid, str(ev.get("kind") or "fault"), describe_target(ev.get("target")), t, None,
                                     FaultEffect.read(ev.get("effect")), float(ev.get("took_ms") or 0) / 1000.0)
        elif ev.get("type") == "fault.end" and fid in open_:
            w = open_.pop(fid)
            done.append(replace(w, end=t))
    done.extend(open_.values())
    return FaultIndex(tuple(sorted(done, key=lambda w: (w.start, w.fault_id))))
