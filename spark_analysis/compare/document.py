"""The comparison's JSON form: two runs' facts lined up fault by fault and check by check.

Owns `compare_document(a, b)`, which is what compare.json holds and what the page is rendered
from (so both always say the same), and the rules it applies:

- faults are aligned by their schedule index (the history's `fault_id`); a fault present in one
  run only, or of another kind in the other run, is a warning; different resolved targets (e.g.
  `controller` naming another broker) are shown, not warned about;
- runs of different experiments or seeds are compared anyway, with a warning first on the page;
  a run that records no experiment or seed gets a warning too (the match cannot be told);
- a check's status is what the run's verdict.json says ("not verified" without one, never pass);
  it `differs` when the shown status (allowed included) is not the same in both runs;
- per fault, `summary` holds the headline figures side by side (longest failover, longest
  leaderless window, elections, ISR changes, rebalances and their total time, longest ack stall);
- runs of one broker flavour on two releases are an upgrade (or a downgrade) from A's release to B's:
  `upgrade` names both, the checks that passed on A and fail or are unknown on B (regressions), those
  that failed on A and pass on B (fixed), and per fault each timing that grew (the report an operator
  circulates before rolling the new release out).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from harness.model.releases import Release
from spark_analysis.checks import CHECK_IDS
from spark_analysis.compare.facts import FaultFacts, Measures, RunFacts, RunHeader, ms

FORMAT_VERSION = 1
SIDES = ("a", "b")


def fault_order(fault_id: str) -> tuple[int, tuple[int, ...], str]:
    """Schedule indexes numerically (an operation's steps, `<op>.<k>`, by op and step), anything else after
    them by name."""
    text = fault_id.strip()
    parts = text.split(".")
    if 1 <= len(parts) <= 2 and all(p.lstrip("-").isdigit() for p in parts):
        return 0, tuple(int(p) for p in parts), ""
    return 1, (), text


def mismatch_warnings(a: RunHeader, b: RunHeader) -> list[str]:
    """Warnings when the two runs are not (or cannot be told to be) the same experiment and seed."""
    out: list[str] = []
    for name in ("experiment", "seed"):
        va, vb = getattr(a, name), getattr(b, name)
        if va is None or vb is None:
            which = " and ".join(side for side, v in (("A", va), ("B", vb)) if v is None)
            out.append(f"cannot tell whether the runs share the {name}: run {which} records none in run.json")
        elif va != vb:
            out.append(f"the runs have different {name}s (run A: {va}, run B: {vb}): their schedules and "
                       "workloads may differ, so differences below need not come from the brokers")
    return out


def _longest(spans: Any) -> float | None:
    durations = [s.duration for s in spans]
    return ms(max(durations)) if durations else None


def fault_summary(m: Measures) -> dict[str, Any]:
    """The headline figures of one fault in one run."""
    return {
        "controller_failover_s": _longest(m.failovers),
        "longest_leaderless_s": _longest(m.leaderless),
        "leaderless_partitions": len({s.subject for s in m.leaderless}),
        "elections": len(m.elections),
        "isr_changes": len(m.isr_changes),
        "rebalances": len(m.rebalances),
        "rebalance_total_s": ms(sum(s.duration for s in m.rebalances)),
        "longest_ack_stall_s": ms(max(s.max_wait_s for s in m.ack_stalls)) if m.ack_stalls else None,
        "unanswered_sends": m.unanswered_sends,
    }


def _fault_entry(fid: str, pair: Mapping[str, RunFacts], warnings: list[str]) -> dict[str, Any]:
    found: dict[str, FaultFacts | None] = {side: pair[side].fault(fid) for side in SIDES}
    entry: dict[str, Any] = {"fault_id": fid}
    for side in SIDES:
        facts = found[side]
        entry[side] = facts.to_json() if facts is not None else None
        entry[f"{side}_skipped"] = fid in pair[side].skipped_faults
        entry[f"{side}_measured"] = pair[side].measured
    fa, fb = found["a"], found["b"]
    facts = fa or fb
    if (fa is None or fb is None) and facts is not None and pair["a"].measured and pair["b"].measured:
        present, absent = ("A", "B") if fa is not None else ("B", "A")
        why = "skipped (its target named nothing)" if entry[f"{absent.lower()}_skipped"] else "not injected"
        warnings.append(f"fault #{fid} ({facts.window.kind}) happened in run {present} only; in run {absent} it "
                        f"was {why}")
    elif fa is not None and fb is not None and fa.window.kind != fb.window.kind:
        warnings.append(f"fault #{fid} is {fa.window.kind} in run A but {fb.window.kind} in run B")
    entry["targets_differ"] = bool(fa and fb and fa.window.target != fb.window.target)
    keys = fault_summary(Measures()).keys()
    sums = {side: fault_summary(f.measures) if f is not None else None for side, f in found.items()}
    entry["summary"] = {k: {side: (s[k] if s is not None else None) for side, s in sums.items()} for k in keys}
    return entry


def _check_rows(pair: Mapping[str, RunFacts]) -> list[dict[str, Any]]:
    seen = {c.check_id for side in SIDES for c in pair[side].checks}
    ids = [*CHECK_IDS, *sorted(seen - set(CHECK_IDS))]
    rows = []
    for cid in ids:
        a, b = pair["a"].check(cid), pair["b"].check(cid)
        rows.append({"id": cid, "a": a.to_json(), "b": b.to_json(), "differs": a.shown != b.shown})
    return rows


TIMINGS = ("controller_failover_s", "longest_leaderless_s", "rebalance_total_s", "longest_ack_stall_s")
"""The per-fault figures that are durations: the ones an upgrade report calls slower when they grow."""


def upgrade_summary(a: RunHeader, b: RunHeader, faults: list[dict[str, Any]],
                    checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A's release to B's, when both runs are of one broker flavour on two releases; None otherwise."""
    ra, rb = (Release.parse(h.version) if h.version else None for h in (a, b))
    if ra is None or rb is None or ra == rb or a.flavour != b.flavour:
        return None
    shown = {side: {c["id"]: c[side]["shown"] for c in checks} for side in SIDES}
    slower = [{"fault_id": f["fault_id"], "measure": k, "a": f["summary"][k]["a"], "b": f["summary"][k]["b"]}
              for f in faults for k in TIMINGS
              if isinstance(f["summary"][k]["a"], float) and isinstance(f["summary"][k]["b"], float)
              and f["summary"][k]["b"] > f["summary"][k]["a"]]
    return {
        "from": a.version, "to": b.version, "direction": "upgrade" if rb > ra else "downgrade",
        "regressions": [c for c, was in shown["a"].items() if was == "pass" and shown["b"][c] in ("fail", "unknown")],
        "fixed": [c for c, was in shown["a"].items() if was == "fail" and shown["b"][c] == "pass"],
        "slower": slower,
    }


def compare_document(a: RunFacts, b: RunFacts, spark: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The comparison of run A with run B (what compare.json holds and the page shows)."""
    pair = {"a": a, "b": b}
    warnings = mismatch_warnings(a.header, b.header)
    warnings += [f"run {side.upper()} has no history: its faults and figures are unknown, not absent"
                 for side in SIDES if not pair[side].measured]
    ids = sorted({f.window.fault_id for side in SIDES for f in pair[side].faults}
                 | {fid for side in SIDES for fid in pair[side].skipped_faults}, key=fault_order)
    faults = [_fault_entry(fid, pair, warnings) for fid in ids]
    checks = _check_rows(pair)
    return {
        "format": FORMAT_VERSION,
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "spark": dict(spark or {}),
        "runs": {side: pair[side].header.to_json() for side in SIDES},
        "same_experiment": None if None in (a.header.experiment, b.header.experiment)
        else a.header.experiment == b.header.experiment,
        "same_seed": None if None in (a.header.seed, b.header.seed) else a.header.seed == b.header.seed,
        "warnings": warnings,
        "notes": {side: list(pair[side].notes) for side in SIDES},
        "faults": faults,
        "outside_faults": {side: pair[side].outside.to_json(0.0) for side in SIDES},
        "checks": checks,
        "differing_checks": [c["id"] for c in checks if c["differs"]],
        "upgrade": upgrade_summary(a.header, b.header, faults, checks),
    }
