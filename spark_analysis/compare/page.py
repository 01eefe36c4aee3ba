"""`compare.html`: two runs side by side, rendered from the comparison's JSON form alone.

Owns the page (one self-contained file: inline CSS, no scripts, nothing fetched): a warning box
first when the runs are not the same experiment and seed (or the schedules differ), the header
naming each run (directory, experiment, seed, backend, broker flavour and version, run status and
verdict), then per fault (aligned by schedule index) the headline figures with B - A, and the
details: controller failovers, leaderless windows per partition, elections (new leader and rule),
ISR changes (relative to the fault's start), rebalances and ack stalls per partition; then what
happened outside every fault window, and every check's status with differing ones highlighted.
Runs of one flavour on two releases make an upgrade report: the title names both releases, and a
section before the header lists the regressions, the fixed checks and the faults whose timings grew.
Every value that comes from the runs goes through `html.escape`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from spark_analysis.facts.faults import ATTRIBUTION_GRACE_S
from spark_analysis.report.html import CSS

EXTRA_CSS = """
.warn{background:#fff3cd;border:2px solid #d62728;border-radius:4px;padding:8px 12px;margin:12px 0}
.warn b{color:#d62728} .warn ul{margin:4px 0}
td.diff,tr.differs td{background:#fde2e1}
td.num{text-align:right;font-family:monospace;white-space:nowrap}
.na{color:#888} .notes{color:#555;font-size:13px}
th.run{width:38%} h3{font-size:15px;margin:24px 0 4px;border-top:1px solid #ccc;padding-top:10px}
h4{font-size:13px;margin:12px 0 4px} ul.items{margin:0;padding-left:16px}
.not-verified{background:#7f7f7f}.not-selected,.not-run{background:#bbb}
"""

SIDES = (("a", "run A"), ("b", "run B"))
OPEN_ROWS = 12
"""Detail tables with more rows than this start collapsed."""
SUMMARY_ROWS: tuple[tuple[str, str, bool], ...] = (
    ("controller_failover_s", "controller failover", True),
    ("longest_leaderless_s", "longest leaderless window", True),
    ("leaderless_partitions", "partitions left leaderless", False),
    ("elections", "elections", False),
    ("isr_changes", "ISR changes", False),
    ("rebalances", "consumer-group rebalances", False),
    ("rebalance_total_s", "time rebalancing", True),
    ("longest_ack_stall_s", "longest ack stall", True),
    ("unanswered_sends", "sends never answered", False),
)


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _na(text: str = "—") -> str:
    return f'<span class="na">{escape(text)}</span>'


def _secs(value: object) -> str:
    return _na() if value is None else f"{float(str(value)):.3f} s"


def _delta(a: object, b: object, seconds: bool) -> str:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return _na()
    d = float(b) - float(a)
    return f"{d:+.3f} s" if seconds else f"{int(d):+d}"


def _badge(shown: str, status: str) -> str:
    css = status if status in ("pass", "fail", "unknown") else status.replace(" ", "-")
    if shown != status:
        css = "allowed"
    return f'<span class="badge {escape(css)}">{escape(shown)}</span>'


def _warnings(doc: Mapping[str, Any]) -> str:
    items = doc.get("warnings") or []
    if not items:
        return ""
    lis = "".join(f"<li>{_e(w)}</li>" for w in items)
    return f'<div class="warn" id="warnings"><b>Warning: these runs may not be comparable.</b><ul>{lis}</ul></div>'


def _header(doc: Mapping[str, Any]) -> str:
    runs = doc["runs"]
    fields = (("directory", "path"), ("experiment", "experiment"), ("seed", "seed"), ("backend", "backend"),
              ("broker flavour", "flavour"), ("broker version", "version"), ("tested", "tested"),
              ("run status", "run_status"), ("verdict", "verdict_status"))
    rows = []
    for label, key in fields:
        a, b = runs["a"].get(key), runs["b"].get(key)
        cls = ' class="diff"' if a != b and key not in ("path",) else ""
        cells = "".join(f"<td{cls}>{_e(v) if v is not None else _na('unknown')}</td>" for v in (a, b))
        rows.append(f"<tr><td>{escape(label)}</td>{cells}</tr>")
    notes = "".join(
        f'<p class="notes"><b>{escape(name)}:</b> {"; ".join(_e(n) for n in doc["notes"][side])}</p>'
        for side, name in SIDES if doc["notes"].get(side))
    return (f'<table class="meta"><tr><th></th><th class="run">run A</th><th class="run">run B</th></tr>'
            f"{''.join(rows)}</table>{notes}")


def _summary_table(entry: Mapping[str, Any]) -> str:
    rows = []
    for key, label, seconds in SUMMARY_ROWS:
        pair = entry["summary"][key]
        a, b = pair.get("a"), pair.get("b")
        fmt = _secs if seconds else (lambda v: _na() if v is None else _e(v))
        cls = ' class="num diff"' if a != b else ' class="num"'
        rows.append(f"<tr><td>{escape(label)}</td><td{cls}>{fmt(a)}</td><td{cls}>{fmt(b)}</td>"
                    f'<td class="num">{_delta(a, b, seconds)}</td></tr>')
    return ("<table><tr><th>measure</th><th class=\"num\">run A</th><th class=\"num\">run B</th>"
            f"<th class=\"num\">B &minus; A</th></tr>{''.join(rows)}</table>")


def _span_text(s: Mapping[str, Any]) -> str:
    open_ = " (still open at the end: at least)" if s.get("still_open") else ""
    return f"{_secs(s['duration_s'])}{escape(open_)} from +{float(s['at_s']):.3f} s"


def _election_text(e: Mapping[str, Any]) -> str:
    new = "no leader" if e.get("new_leader") is None else f"broker {e['new_leader']}"
    old = "none" if e.get("old_leader") is None else e["old_leader"]
    rule = e.get("rule") or "rule not told by the history"
    epoch = f", epoch {e['leader_epoch']}" if e.get("leader_epoch") is not None else ""
    return f"+{float(e['at_s']):.3f} s: <b>{_e(new)}</b> (was {_e(old)}), rule <i>{_e(rule)}</i>{_e(epoch)}"


def _isr_text(c: Mapping[str, Any]) -> str:
    moves = [f"-{b}" for b in c.get("removed") or []] + [f"+{b}" for b in c.get("added") or []]
    return f"{float(c['at_s']):+.3f} s: {_e(c['before'])} → {_e(c['after'])} ({_e(' '.join(moves))})"


def _stall_text(s: Mapping[str, Any]) -> str:
    sent = "" if s.get("sent_at_s") is None else f", value {s.get('value')} sent at {float(s['sent_at_s']):+.3f} s"
    return f"<b>{_secs(s['max_wait_s'])}</b> over {_e(s['acks'])} acks{_e(sent)}"


def _natural(key: str) -> tuple[str, int, str]:
    """`orders/2` before `orders/10`; anything without a numeric partition by name."""
    head, _, tail = key.rpartition("/")
    return (head, int(tail), "") if head and tail.isdigit() else (key, -1, key)


def _aligned(title: str, key_name: str, items: Mapping[str, Sequence[Mapping[str, Any]] | None],
             key: Callable[[Mapping[str, Any]], str], text: Callable[[Mapping[str, Any]], str]) -> str:
    """A table with one row per key (partition, group): each run's items for it, one per line.

    Collapsed (with the counts in its summary line) when it has more than OPEN_ROWS rows.
    """
    keys = sorted({key(i) for side, _ in SIDES for i in (items.get(side) or [])}, key=_natural)
    if not keys:
        return f"<h4>{escape(title)}</h4><p class=\"na\">none in either run</p>"
    rows = []
    for k in keys:
        cells = []
        for side, _ in SIDES:
            mine = [i for i in (items.get(side) or []) if key(i) == k]
            cells.append("<td>" + ("<br>".join(text(i) for i in mine) if mine else _na()) + "</td>")
        a_txt, b_txt = cells
        cls = ' class="differs"' if a_txt != b_txt else ""
        rows.append(f'<tr{cls}><td class="mono">{_e(k)}</td>{a_txt}{b_txt}</tr>')
    counts = ", ".join(f"{len(items.get(side) or [])} in {name}" for side, name in SIDES)
    table = (f"<table><tr><th>{escape(key_name)}</th><th class=\"run\">run A</th><th class=\"run\">run B</th>"
             f"</tr>{''.join(rows)}</table>")
    if len(rows) > OPEN_ROWS:
        return (f"<h4>{escape(title)}</h4><details><summary>{len(rows)} {escape(key_name)}s ({counts}); "
                f"{sum(1 for r in rows if r.startswith('<tr class'))} differ</summary>{table}</details>")
    return f"<h4>{escape(title)}</h4>{table}"


def _details(measures: Mapping[str, Mapping[str, Any] | None]) -> str:
    def part(name: str) -> dict[str, Sequence[Mapping[str, Any]] | None]:
        return {side: (m[name] if m is not None else None) for side, m in measures.items()}

    rebalances = {side: (m["rebalances"]["items"] if m is not None else None) for side, m in measures.items()}
    return "".join((
        _aligned("Controller failovers", "controller", part("controller_failovers"), lambda s: "controller",
                 lambda s: f"{_span_text(s)} <small>({_e(s['what'])})</small>"),
        _aligned("Leaderless windows", "partition", part("leaderless_windows"), lambda s: str(s["subject"]),
                 _span_text),
        _aligned("Elections (new leader and rule)", "partition", part("elections"), lambda e: str(e["partition"]),
                 _election_text),
        _aligned("ISR changes", "partition", part("isr_changes"),
                 lambda c: str(c["partition"]), _isr_text),
        _aligned("Consumer-group rebalances", "group", rebalances, lambda s: str(s["subject"]), _span_text),
        _aligned("Ack stalls (longest wait for an ack)", "partition", part("ack_stalls"),
                 lambda s: str(s["partition"]), _stall_text),
    ))


def _fault_heading(entry: Mapping[str, Any]) -> str:
    a, b = entry.get("a"), entry.get("b")
    kinds = {f["kind"] for f in (a, b) if f is not None}
    lines = []
    for side, name in SIDES:
        f = entry.get(side)
        if f is None:
            why = ("skipped (its target named nothing)" if entry.get(f"{side}_skipped")
                   else "not injected" if entry.get(f"{side}_measured", True) else "unknown (no history)")
            lines.append(f"<b>{escape(name)}</b>: {_na(why)}")
            continue
        end = (f"healed after {float(f['duration_s']):.3f} s" if f.get("duration_s") is not None
               else "never healed")
        lines.append(f"<b>{escape(name)}</b>: {_e(f['kind'])} {_e(f['target'])} at {float(f['start']):.3f} s, {end}")
    note = " <small>(targets differ)</small>" if entry.get("targets_differ") else ""
    return (f"<h3 id=\"fault-{_e(entry['fault_id'])}\">Fault #{_e(entry['fault_id'])} {_e(' / '.join(sorted(kinds)))}"
            f"{note}</h3><p class=\"sub\">{'<br>'.join(lines)}</p>")


def _faults(doc: Mapping[str, Any]) -> str:
    if not doc["faults"]:
        return "<p>Neither run injected a fault.</p>"
    out = []
    for entry in doc["faults"]:
        out.append(_fault_heading(entry) + _summary_table(entry)
                   + _details({side: entry.get(side) for side, _ in SIDES}))
    return "".join(out)


def _checks(doc: Mapping[str, Any]) -> str:
    rows = []
    for c in doc["checks"]:
        cls = ' class="differs"' if c["differs"] else ""
        cells = "".join(f"<td>{_badge(c[side]['shown'], c[side]['status'])} <small>{_e(c[side]['summary'])}</small>"
                        "</td>" for side, _ in SIDES)
        rows.append(f'<tr{cls}><td class="mono">{_e(c["id"])}</td>{cells}</tr>')
    n = len(doc.get("differing_checks") or [])
    lead = f"<p class=\"sub\">{n} check{'s' if n != 1 else ''} differ (highlighted).</p>"
    return (f"{lead}<table><tr><th>check</th><th class=\"run\">run A</th><th class=\"run\">run B</th></tr>"
            f"{''.join(rows)}</table>")


def _upgrade(doc: Mapping[str, Any]) -> str:
    up = doc.get("upgrade")
    if not up:
        return ""
    labels = {key: label for key, label, _ in SUMMARY_ROWS}

    def listed(ids: Sequence[str], none: str) -> str:
        return ", ".join(f'<span class="mono">{_e(i)}</span>' for i in ids) if ids else _na(none)

    slower = "".join(f"<li>fault #{_e(s['fault_id'])}: {escape(labels.get(s['measure'], s['measure']))} "
                     f"{_secs(s['a'])} → {_secs(s['b'])}</li>" for s in up["slower"])
    return (f'<h2 id="upgrade">{escape(str(up["direction"]).capitalize())} {_e(up["from"])} → {_e(up["to"])}</h2>'
            f"<p><b>Regressions</b> (passed on {_e(up['from'])}, fail or unknown on {_e(up['to'])}): "
            f"{listed(up['regressions'], 'none')}<br><b>Fixed</b> (failed on {_e(up['from'])}, pass on "
            f"{_e(up['to'])}): {listed(up['fixed'], 'none')}</p>"
            f"<h4>Faults whose timings grew on {_e(up['to'])}</h4>"
            + (f'<ul class="items">{slower}</ul>' if slower else f"<p>{_na('none')}</p>"))


def render_compare(doc: Mapping[str, Any]) -> str:
    """The whole page from the comparison's JSON form."""
    a, b = doc["runs"]["a"], doc["runs"]["b"]
    up = doc.get("upgrade")
    title = (f"kafka-chaos {up['direction']} report: {a.get('experiment')}, {up['from']} → {up['to']}" if up
             else f"kafka-chaos compare: {a.get('name')} vs {b.get('name')}")
    outside = doc["outside_faults"]
    spark = doc.get("spark") or {}
    made = f"generated {_e(doc.get('generated'))}" + (
        f" with Spark {_e(spark.get('version'))} ({_e(spark.get('master'))})" if spark else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{CSS}{EXTRA_CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p class="sub">Run A: <b>{_e(a.get('tested'))}</b> ({_e(a.get('experiment'))}, seed {_e(a.get('seed'))}) &nbsp;vs&nbsp;
run B: <b>{_e(b.get('tested'))}</b> ({_e(b.get('experiment'))}, seed {_e(b.get('seed'))}); {made}</p>
{_warnings(doc)}
{_upgrade(doc)}
<h2>Runs</h2>
{_header(doc)}
<h2>Faults, aligned by schedule index</h2>
<p class="sub">Times inside a fault (+s) count from that fault's start in each run. A fault's window runs
until its end plus {ATTRIBUTION_GRACE_S:g} s for late effects, or until the next fault starts; what happens
in it counts for that fault (an interval by its start). An open interval is still open at the end of the
history: its duration is a lower bound.</p>
{_faults(doc)}
<h2>Outside every fault window</h2>
<p class="sub">Times (+s) count from the start of each run's history.</p>
{_details(outside)}
<h2>Checks</h2>
{_checks(doc)}
</body></html>
"""
