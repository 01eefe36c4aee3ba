"""Literals for the SQL text the checks plan with (`spark.sql`, `F.expr`): one JVM call a plan instead of one per
Column operator (issue 39). Owns `double` and `strings`."""

from __future__ import annotations

from collections.abc import Iterable


def double(x: float) -> str:
    """A double literal: Spark SQL reads `1.5` as a decimal; `inf` and `nan` need the cast from text too."""
    return f"CAST('{float(x)!r}' AS DOUBLE)"


def strings(values: Iterable[str]) -> str:
    """Quoted string literals separated by commas, for `IN (...)` (`NULL` for none: `IN (NULL)` matches nothing)."""
    return ", ".join("'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values) or "NULL"
