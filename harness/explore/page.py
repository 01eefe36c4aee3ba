"""`explore.html`: the explore report a person reads, rendered from `explore.json`'s document (pure).

One row per run in the order they ran: what it was for (a draw, or a shrink step and its rerun), the schedule, the
verdict with its failing checks (and the checks that found anomalies the configuration permits), whether the shrink
kept the step, and a link to the run's own report. Above it: the experiment, seed and budget, what was found, and
the minimal schedule `minimal.yaml` holds."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.explore.shrink import parts
from harness.faults.generator import Entry

HTML_FILE = "explore.html"
STYLE = ("body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
         "table{border-collapse:collapse}.mono{font-family:monospace;font-size:90%}.fail{color:#b00}.pass{color:#070}"
         ".unknown{color:#a60}")


def _cell(value: object) -> str:
    return html.escape("" if value is None else str(value))


def describe(entry: Entry) -> str:
    """One schedule entry on one line: `12s kill broker:2 for 8s`."""
    what, where = parts(entry)
    if isinstance(where, list):  # targets, or a partition's sides: `broker:1,zookeeper:1 | broker:2,broker:3`
        where = " | ".join(",".join(map(str, g)) if isinstance(g, list) else str(g) for g in where) \
            if any(isinstance(g, list) for g in where) else ",".join(map(str, where))
    span = f" for {entry['duration']}" if entry.get("duration") else ""
    return f"{entry.get('at', '?')} {what} {where}{span}"


def _schedule(entries: list[Entry]) -> str:
    return "<br>".join(_cell(describe(e)) for e in entries) or "<i>none</i>"


def _link(run_dir: str | None, base: Path) -> str:
    if not run_dir:
        return ""
    report = Path(run_dir) / "report.html"
    href = os.path.relpath(report, base) if report.is_absolute() else str(report)
    return f'<a href="{_cell(href)}">report</a>'


def render_explore_html(doc: Mapping[str, Any], base: Path) -> str:
    rows = []
    for n, t in enumerate(doc["tried"]):
        o = t["outcome"]
        checks = ", ".join(o.get("failing") or ())
        if o.get("permitted"):
            checks += (" · " if checks else "") + "permitted: " + ", ".join(o["permitted"])
        step = t.get("shrink_step")  # the same step text may come again later in the shrink: read it by index
        decided = doc["shrink"][step] if step is not None and step < len(doc["shrink"]) else None
        verdict = "" if step is None else "undecided (stopped)" if decided is None else \
            ("reproduced" if decided["kept"] else "not reproduced") if decided.get("recheck") else \
            "kept" if decided["kept"] else "dropped"
        rows.append(f"<tr><td>{n}</td><td>{_cell(t['purpose'])}</td><td class=mono>{_schedule(t['schedule'])}</td>"
                    f"<td class={_cell(o['status'])}>{_cell(o['status'])}</td><td class=mono>{_cell(checks)}"
                    f"{'<br>' + _cell(o['note']) if o.get('note') else ''}</td><td>{verdict}</td>"
                    f"<td>{_link(o.get('run_dir'), base)}</td></tr>")
    if doc["found"]:
        minimal = doc["minimal"] or {"schedule": [], "duration_s": None}
        state = "a local minimum" if doc["local_minimum"] else "the budget ended before a local minimum"
        found = (f"<p><b>Found:</b> {_cell(', '.join(doc['target_checks']))}. Shrunk to "
                 f"{len(minimal['schedule'])} fault(s), {_cell(minimal['duration_s'])} s of chaos ({state}); "
                 f"<code>minimal.yaml</code> holds it:</p><p class=mono>{_schedule(minimal['schedule'])}</p>")
        if doc.get("afresh_why"):
            found += f"<p>The runs after the first failure were on {_cell(doc['afresh_why'])}.</p>"
        if doc.get("recheck"):
            found += f"<p>Run again on fresh clusters after the shrink: {_cell(doc['recheck'])}.</p>"
        if not doc.get("confirmed", True):
            found += "<p>Not confirmed: the budget ended before the drawn schedule was run again.</p>"
    else:
        found = "<p><b>No failing schedule</b> within the budget.</p>"
    if doc.get("unconfirmed"):
        found += ("<p>Failed once, then not often enough to count: "
                  + "; ".join(_cell(u) for u in doc["unconfirmed"]) + ".</p>")
    stopped = f"<p><b>Stopped:</b> {_cell(doc['stopped'])}</p>" if doc.get("stopped") else ""
    clusters = doc.get("clusters") or 0
    shared = (f"<p>The runs shared {clusters} cluster(s), cleaned between runs."
              + "".join(f"<br>A fresh cluster because {_cell(why)}." for why in doc.get("fresh_clusters") or ())
              + "</p>") if clusters else "<p>Each run had a cluster of its own.</p>"
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>kafka-chaos explore</title><style>{STYLE}"
            f"</style></head><body><h1>Explore: {_cell(doc['experiment'])}</h1><p>Seed {_cell(doc['seed'])}, budget "
            f"{_cell(doc['budget_s'])} s, fault kinds {_cell(', '.join(doc['fault_kinds']))}; "
            f"{len(doc['tried'])} run(s).</p>{shared}{found}{stopped}<table><tr><th>#</th><th>for</th><th>schedule</th>"
            "<th>verdict</th><th>failing checks</th><th>shrink</th><th>run</th></tr>" + "".join(rows)
            + "</table></body></html>\n")
