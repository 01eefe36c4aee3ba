"""Durations in experiment files: `500ms`, `10s`, `2m`, `1h`, `1m30s`; seconds as floats inside."""

from __future__ import annotations

import re

from harness.experiment.limits import MAX_DURATION_CHARS

_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in `text`; raises ValueError with the accepted forms when it is not a duration.

    Linear in the text: each part is matched where the previous one ended (a search would try every
    position of a long run of digits), and texts longer than `MAX_DURATION_CHARS` are refused first.
    """
    s = text.strip().lower().replace(" ", "")
    if len(s) > MAX_DURATION_CHARS:
        raise ValueError(f"not a duration: longer than {MAX_DURATION_CHARS} characters; write e.g. 10s or 1h30m")
    pos = 0
    total = 0.0
    while pos < len(s):
        match = _PART.match(s, pos)
        if match is None:
            break
        total += float(match.group(1)) * _UNIT_S[match.group(2)]
        pos = match.end()
    if not s or pos != len(s):
        raise ValueError("not a duration; write e.g. 500ms, 10s, 2m, 1h or 1m30s")
    return total


def format_duration(seconds: float) -> str:
    """The shortest exact text `parse_duration` reads back: 0.5 -> '500ms', 90 -> '90s'."""
    if seconds == int(seconds):
        n = int(seconds)
        if n and n % 3600 == 0:
            return f"{n // 3600}h"
        if n and n % 60 == 0:
            return f"{n // 60}m"
        return f"{n}s"
    ms = round(seconds * 1000, 3)
    return f"{ms:g}ms"
