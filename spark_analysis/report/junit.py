"""`junit.xml`: one testcase per check, valid for CI tools (Jenkins, GitLab, GitHub reporters).

Mapping: pass -> a plain testcase; fail -> `<failure>`; unknown -> `<error type="unknown">`
(a check that could not conclude is never green); a check exempted by `verify.allow` whose
status is not pass -> `<skipped>` with its real status in the message, so CI agrees with the
run status. A run that did not complete gets one more testcase, `run.complete` (classname
`kafka_chaos.run`), that errors with the reason and the phases never reached, so CI never shows an
interrupted run green. The suite name is the experiment; classname is `kafka_chaos.<family>`. The
suite's properties carry the worst write and read stall (`worst_write_stall_s`, `worst_write_stall`, ...).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from spark_analysis.report.impact import worst_stalls
from spark_analysis.verdict import Verdict, counted_status, damage_note

JUNIT_FILE = "junit.xml"
RUN_COMPLETE_CASE = "run.complete"


def render_junit(verdict: Verdict) -> str:
    suite_name = f"kafka-chaos {verdict.run.get('experiment') or 'run'} ({verdict.title})"
    counts = verdict.counts()
    incomplete = dict(verdict.incomplete or {})
    suite = ET.Element(
        "testsuite",
        name=suite_name,
        tests=str(len(verdict.checks) + bool(incomplete)),
        failures=str(sum(1 for r in verdict.checks if counted_status(r) == "fail" and not r.allowed)),
        errors=str(sum(1 for r in verdict.checks if r.status == "unknown" and not r.allowed) + bool(incomplete)),
        skipped=str(counts["allowed"] + counts["expected"]),
        time=f"{sum(r.duration_s for r in verdict.checks):.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for key in ("experiment", "seed", "backend", "started", "ended", "status"):
        if verdict.run.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=str(verdict.run[key]))
    ET.SubElement(props, "property", name="broker", value=verdict.title)
    client = verdict.run.get("client") or {}
    if client.get("title"):
        ET.SubElement(props, "property", name="client", value=str(client["title"]))
    ET.SubElement(props, "property", name="run_status", value=verdict.status)
    ET.SubElement(props, "property", name="skipped_history_lines",
                  value=str(int(verdict.history.get("skipped_lines") or 0)))
    for name, value in worst_stalls(verdict).items():
        ET.SubElement(props, "property", name=name, value=value)
    if incomplete:
        case = ET.SubElement(suite, "testcase", classname="kafka_chaos.run", name=RUN_COMPLETE_CASE, time="0.000")
        el = ET.SubElement(case, "error", message=f"incomplete run: {incomplete.get('reason')}", type="incomplete")
        el.text = (f"status: {incomplete.get('status')}\n"
                   f"phases never reached: {', '.join(incomplete.get('missing_phases') or []) or 'none'}\n"
                   "the verdict cannot be pass: checks that decided on the partial history keep their status")
    for r in verdict.checks:
        case = ET.SubElement(suite, "testcase", classname=f"kafka_chaos.{r.family}", name=r.check_id,
                             time=f"{r.duration_s:.3f}")
        detail = "\n".join(json.dumps(e, default=str, sort_keys=True) for e in r.evidence)
        if r.allowed and r.status != "pass":
            ET.SubElement(case, "skipped", message=f"allowed by verify.allow ({r.status}): {r.summary}")
        elif r.expected and r.status == "fail":
            why = verdict.run.get("verify", {}).get("expect", {}).get("why") or "expect:"
            ET.SubElement(case, "skipped", type="xfail", message=f"expected failure ({why}): {r.summary}")
        elif r.expected and r.status == "pass":
            ET.SubElement(case, "failure", type="xpass", message=f"expected to fail, but passed: {r.summary}")
        elif r.status == "fail":
            el = ET.SubElement(case, "failure", message=r.summary, type="fail")
            el.text = (f"fault: {r.fault}\n" if r.fault else "") + detail
        elif r.status == "unknown":
            el = ET.SubElement(case, "error", message=r.summary, type="unknown")
            el.text = str(r.metrics.get("traceback", "")) or None
        if r.permitted:
            props_el = ET.SubElement(case, "properties")
            ET.SubElement(props_el, "property", name="permitted", value="; ".join(r.permitted))
        out = ET.SubElement(case, "system-out")
        out.text = r.summary + ("\n" + json.dumps(dict(r.metrics), default=str, sort_keys=True) if r.metrics else "")
    note = damage_note(verdict.history)
    if note:
        ET.SubElement(suite, "system-err").text = f"damaged history: {note}"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def write_junit(verdict: Verdict, run_dir: Path) -> Path:
    path = Path(run_dir) / JUNIT_FILE
    path.write_text(render_junit(verdict), encoding="utf-8")
    return path
