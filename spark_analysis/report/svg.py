"""The report's timeline as one inline SVG (no external assets, opens offline).

Owns the drawing: shaded fault windows across every lane; controller (broker and epoch); leader
per partition (a colour per broker, grey hatching when there is none) with its write stalls as a
red band under it; ISR size per partition;
group state and generation; produce/consume rate; ack latency (p50 and max). Input is the
`timeline` mapping `spark_analysis.report.timeline.build_timeline` produced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

WIDTH = 1100
MAX_ISR_CHARTS = 12
LEFT = 170
RIGHT = 20
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f", "#d62728")
STATE_COLOURS = {"Stable": "#2ca02c", "PreparingRebalance": "#ff7f0e", "CompletingRebalance": "#ffbb78",
                 "AwaitingSync": "#ffbb78", "Empty": "#c7c7c7", "Dead": "#7f7f7f"}


def broker_colour(broker: object) -> str:
    if not isinstance(broker, int) or broker < 0:
        return "url(#none)"
    return PALETTE[broker % len(PALETTE)]


class _Canvas:
    def __init__(self, end_t: float) -> None:
        self.end_t = max(end_t, 1e-6)
        self.parts: list[str] = []
        self.y = 24
        self.lanes_top = self.y

    def x(self, t: float) -> float:
        return LEFT + max(0.0, min(t, self.end_t)) / self.end_t * (WIDTH - LEFT - RIGHT)

    def text(self, x: float, y: float, s: str, size: int = 11, anchor: str = "start", fill: str = "#222") -> None:
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                          f'fill="{fill}">{escape(s)}</text>')

    def rect(self, x0: float, y: float, x1: float, h: float, fill: str, title: str = "", extra: str = "") -> None:
        t = f"<title>{escape(title)}</title>" if title else ""
        self.parts.append(f'<rect x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 0.8):.1f}" height="{h:.1f}" '
                          f'fill="{fill}" {extra}>{t}</rect>')

    def heading(self, label: str) -> None:
        self.y += 6
        self.text(8, self.y + 10, label, 12, fill="#000")
        self.y += 16

    def segments(self, label: str, points: Sequence[Sequence[Any]], colour_of: Any, text_of: Any, h: int = 14) -> None:
        """points: [t, value, ...] state changes; each holds until the next one (or the end)."""
        self.text(LEFT - 6, self.y + h - 3, label, 10, "end")
        for i, p in enumerate(points):
            t0 = float(p[0])
            t1 = float(points[i + 1][0]) if i + 1 < len(points) else self.end_t
            x0, x1 = self.x(t0), self.x(t1)
            self.rect(x0, self.y, x1, h, colour_of(p), f"{label} @{t0:.2f}s: {text_of(p)}")
            if x1 - x0 > 28:
                self.text(x0 + 2, self.y + h - 3, text_of(p), 9, fill="#fff")
        self.y += h + 2

    def chart(self, label: str, xs: Sequence[float], series: Mapping[str, tuple[Sequence[Any], str]],
              h: int = 70, step: bool = False) -> None:
        values = [v for vs, _ in series.values() for v in vs if v is not None]
        top = max(values) if values else 1.0
        top = top if top > 0 else 1.0
        self.text(LEFT - 6, self.y + 10, label, 10, "end")
        self.text(LEFT - 6, self.y + h, "0", 9, "end", "#666")
        self.text(LEFT - 6, self.y + 22, f"{top:.3g}", 9, "end", "#666")
        self.parts.append(f'<line x1="{LEFT}" y1="{self.y + h}" x2="{WIDTH - RIGHT}" y2="{self.y + h}" '
                          'stroke="#999" stroke-width="0.5"/>')
        legend_x = LEFT + 4
        for k, (name, (vs, colour)) in enumerate(series.items()):
            pts: list[str] = []
            prev_y: float | None = None
            for t, v in zip(xs, vs, strict=False):
                if v is None:
                    continue
                yy = self.y + h - float(v) / top * (h - 14)
                if step and prev_y is not None:
                    pts.append(f"{self.x(float(t)):.1f},{prev_y:.1f}")
                pts.append(f"{self.x(float(t)):.1f},{yy:.1f}")
                prev_y = yy
            if pts:
                # the first series wide and solid, the others thin and dashed over it: lines that coincide (acks
                # and polls at the same rate) stay both visible
                style = 'stroke-width="2.4"' if k == 0 else 'stroke-width="1.2" stroke-dasharray="5 3"'
                self.parts.append(f'<polyline fill="none" stroke="{colour}" {style} '
                                  f'points="{" ".join(pts)}"><title>{escape(name)}</title></polyline>')
            self.text(legend_x, self.y + 10, name, 9, fill=colour)
            legend_x += 8 + 6 * len(name)
        self.y += h + 6


def _stall_band(c: _Canvas, stalls: Sequence[tuple[float, float | None, float]]) -> None:
    """A thin band under a partition's leader lane: its write stalls (`report.impact.stall_bands`)."""
    for start, end, duration in stalls:
        c.rect(c.x(start), c.y - 1, c.x(end if end is not None else c.end_t), 4, "#d62728",
               f"write stall {duration:.2f}s from {start:.2f}s" + (" (open at the end)" if end is None else ""))
    c.y += 4


def render_timeline_svg(timeline: Mapping[str, Any],
                        stalls: Mapping[str, Sequence[tuple[float, float | None, float]]] | None = None) -> str:
    """The whole timeline as an `<svg>` element string; `stalls` adds a write-stall band (red) under each
    partition's leader lane, next to its leaderless windows (hatched)."""
    end_t = float(timeline.get("end_t") or 1.0)
    c = _Canvas(end_t)
    ctrl = timeline.get("controller") or []
    if ctrl:
        c.heading("Controller (broker / epoch)")
        c.segments("controller", ctrl, lambda p: broker_colour(p[1]),
                   lambda p: f"b{p[1]} e{p[2]}" if p[1] is not None and p[1] >= 0 else "none")
    parts: Mapping[str, Sequence[Sequence[Any]]] = timeline.get("partitions") or {}
    if parts:
        c.heading("Leader per partition" + (" (red band: write stall)" if stalls else ""))
        for name, pts in parts.items():
            c.segments(name, pts, lambda p: broker_colour(p[1]),
                       lambda p: f"b{p[1]}" if p[1] is not None and p[1] >= 0 else "none", h=10)
            if stalls and stalls.get(name):
                _stall_band(c, stalls[name])
        if timeline.get("partitions_omitted"):
            c.text(LEFT, c.y + 10, f"(+{timeline['partitions_omitted']} partitions not drawn)", 9, fill="#666")
            c.y += 14
        c.heading("ISR size per partition")
        shown = list(parts.items())[:MAX_ISR_CHARTS]
        for i, (name, pts) in enumerate(shown):
            xs = [float(p[0]) for p in pts] + [end_t]
            ys = [p[2] for p in pts] + [pts[-1][2] if pts else None]
            c.chart(name, xs, {"isr": (ys, PALETTE[i % len(PALETTE)])}, h=30, step=True)
        if len(parts) > len(shown):
            c.text(LEFT, c.y + 10, f"(ISR of {len(parts) - len(shown)} more partitions not drawn)", 9, fill="#666")
            c.y += 14
    groups: Mapping[str, Sequence[Sequence[Any]]] = timeline.get("groups") or {}
    if groups:
        c.heading("Group state / generation")
        for name, pts in groups.items():
            c.segments(name, pts, lambda p: STATE_COLOURS.get(str(p[1]), "#aaa"),
                       lambda p: f"{p[1]} (generation unknown)" if p[2] is None else f"{p[1]} g{p[2]}")
    rates = timeline.get("rates") or {}
    if rates.get("t"):
        c.heading("Produce / consume rate (per s)")
        c.chart("events/s", rates["t"], {"acks/s": (rates["acks_per_s"], "#1f77b4"),
                                         "polls/s": (rates["polls_per_s"], "#2ca02c")})
        if any(v is not None for v in rates.get("lat_max", [])):
            c.heading("Ack latency (s)")
            c.chart("latency", rates["t"], {"p50": (rates["lat_p50"], "#9467bd"),
                                            "max": (rates["lat_max"], "#d62728")})
    height = c.y + 24
    shade: list[str] = []
    for f in timeline.get("faults") or []:
        x0 = c.x(float(f["start"]))
        x1 = c.x(float(f["end"]) if f.get("end") is not None else end_t)
        shade.append(f'<rect x="{x0:.1f}" y="14" width="{max(x1 - x0, 1.5):.1f}" height="{height - 30}" '
                     f'fill="#d62728" fill-opacity="0.12" stroke="#d62728" stroke-opacity="0.4">'
                     f'<title>{escape(str(f.get("label")))}</title></rect>')
        shade.append(f'<text x="{x0 + 2:.1f}" y="12" font-size="9" fill="#d62728">#{escape(str(f["id"]))} '
                     f'{escape(str(f.get("kind")))}</text>')
    for op in timeline.get("operations") or []:
        x0 = c.x(float(op["start"]))
        x1 = c.x(float(op["end"]) if op.get("end") is not None else end_t)
        colour = "#1f77b4" if op.get("outcome") == "done" else "#ff7f0e"
        shade.append(f'<rect x="{x0:.1f}" y="{height - 26}" width="{max(x1 - x0, 1.5):.1f}" height="6" '
                     f'fill="{colour}" fill-opacity="0.5"><title>{escape(str(op.get("label")))}: '
                     f'{escape(str(op.get("outcome") or "unfinished"))}</title></rect>')
    axis: list[str] = []
    ticks = 10
    for i in range(ticks + 1):
        t = end_t * i / ticks
        axis.append(f'<text x="{c.x(t):.1f}" y="{height - 4}" font-size="9" text-anchor="middle" fill="#666">'
                    f'{t:.0f}s</text>')
    defs = ('<defs><pattern id="none" width="6" height="6" patternUnits="userSpaceOnUse">'
            '<rect width="6" height="6" fill="#eee"/><path d="M0,6 L6,0" stroke="#d62728" stroke-width="1"/>'
            '</pattern></defs>')
    body = "".join(c.parts)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">{defs}'
            f'{"".join(shade)}{body}{"".join(axis)}</svg>')
