"""`report.html`: one self-contained file (inline CSS and SVG, no scripts or links to fetch).

Owns the page: a title naming what was tested (Apache Kafka <version>, or the reference broker
and its bug flags), the run status, a banner for a run that did not complete (why, the phases
never reached) and one for a damaged history (the skipped lines), the timeline, the faults and
their impact (`report.impact`: stalls, rebalances, elections, ISR changes under each), the checks table
(status, summary, the fault a failure is tied to, metrics, evidence rows in a collapsible block)
and the run's metadata.
`render_index` lists several runs' verdicts on one page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from spark_analysis.report.impact import Change, FaultImpact, Stall, fault_impacts, stall_bands
from spark_analysis.report.svg import render_timeline_svg
from spark_analysis.result import CheckResult
from spark_analysis.verdict import Verdict, counted_status, damage_note, expectation_note

REPORT_FILE = "report.html"

CSS = """
body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin-bottom:4px} h2{font-size:16px;margin-top:28px}
.sub{color:#555;margin-top:0}
.badge{display:inline-block;padding:2px 8px;border-radius:4px;color:#fff;font-weight:bold;font-size:12px}
.pass{background:#2ca02c}.fail{background:#d62728}.unknown{background:#ff7f0e}.allowed{background:#7f7f7f}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.mono,pre{font-family:monospace;font-size:11px}
pre{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:6px;margin:4px 0}
details summary{cursor:pointer;color:#1f4e99}
.meta td:first-child{font-weight:bold;width:200px}
.banner{border:2px solid #ff7f0e;background:#fff4e5;padding:8px 12px;margin:12px 0;border-radius:4px}
.banner.damaged{border-color:#9467bd;background:#f5effa}
"""


def _badge(status: str, allowed: bool = False, expected: bool = False, permitted: bool = False) -> str:
    if permitted and status == "pass":
        return '<span class="badge allowed">pass (permitted)</span>'
    if allowed and status != "pass":
        return f'<span class="badge allowed">{escape(status)} (allowed)</span>'
    if expected and status == "fail":
        return f'<span class="badge allowed">{escape(status)} (expected)</span>'
    if expected and status == "pass":
        return '<span class="badge fail">pass (expected to fail)</span>'
    return f'<span class="badge {escape(status)}">{escape(status)}</span>'


def _evidence_table(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    cols: list[str] = []
    for row in rows:
        for k in row:
            if k not in cols:
                cols.append(k)
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f'<td class="mono">{escape(_cell(r.get(c)))}</td>' for c in cols) + "</tr>" for r in rows
    )
    return f"<table>{'<tr>' + head + '</tr>'}{body}</table>"


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=str)
    return str(v)


def _check_row(r: CheckResult) -> str:
    metrics = json.dumps(dict(r.metrics), default=str, indent=1, sort_keys=True) if r.metrics else ""
    details = ""
    if r.evidence or metrics:
        details = (f"<details><summary>evidence ({len(r.evidence)}) and metrics</summary>"
                   f"{_evidence_table(r.evidence)}<pre>{escape(metrics)}</pre></details>")
    fault = f"<br><small>tied to {escape(r.fault)}</small>" if r.fault else ""
    if r.permitted:
        fault += ("<br><small>permitted by the configuration (not a violation): "
                  f"{escape('; '.join(r.permitted))}</small>")
    badge = _badge(r.status, r.allowed, r.expected, bool(r.permitted))
    return (f'<tr id="{escape(r.check_id)}"><td class="mono">{escape(r.check_id)}</td>'
            f"<td>{badge}</td><td>{escape(r.summary)}{fault}{details}</td>"
            f'<td class="mono">{r.duration_s:.2f}s</td></tr>')


def _meta_rows(verdict: Verdict) -> str:
    run = dict(verdict.run)
    items: list[tuple[str, object]] = [
        ("tested", verdict.title), ("client", (run.get("client") or {}).get("title")),
        ("experiment", run.get("experiment")), ("seed", run.get("seed")),
        ("backend", run.get("backend")), ("backend reason", run.get("backend_reason")),
        ("run status", run.get("status")), ("started", run.get("started")), ("ended", run.get("ended")),
        ("versions", run.get("versions")), ("verify", run.get("verify")),
        ("history", dict(verdict.history)), ("analysis", dict(verdict.analysis)),
        ("checks not selected", ", ".join(verdict.not_selected) or None),
    ]
    return "".join(f"<tr><td>{escape(k)}</td><td class=\"mono\">{escape(_cell(v))}</td></tr>"
                   for k, v in items if v not in (None, "", {}))


def _banners(verdict: Verdict) -> str:
    """The incomplete-run and damaged-history banners (empty for a complete, intact run)."""
    out = ""
    inc = dict(verdict.incomplete or {})
    if inc:  # the reason names the phases never reached
        out += (f'<div class="banner incomplete" id="incomplete"><b>Incomplete run ({escape(str(inc.get("status")))})'
                f": the verdict cannot be pass.</b> {escape(str(inc.get('reason')))}.<br>Checks that could decide on "
                "the partial history keep their status; a violation found in it still fails the run.</div>")
    note = damage_note(verdict.history)
    if note:
        sample = (verdict.history.get("damage") or {}).get("sample") or []
        rows = [{k: d.get(k) for k in ("line", "t", "kind", "type", "text")} for d in sample[:5]]
        out += (f'<div class="banner damaged" id="damaged"><b>Damaged history:</b> {escape(note)}. Skipped lines '
                "are events no check saw; past 0.1% of the lines, or inside a fault window, the checks that read "
                f"their event types answer unknown.{_evidence_table(rows)}</div>")
    expected = expectation_note(verdict.expectation)
    if expected:
        out += f'<div class="banner" id="expectation"><b>Known failures (expect:):</b> {escape(expected)}.</div>'
    return out


MAX_LISTED = 8


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(escape(i) for i in items[:MAX_LISTED])
    more = f" (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else ""
    return (shown + more) if items else "none"


def _stall_text(s: Stall) -> str:
    return f"{s.key} {s.duration:.2f}s" + (" (open at the end)" if s.end is None else "")


def _change_text(c: Change, what: str) -> str:
    return f"{c.what} {what} {c.before}→{c.after} at {c.t:.1f}s"


def _impact_section(impacts: Sequence[FaultImpact]) -> str:
    """Under each fault: what the clients went through, and what the cluster did."""
    if not impacts:
        return ""
    rows = []
    for i in impacts:
        clients = (f"<b>write stall</b> (per partition): {_listed([_stall_text(s) for s in i.write_stalls])}<br>"
                   f"<b>read stall</b> (per group and partition): {_listed([_stall_text(s) for s in i.read_stalls])}"
                   f"<br><b>rebalances started</b>: {_listed([f'{c.what} at {c.t:.1f}s' for c in i.rebalances])}")
        cluster = (f"<b>elections</b>: {_listed([_change_text(c, 'leader') for c in i.elections])}<br>"
                   f"<b>ISR changes</b>: {_listed([_change_text(c, 'ISR size') for c in i.isr_changes])}")
        rows.append(f'<tr id="impact-{escape(str(i.fault.get("id")))}"><td class="mono">{escape(i.label)}</td>'
                    f"<td>{clients}</td><td>{cluster}</td></tr>")
    return ("<h2>Impact per fault</h2><table><tr><th>fault</th><th>what clients went through</th>"
            f"<th>what the cluster did</th></tr>{''.join(rows)}</table>")


def _operations_table(timeline: Mapping[str, Any]) -> str:
    """The schedule's operations (the thin bands under the timeline): when, how they ended, what the
    partitions answered."""
    def said(op: Mapping[str, Any]) -> str:
        answers = "; ".join(f"{p}: {e}" for p, e in (op.get("answers") or {}).items())
        return answers or str(op.get("detail") or "")

    rows = "".join(
        f"<tr><td>#{escape(str(op.get('id')))}</td><td class=\"mono\">{escape(str(op.get('label')))}</td>"
        f"<td>{float(op.get('start') or 0):.2f}s</td>"
        f"<td>{'' if op.get('end') is None else format(float(op['end']), '.2f') + 's'}</td>"
        f"<td>{escape(str(op.get('outcome') or 'unfinished'))}</td><td>{escape(said(op))}</td></tr>"
        for op in timeline.get("operations") or [])
    return (f"<h2>Operations</h2><table><tr><th>id</th><th>operation</th><th>start</th><th>end</th><th>outcome</th>"
            f"<th>answers / detail</th></tr>{rows}</table>") if rows else ""


def render_html(verdict: Verdict, experiment_yaml: str | None = None) -> str:
    title = f"kafka-chaos: {verdict.run.get('experiment') or 'run'} on {verdict.title}"
    counts = verdict.counts()
    faults = "".join(
        f"<tr><td>#{escape(str(f.get('id')))}</td><td>{escape(str(f.get('kind')))}</td>"
        f"<td>{escape(str(f.get('target') or ''))}</td><td>{float(f.get('start') or 0):.2f}s</td>"
        f"<td>{'' if f.get('end') is None else format(float(f['end']), '.2f') + 's'}</td></tr>"
        for f in verdict.faults
    )
    fault_table = (f"<h2>Faults</h2><table><tr><th>id</th><th>kind</th><th>target</th><th>start</th><th>end</th>"
                   f"</tr>{faults}</table>") if faults else ""
    fault_table += _operations_table(verdict.timeline or {})
    timeline = (render_timeline_svg(verdict.timeline, stall_bands(verdict)) if verdict.timeline
                else "<p>No timeline data.</p>")
    yaml_block = (f"<details><summary>experiment.yaml</summary><pre>{escape(experiment_yaml)}</pre></details>"
                  if experiment_yaml else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p class="sub">Run status {_badge(verdict.status)} &nbsp; {counts['pass']} pass, {counts['fail']} fail,
{counts['unknown']} unknown, {counts['allowed']} allowed, {counts['expected']} expected failures,
{counts['permitted']} with anomalies the configuration permits
&nbsp;·&nbsp; tested: <b>{escape(verdict.title)}</b></p>
{_banners(verdict)}
<h2>Timeline</h2>
<div>{timeline}</div>
{fault_table}
{_impact_section(fault_impacts(verdict))}
<h2>Checks</h2>
<table><tr><th>check</th><th>status</th><th>summary / evidence</th><th>time</th></tr>
{''.join(_check_row(r) for r in verdict.checks)}</table>
<h2>Run metadata</h2>
<table class="meta">{_meta_rows(verdict)}</table>
{yaml_block}
</body></html>
"""


def write_html(verdict: Verdict, run_dir: Path, source: Path | None = None) -> Path:
    run_dir = Path(run_dir)
    yaml_path = Path(source or run_dir) / "experiment.yaml"
    text = yaml_path.read_text(encoding="utf-8", errors="replace") if yaml_path.is_file() else None
    path = run_dir / REPORT_FILE
    path.write_text(render_html(verdict, text), encoding="utf-8")
    return path


def render_index(verdicts: Sequence[tuple[str, Verdict]]) -> str:
    """One page summarising several runs (name, tested broker, status, failing checks)."""
    rows = []
    for name, v in verdicts:
        bad = ", ".join([*(["run.complete"] if v.incomplete else []),
                         *(r.check_id for r in v.checks if counted_status(r) != "pass" and not r.allowed)])
        rows.append(f"<tr><td><a href=\"{escape(name)}/{REPORT_FILE}\">{escape(name)}</a></td>"
                    f"<td>{escape(v.title)}</td><td>{_badge(v.status)}</td><td class=\"mono\">{escape(bad)}</td></tr>")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kafka-chaos runs</title>"
            f"<style>{CSS}</style></head><body><h1>kafka-chaos runs</h1><table><tr><th>run</th><th>tested</th>"
            f"<th>status</th><th>not passing</th></tr>{''.join(rows)}</table></body></html>\n")
