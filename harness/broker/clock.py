"""The reference broker's two clocks, in milliseconds: monotonic (timeouts, deadlines) and wall (record timestamps,
znode and commit times). Components take them as `Callable[[], int]` so a test can pass its own."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    """Monotonic milliseconds."""
    return int(time.monotonic() * 1000)


def wall_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return int(time.time() * 1000)
