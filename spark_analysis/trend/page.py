"""`trend.html`: the trend across many runs as one self-contained page (inline CSS and SVG only).

Owns the page, rendered from the trend's JSON form alone (`render_trend(trend)`): a header
saying what the runs cover (runs, nights, experiments, backends, brokers and bug flags), runs per
night, the pass rate of every check per night (grid + table, unknown apart from fail), the SLO
duration distributions per night (chart + table), and the runs that did not pass with links to
their report.html, their not-passing checks with summaries, and the line that reproduces them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from spark_analysis.report.html import CSS
from spark_analysis.trend.aggregate import UNKNOWN_NIGHT
from spark_analysis.trend.plots import duration_chart, pass_rate_grid, run_rate_chart

EXTRA_CSS = """
.noverdict{background:#555}
td.num{text-align:right;font-family:monospace} th.num{text-align:right}
.cell{font-family:monospace;white-space:nowrap}
.repro{font-family:monospace;font-size:11px;background:#fafafa;border:1px solid #eee;padding:2px 4px}
ul.checks{margin:0;padding-left:16px}
"""

SLO_TITLES = {
    "slo.controller_failover": "Controller failover",
    "slo.partition_unavailable": "Partition unavailability",
    "slo.write_unavailable": "Write unavailability (worst stall per partition)",
    "slo.read_unavailable": "Read unavailability (worst stall per group and partition)",
    "slo.rebalance": "Consumer group rebalance",
}


def _badge(status: str) -> str:
    css = "noverdict" if status == "no verdict" else status
    return f'<span class="badge {escape(css)}">{escape(status)}</span>'


def _rate(value: object) -> str:
    return "" if value is None else f"{100 * float(str(value)):.1f}%"


def _secs(value: object) -> str:
    return "" if value is None else f"{float(str(value)):.3f}"


def _counted(items: Mapping[str, int]) -> str:
    if not items:
        return "none"
    return ", ".join(f"{escape(k)} ({v})" for k, v in items.items())


def _header(trend: Mapping[str, Any]) -> str:
    h = trend["header"]
    nights = h["nights"]
    dated = [n for n in nights if n != UNKNOWN_NIGHT]
    span = f"{dated[0]} to {dated[-1]}" if len(dated) > 1 else (dated[0] if dated else "no dated run")
    if len(dated) < len(nights):
        span += "; plus runs with no start time"
    by = h["by_status"]
    rows = [
        ("runs", f"{h['runs']}: {by.get('pass', 0)} pass, {by.get('fail', 0)} fail, {by.get('unknown', 0)} "
                 f"unknown, {by.get('no verdict', 0)} no verdict"),
        ("nights", f"{len(nights)} ({escape(span)})"),
        ("experiments", f"{len(h['experiments'])}: {_counted(h['experiments'])}"),
        ("backends", f"{len(h['backends'])}: {_counted(h['backends'])}"),
        ("brokers tested", f"{len(h['brokers'])}: {_counted(h['brokers'])}"),
        ("broker flavours", _counted(h["flavours"])),
        ("bug flags", _counted(h["bug_flags"])),
    ]
    return '<table class="meta">' + "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _nights_table(nights: Sequence[Mapping[str, Any]]) -> str:
    head = "<tr><th>night (UTC)</th>" + "".join(
        f'<th class="num">{k}</th>' for k in ("runs", "pass", "fail", "unknown", "no verdict", "pass rate")) + "</tr>"
    body = "".join(
        f"<tr><td>{escape(str(n['night']))}</td>" + "".join(
            f'<td class="num">{n[k]}</td>' for k in ("runs", "pass", "fail", "unknown", "no_verdict"))
        + f'<td class="num">{_rate(n.get("pass_rate"))}</td></tr>' for n in nights)
    return f"<table>{head}{body}</table>"


def _check_cell(counts: Mapping[str, Any] | None) -> str:
    if not counts or not counts.get("total"):
        return '<td class="cell"></td>'
    allowed = f" a{counts['allowed']}" if counts.get("allowed") else ""
    title = (f"{counts['pass']} pass, {counts['fail']} fail, {counts['unknown']} unknown of {counts['total']}"
             + (f", {counts['allowed']} allowed" if counts.get("allowed") else ""))
    return (f'<td class="cell" title="{escape(title)}">{_rate(counts.get("pass_rate"))} '
            f"<small>{counts['pass']}/{counts['fail']}/{counts['unknown']}{allowed}</small></td>")


def _checks_table(checks: Mapping[str, Mapping[str, Any]], nights: Sequence[str]) -> str:
    head = "<tr><th>check</th><th>all nights</th>" + "".join(f"<th>{escape(n)}</th>" for n in nights) + "</tr>"
    body = "".join(
        f'<tr><td class="mono">{escape(check)}</td>{_check_cell(entry["overall"])}'
        + "".join(_check_cell(entry["nights"].get(n)) for n in nights) + "</tr>"
        for check, entry in checks.items())
    return (f"<table>{head}{body}</table><p class=\"sub\">Cells: pass rate, then pass/fail/unknown counts "
            "(aN: N non-passing results exempted by verify.allow, still counted under their status).</p>")


def _durations(durations: Mapping[str, Mapping[str, Any]], nights: Sequence[str]) -> str:
    out: list[str] = []
    cols = ("runs", "count", "p50", "p90", "p99", "max", "open_at_end", "runs_without_samples")
    head = "<tr><th>night (UTC)</th>" + "".join(
        f'<th class="num">{k}</th>' for k in ("runs", "samples", "p50 s", "p90 s", "p99 s", "max s", "open at end",
                                              "runs without samples")) + "</tr>"
    for check, entry in durations.items():
        out.append(f"<h3>{escape(SLO_TITLES.get(check, check))} <small class=\"mono\">{escape(check)}</small></h3>")
        per_night = entry.get("nights") or {}
        if not per_night:
            out.append("<p>No run has this check.</p>")
            continue
        out.append(duration_chart(check, per_night, nights))
        rows = [*((n, per_night[n]) for n in nights if n in per_night), ("all nights", entry.get("overall") or {})]
        body = "".join(
            f"<tr><td>{escape(n)}</td>" + "".join(
                f'<td class="num">{_secs(d.get(k)) if k in ("p50", "p90", "p99", "max") else d.get(k, "")}</td>'
                for k in cols) + "</tr>" for n, d in rows)
        out.append(f"<table>{head}{body}</table>")
    return "".join(out)


def _failed_row(run: Mapping[str, Any]) -> str:
    name = escape(run["run"])
    link = (f'<a href="{escape(run["report"])}">{name}</a>' if run.get("report")
            else f"{name} <small>(no report)</small>")
    what = (f"{escape(str(run.get('experiment') or '?'))}"
            + (f" [{escape(str(run['variant']))}]" if run.get("variant") else "")
            + f"<br><small>seed {escape(str(run.get('seed')))}, backend {escape(str(run.get('backend')))}, "
              f"{escape(str(run.get('tested') or 'unknown broker'))}</small>")
    if run.get("reason"):
        checks = f"<i>{escape(run['reason'])}</i>"
    elif run.get("checks"):
        checks = '<ul class="checks">' + "".join(
            f"<li>{_badge(c['status'])} <span class=\"mono\">{escape(c['id'])}</span>: {escape(c.get('summary') or '')}"
            + (f" <small>(tied to {escape(c['fault'])})</small>" if c.get("fault") else "") + "</li>"
            for c in run["checks"]) + "</ul>"
    else:
        checks = "<i>no check results</i>"
    repro = (f'<div class="repro">{escape(run["reproduce"])}</div>' if run.get("reproduce")
             else "<small>reproduce: not known (run.json lacks source, seed or backend)</small>")
    versions = f"<br><small>versions: {escape(run['versions'])}</small>" if run.get("versions") else ""
    return (f"<tr><td>{link}<br><small>{escape(str(run.get('night')))}</small></td><td>{_badge(run['status'])}</td>"
            f"<td>{what}</td><td>{checks}{repro}{versions}</td></tr>")


def render_trend(trend: Mapping[str, Any]) -> str:
    """The whole page from the trend's JSON form."""
    nights = [str(n["night"]) for n in trend["nights"]]
    title = f"kafka-chaos trend: {trend['runs_dir']}"
    failed = trend["failed_runs"]
    failed_html = (
        "<table><tr><th>run</th><th>status</th><th>experiment</th><th>not passing / reproduce</th></tr>"
        + "".join(_failed_row(r) for r in failed) + "</table>") if failed else "<p>Every run passed.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{CSS}{EXTRA_CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p class="sub">generated {escape(str(trend.get('generated')))} with Spark {escape(str(trend['spark'].get('version')))}
({escape(str(trend['spark'].get('master')))}); nights are UTC calendar dates of the runs' start.</p>
{_header(trend)}
<h2>Runs per night</h2>
{run_rate_chart(trend['nights'])}
{_nights_table(trend['nights'])}
<h2>Pass rate per check</h2>
{pass_rate_grid(trend['checks'], nights)}
{_checks_table(trend['checks'], nights)}
<h2>Failover, unavailability and rebalance times</h2>
<p class="sub">Closed intervals measured by the SLO checks, pooled per night; percentiles are nearest-rank.</p>
{_durations(trend['durations'], nights)}
<h2>Runs that did not pass ({len(failed)})</h2>
{failed_html}
</body></html>
"""
