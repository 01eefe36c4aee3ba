"""Broker liveness on the history clock, from `broker.up` / `broker.down` events.

Owns `Liveness`: which brokers are registered at time t, with a grace for the small skew
between an observer seeing a registration vanish and seeing its consequences (a new
controller, a new leader). Used by the controller, partition and SLO checks.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LIVENESS_GRACE_S = 3.0


@dataclass(frozen=True, slots=True)
class Liveness:
    """Per broker, the sorted (t, up?) transitions observed."""

    transitions: Mapping[int, tuple[tuple[float, bool], ...]]

    @property
    def known(self) -> bool:
        return bool(self.transitions)

    def state_at(self, broker: int, t: float) -> bool | None:
        """Up/down at t by the last transition at or before t; None if nothing seen yet."""
        trans = self.transitions.get(broker)
        if not trans:
            return None
        times = [x[0] for x in trans]
        i = bisect.bisect_right(times, t) - 1
        return trans[i][1] if i >= 0 else None

    def live_at(self, t: float) -> set[int]:
        return {b for b in self.transitions if self.state_at(b, t)}

    def ever_up_near(self, broker: int, t: float, grace: float = LIVENESS_GRACE_S) -> bool:
        """Whether `broker` was up at some moment of [t - grace, t + grace]."""
        trans = self.transitions.get(broker, ())
        if self.state_at(broker, t - grace):
            return True
        return any(up for (tt, up) in trans if t - grace <= tt <= t + grace)

    def goes_down_within(self, broker: int, t0: float, t1: float) -> bool:
        return any(not up and t0 <= tt <= t1 for (tt, up) in self.transitions.get(broker, ()))

    def down_since(self, broker: int, t: float) -> float | None:
        """When `broker` last went down at or before t (None if up at t or never seen down)."""
        trans = self.transitions.get(broker, ())
        last = None
        for tt, up in trans:
            if tt > t:
                break
            last = None if up else tt
        return last


def build_liveness(events: Sequence[Mapping[str, Any]]) -> Liveness:
    trans: dict[int, list[tuple[float, bool]]] = {}
    for ev in events:
        broker = ev.get("broker")
        if broker is None or ev.get("type") not in ("broker.up", "broker.down"):
            continue
        trans.setdefault(int(broker), []).append((float(ev.get("t") or 0.0), ev["type"] == "broker.up"))
    return Liveness({b: tuple(sorted(v, key=lambda x: x[0])) for b, v in trans.items()})
