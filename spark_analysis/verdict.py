"""The verdict of a run: every check's result, the run status, and the metadata around them.

Owns `Verdict` and its JSON form (`verdict.json`), and the status rule: the run status is the
worst status (fail > unknown > pass) of the checks NOT exempted by `verify.allow`; with no check
at all it is `unknown`; and a run that did not complete (`incompleteness`: run.json's status is not
`completed`, or the history has no run.end saying so) is never `pass`: it is `unknown` unless a
check found a violation in what was recorded (`fail`). A failure's fault attribution travels in
each result's `fault`. `damage_note` and `Incomplete.reason` are the one wording of the damaged
lines and of the incompleteness that the CLI, report.html and junit.xml all show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spark_analysis.result import CheckResult, Status, worst
from spark_analysis.runinfo import RunInfo

VERDICT_FILE = "verdict.json"
FORMAT_VERSION = 1
PHASES = ("setup", "steady", "chaos", "heal", "drain", "teardown")
"""The engine's phases, in order (`phase` events)."""
ENDING_TYPES = ("phase", "run.end")
"""The event types `incompleteness` reads."""
COMPLETED = "completed"
_LEGACY_END_OK = ("completed", "ok", "pass")
"""run.end statuses older histories wrote for a run that ended normally."""


@dataclass(frozen=True, slots=True)
class Incomplete:
    """Why a run cannot pass: its status, the phases the history never reached, and the reason."""

    status: str
    missing_phases: tuple[str, ...]
    reason: str
    run_json_status: str | None = None
    run_end_status: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "missing_phases": list(self.missing_phases), "reason": self.reason,
                "run_json_status": self.run_json_status, "run_end_status": self.run_end_status}


def incompleteness(run: RunInfo, events: Iterable[Mapping[str, Any]]) -> Incomplete | None:
    """None for a run that completed; else why not. `events`: its `phase` and `run.end` events.

    Complete means: run.json (when there is one with a status) says `completed`, and the history's
    last run.end says so too. A killed harness leaves `running` and no run.end; SIGTERM or Ctrl-C
    leave `interrupted`; an exception `crashed`; a steady state never reached `aborted`.
    """
    seen: set[str] = set()
    end: Mapping[str, Any] | None = None
    for ev in events:
        if ev.get("type") == "phase":
            seen.add(str(ev.get("name")))
        elif ev.get("type") == "run.end":
            end = ev
    end_status = None if end is None else str(end.get("status"))
    if run.status in (None, COMPLETED) and end_status in _LEGACY_END_OK:
        return None
    missing = tuple(p for p in PHASES if p not in seen)
    status = run.status or end_status or "unknown"
    error = (end or {}).get("error") or run.raw.get("error")
    if status == "running":
        why = "the run never finished: run.json still says 'running'" + (
            " and the history has no run.end (harness killed?)" if end is None else
            f" though the history's run.end says '{end_status}'")
    elif status == "unknown":
        why = "the history has no run.end (cut short?)"
    elif status == COMPLETED:
        why = (f"run.json says 'completed' but the history's run.end says '{end_status}'" if end is not None else
               "run.json says 'completed' but the history has no run.end (cut short or copied before the end?)")
    else:
        why = "run " + (str(error) if str(error or "").startswith(status) else status + (f": {error}" if error else ""))
        if end is None:
            why += "; the history has no run.end"
        elif end_status != status:
            why += f"; the history's run.end says '{end_status}'"
    if missing:
        why += f"; phases never reached: {', '.join(missing)}"
    return Incomplete(status, missing, why, run.status, end_status)


def run_status(results: Sequence[CheckResult], incomplete: Incomplete | Mapping[str, Any] | None = None) -> Status:
    """The worst status of the checks not allowed; `unknown` with no check; never `pass` when the
    run is `incomplete` (a check's `fail` still wins: fail > unknown)."""
    counted = [r.status for r in results if not r.allowed]
    if not results:
        return "unknown"
    if incomplete:
        counted.append("unknown")
    return worst(counted)


def damage_note(history: Mapping[str, Any]) -> str | None:
    """'37 of 412 history lines skipped (37 torn; poll 30, ack 7), first at line 120', or None."""
    damage = history.get("damage") or {}
    skipped = int(history.get("skipped_lines") or damage.get("skipped_lines") or 0)
    if not skipped:
        return None
    kinds = ", ".join(f"{n} {k}" for k, n in sorted((damage.get("by_kind") or {}).items(), key=lambda kv: -kv[1]))
    types = ", ".join(f"{k} {n}" for k, n in sorted((damage.get("by_type") or {}).items(), key=lambda kv: -kv[1]))
    detail = "; ".join(x for x in (kinds, types and f"types {types}") if x)
    first = next((d.get("line") for d in damage.get("sample") or () if d.get("line")), None)
    return (f"{skipped} of {history.get('lines', '?')} history lines skipped" + (f" ({detail})" if detail else "")
            + (f", first at line {first}" if first else ""))


def apply_allow(results: Sequence[CheckResult], run: RunInfo) -> list[CheckResult]:
    return [replace(r, allowed=run.is_allowed(r.check_id)) for r in results]


def run_metadata(run: RunInfo) -> dict[str, Any]:
    return {
        "title": run.title,
        "experiment": run.experiment,
        "seed": run.seed,
        "backend": run.backend,
        "backend_reason": run.backend_reason,
        "broker": {"flavour": run.flavour, "version": run.version, "bugs": list(run.bugs)},
        "versions": dict(run.versions),
        "started": run.started,
        "ended": run.ended,
        "status": run.status,
        "verify": {"checks": list(run.checks), "allow": list(run.allow), "slo": dict(run.slo)},
    }


@dataclass(frozen=True, slots=True)
class Verdict:
    """Everything `verdict.json` holds."""

    status: Status
    checks: tuple[CheckResult, ...]
    run: Mapping[str, Any]
    history: Mapping[str, Any] = field(default_factory=dict)
    faults: tuple[Mapping[str, Any], ...] = ()
    not_selected: tuple[str, ...] = ()
    analysis: Mapping[str, Any] = field(default_factory=dict)
    timeline: Mapping[str, Any] = field(default_factory=dict)
    incomplete: Mapping[str, Any] | None = None
    """`Incomplete.to_json()` of a run that did not complete; None for one that did."""

    @property
    def title(self) -> str:
        return str(self.run.get("title") or "unknown broker")

    def by_id(self, check_id: str) -> CheckResult:
        for r in self.checks:
            if r.check_id == check_id:
                return r
        raise KeyError(check_id)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "unknown": 0, "allowed": 0}
        for r in self.checks:
            out["allowed" if r.allowed and r.status != "pass" else r.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "status": self.status,
            "counts": self.counts(),
            "run": dict(self.run),
            "history": dict(self.history),
            "faults": [dict(f) for f in self.faults],
            "not_selected": list(self.not_selected),
            "analysis": dict(self.analysis),
            "checks": [r.to_json() for r in self.checks],
            "timeline": dict(self.timeline),
            "incomplete": dict(self.incomplete) if self.incomplete else None,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Verdict:
        return Verdict(
            status=data["status"],
            checks=tuple(CheckResult.from_json(c) for c in data.get("checks", ())),
            run=dict(data.get("run") or {}),
            history=dict(data.get("history") or {}),
            faults=tuple(data.get("faults") or ()),
            not_selected=tuple(data.get("not_selected") or ()),
            analysis=dict(data.get("analysis") or {}),
            timeline=dict(data.get("timeline") or {}),
            incomplete=dict(data["incomplete"]) if data.get("incomplete") else None,
        )

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / VERDICT_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, default=str, allow_nan=False), encoding="utf-8")
        tmp.replace(path)
        return path


def read_verdict(run_dir: Path) -> Verdict:
    return Verdict.from_json(json.loads((Path(run_dir) / VERDICT_FILE).read_text(encoding="utf-8")))
