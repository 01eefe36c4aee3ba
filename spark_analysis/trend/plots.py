"""The trend page's plots as inline SVG (no scripts, no external assets; opens offline).

Owns three drawings, all built with the report's SVG canvas (`spark_analysis.report.svg`):
- `pass_rate_grid`: one row per check, one column per night plus "all"; each cell is a bar split
  into pass (green), unknown (orange) and fail (red) shares, labelled with the pass rate;
- `run_rate_chart`: the share of runs that passed, per night;
- `duration_chart`: one SLO check's p50/p90/p99/max per night as lines with point markers (so a
  single night still shows), the count of samples under each night.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from spark_analysis.report.svg import RIGHT, WIDTH, _Canvas

COLOURS = {"pass": "#2ca02c", "unknown": "#ff7f0e", "fail": "#d62728", "empty": "#eeeeee"}
SERIES = (("p50", "#1f77b4"), ("p90", "#9467bd"), ("p99", "#ff7f0e"), ("max", "#d62728"))
GRID_LEFT = 240
CELL_H = 16
ROTATE_AFTER = 12


def _svg(canvas: _Canvas, height: float) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" font-family="sans-serif">{"".join(canvas.parts)}</svg>')


def _night_labels(c: _Canvas, nights: Sequence[str], centre: Any, y: float) -> int:
    """Night labels under columns (rotated when many); returns the height used."""
    rotate = len(nights) > ROTATE_AFTER
    for i, night in enumerate(nights):
        x = centre(i)
        if rotate:
            c.parts.append(f'<text x="{x:.1f}" y="{y + 8:.1f}" font-size="9" text-anchor="end" fill="#444" '
                           f'transform="rotate(-45 {x:.1f} {y + 8:.1f})">{escape(night)}</text>')
        else:
            c.text(x, y + 10, night, 9, "middle", "#444")
    return 60 if rotate else 16


def pass_rate_grid(checks: Mapping[str, Mapping[str, Any]], nights: Sequence[str]) -> str:
    """Checks x (nights + all): pass/unknown/fail shares per cell, pass rate as text."""
    columns = [*nights, "all"]
    c = _Canvas(1.0)
    width = (WIDTH - GRID_LEFT - RIGHT) / max(len(columns), 1)
    y = 4.0
    legend_x = GRID_LEFT
    for status, text in (("pass", "pass"), ("unknown", "unknown"), ("fail", "fail"), ("empty", "not run")):
        c.rect(legend_x, y, legend_x + 10, 10, COLOURS[status])
        c.text(legend_x + 14, y + 9, text, 10)
        legend_x += 24 + 6 * len(text)
    y += 14
    y += _night_labels(c, columns, lambda i: GRID_LEFT + (i + 0.5) * width, y) + 4
    for check, entry in checks.items():
        c.text(GRID_LEFT - 6, y + CELL_H - 4, check, 10, "end")
        for i, column in enumerate(columns):
            counts = entry["overall"] if column == "all" else entry["nights"].get(column)
            x0 = GRID_LEFT + i * width + 1
            if not counts or not counts.get("total"):
                c.rect(x0, y, x0 + width - 2, CELL_H - 2, COLOURS["empty"], f"{check} {column}: not run")
                continue
            total = counts["total"]
            tip = (f"{check} {column}: {counts['pass']} pass, {counts['unknown']} unknown, {counts['fail']} fail"
                   f" of {total}" + (f" ({counts['allowed']} allowed)" if counts.get("allowed") else ""))
            x = x0
            for status in ("pass", "unknown", "fail"):
                share = (width - 2) * counts[status] / total
                if share > 0:
                    c.rect(x, y, x + share, CELL_H - 2, COLOURS[status], tip)
                    x += share
            if width > 34:
                c.text(x0 + (width - 2) / 2, y + CELL_H - 5, f"{100 * counts['pass'] / total:.0f}%", 9, "middle",
                       "#fff")
        y += CELL_H
    return _svg(c, y + 6)


def _points(c: _Canvas, xs: Sequence[float], values: Sequence[Any], top: float, y0: float, h: float,
            colour: str, name: str) -> None:
    for x, v in zip(xs, values, strict=True):
        if v is None:
            continue
        yy = y0 + h - float(v) / top * (h - 14)
        c.parts.append(f'<circle cx="{c.x(x):.1f}" cy="{yy:.1f}" r="2.5" fill="{colour}">'
                       f"<title>{escape(name)}: {float(v):.3f}</title></circle>")


def _chart(label: str, nights: Sequence[str], series: Mapping[str, tuple[Sequence[Any], str]],
           notes: Sequence[str] = (), h: int = 120) -> str:
    c = _Canvas(float(max(len(nights), 1)))
    xs = [i + 0.5 for i in range(len(nights))]
    c.y = 8
    values = [float(v) for vs, _ in series.values() for v in vs if v is not None]
    top = max(values) if values and max(values) > 0 else 1.0
    y0 = c.y
    c.chart(label, xs, series, h=h)
    for name, (vs, colour) in series.items():
        _points(c, xs, vs, top, y0, h, colour, name)
    used = _night_labels(c, nights, lambda i: c.x(xs[i]), c.y)
    c.y += used
    if notes:
        for i, note in enumerate(notes):
            c.text(c.x(xs[i]), c.y + 10, note, 9, "middle", "#666")
        c.y += 14
    return _svg(c, c.y + 6)


def run_rate_chart(nights: Sequence[Mapping[str, Any]]) -> str:
    """The share of runs that passed, per night (0..1)."""
    names = [str(n["night"]) for n in nights]
    rates = [n.get("pass_rate") for n in nights]
    # The constant line pins the scale to 0..1 (the canvas scales to the largest value).
    return _chart("runs passed", names, {"pass rate": (rates, "#2ca02c"), "all passed": ([1.0] * len(nights), "#ccc")},
                  notes=[f"{n['pass']}/{n['runs']}" for n in nights], h=80)


def duration_chart(check: str, per_night: Mapping[str, Mapping[str, Any]], nights: Sequence[str]) -> str:
    """p50/p90/p99/max of one SLO check's durations per night (seconds)."""
    series = {name: ([per_night.get(n, {}).get(name) for n in nights], colour) for name, colour in SERIES}
    notes = [f"n={per_night.get(n, {}).get('count', 0)}" for n in nights]
    return _chart(f"{check} (s)", nights, series, notes=notes)

