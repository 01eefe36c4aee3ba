"""Whether a run completed, and if not why: what the verdict, the report and the checks' context say of a run cut
short.

Owns the engine's phases (`PHASES`), the events that tell how a history ended (`ENDING_TYPES`), and
`incompleteness`: None for a run that completed (run.json, when it has a status, says `completed`, and the
history's last run.end says so too), else an `Incomplete` with its status, the phases never reached and the one
wording of the reason the CLI, report.html and junit.xml all show. A fact of the run read from run.json and the
history, below the checks' context (`CheckContext.completed`) and the verdict (an incomplete run is never `pass`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from spark_analysis.ingest.runinfo import RunInfo

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
