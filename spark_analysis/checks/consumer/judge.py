"""The verdicts of `consumer.nonmonotonic_poll` and `consumer.poll_skip` (`checks.consumer.checks`), from facts either
path
gathers.

The Spark checks (`checks.consumer.checks`, over `frames.poll_pairs`) and the in-process evaluator
(`spark_analysis.inprocess.evaluator`, from its parse) gather the same facts (`NonmonotonicPolls`, `PollSkips`) their
own
way; the status, summary, evidence and metrics, and which anomalies the configuration permits
(`permits.truncation_permit`: a permitted unclean election truncated the partition), are decided here only, so
both paths say the same words about the same history. Samples are the first pairs by the later poll's seq.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.checks.shared.permits import Weighed, judge_weighed
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.result import CheckResult, failed, passed

NONMONOTONIC_POLL = "consumer.nonmonotonic_poll"
POLL_SKIP = "consumer.poll_skip"
EVIDENCE_PAIRS = 10
POLL_FIELDS = ("seq", "t", "src", "type", "consumer", "group", "member", "topic", "partition", "offset", "value",
               "key", "isolation")
"""The fields of a poll the consumer checks show as evidence."""

Row = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PollPair:
    """Two consecutive polls of one consumer on one partition within one assignment (`frames.poll_pairs`)."""

    seq: int
    prev_seq: int
    offset: int
    prev_offset: int
    next_known: int | None = None
    """Poll skips: the first offset after `prev_offset` known to hold a record the consumer had to return."""


@dataclass(frozen=True, slots=True)
class PollPairs:
    """Anomalous poll pairs: how many, the first EVIDENCE_PAIRS by seq, and their polls (by seq)."""

    pairs: int
    sample: Sequence[PollPair] = ()
    polls: Mapping[int, Row] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NonmonotonicPolls:
    """Polls at or below the consumer's previous offset in one assignment."""

    polls: int
    """Poll events in the history."""
    found: Weighed[PollPairs] | None = None
    """None: offsets increased everywhere."""


@dataclass(frozen=True, slots=True)
class PollSkips:
    """Polls that jumped over an offset known to hold a record the consumer had to return."""

    polls: int
    gaps: int = 0
    """Pairs whose offset jumped by more than one."""
    found: Weighed[PollPairs] | None = None
    """None: no gap jumped over a known record."""


def _pair_evidence(found: PollPairs, problem: Callable[[PollPair], str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in found.sample:
        for seq, extra in ((r.prev_seq, {}), (r.seq, {"problem": problem(r)})):
            ev = found.polls.get(seq, {"seq": seq})
            out.append({**{k: ev[k] for k in POLL_FIELDS if ev.get(k) is not None}, **extra})
    return out


def _first_line(ev: list[dict[str, Any]], faults: FaultIndex) -> tuple[str, str | None]:
    """'c1 read orders/0@3 right after @5', and ' during <fault>' with the fault's label (else '', None)."""
    a, b = ev[0], ev[1]
    who = b.get("consumer") or b.get("src")
    fault = faults.active_at(float(b.get("t") or 0.0))
    return (f"{who} read {tp_label(b.get('topic'), b.get('partition'))}@{b.get('offset')} right after "
            f"@{a.get('offset')}"), fault.label if fault else None


def judge_nonmonotonic_poll(facts: NonmonotonicPolls, faults: FaultIndex) -> CheckResult:
    if facts.found is None:
        return passed(NONMONOTONIC_POLL, f"offsets increased across all {facts.polls} polls within each assignment",
                      {"polls": facts.polls, "nonmonotonic": 0})

    def judge(found: PollPairs) -> CheckResult:
        ev = _pair_evidence(found, lambda r: f"offset {r.offset} after {r.prev_offset} in one assignment")
        text, fault = _first_line(ev, faults)
        summary = f"{plural(found.pairs, 'nonmonotonic poll')}, e.g. {text}" + (f" during {fault}" if fault else "")
        return failed(NONMONOTONIC_POLL, summary, ev, {"polls": facts.polls, "nonmonotonic": found.pairs}, fault)

    return judge_weighed(facts.found, judge, ("nonmonotonic poll", "nonmonotonic polls"))


def judge_poll_skip(facts: PollSkips, faults: FaultIndex) -> CheckResult:
    if not facts.gaps:
        return passed(POLL_SKIP, f"no consumer jumped over an offset in {facts.polls} polls",
                      {"polls": facts.polls, "gaps": 0, "skips": 0})
    counts = {"polls": facts.polls, "gaps": facts.gaps}
    if facts.found is None:
        return passed(POLL_SKIP, f"{plural(facts.gaps, 'offset gap')} in polls, none over a known record",
                      {**counts, "skips": 0})

    def judge(found: PollPairs) -> CheckResult:
        ev = _pair_evidence(found, lambda r: f"jumped from {r.prev_offset} to {r.offset} over known offset "
                                             f"{r.next_known}")
        text, fault = _first_line(ev, faults)
        summary = (f"{plural(found.pairs, 'poll skip')}, e.g. {text} over known offset {found.sample[0].next_known}"
                   + (f" during {fault}" if fault else ""))
        return failed(POLL_SKIP, summary, ev, {**counts, "skips": found.pairs}, fault)

    return judge_weighed(facts.found, judge, ("poll skip", "poll skips"))
