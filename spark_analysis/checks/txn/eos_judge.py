"""The verdicts of `txn.zombie_fenced` and `txn.exactly_once_pipeline` (`checks.txn.eos`), from facts either path
gathers, as `checks.txn.judge` decides the other transaction checks: the Spark checks (`checks.txn.eos`) and the
in-process evaluator (`spark_analysis.inprocess.txn_eos`) gather `ZombieWrites` and `PipelineFacts` their own
way; the status, summary, evidence and metrics are decided here only. What both paths need before the facts, a
pipeline's committed positions and which of its committed offsets disagree with its reads, is here too
(`committed_positions`, `offset_claims`).

Nothing to judge: a run without a zombie (no `txn.zombie`, no record written with `zombie: true`) passes
`txn.zombie_fenced` with "no zombie producer in the run (nothing to judge)"; a run without `pipe.read` passes
`txn.exactly_once_pipeline` with "no pipeline in the run (nothing to judge)". A pipeline whose inputs all lie
past the offsets it committed (or with no committed transaction) leaves the check unknown, never pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spark_analysis.checks.shared.common import plural, tp_label
from spark_analysis.checks.txn.judge import during_fault, evidence_row, location
from spark_analysis.facts.faults import FaultIndex
from spark_analysis.facts.transactions import COMMITTED, UNKNOWN, Transaction, TransactionIndex
from spark_analysis.result import CheckResult, failed, passed, unknown

ZOMBIE_FENCED = "txn.zombie_fenced"
EXACTLY_ONCE_PIPELINE = "txn.exactly_once_pipeline"
NO_ZOMBIE = "no zombie producer in the run (nothing to judge)"
NO_PIPELINE = "no pipeline in the run (nothing to judge)"
ZOMBIE_OUTCOMES = ("fenced", "refused", COMMITTED)
"""What `txn.zombie` says Kafka answered the zombie's commit (`harness/workload/txn_producer.py`)."""
SAMPLE = 5
"""Examples kept per failure kind and pipeline (reads of zombie records: EVIDENCE_ROWS)."""
EVIDENCE_ROWS = 20
PER_KIND = 2
"""Examples per failure kind and pipeline shown as evidence."""

Row = Mapping[str, Any]
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ZombieWrites:
    """What became of the records fenced zombie clients wrote (`send`/`ack`/`send.error` with `zombie: true`)."""

    records: int = 0
    """Records (values) written with `zombie: true`."""
    acked: int = 0
    """Of them, acked at an offset: they reached the log (in a transaction Kafka had already aborted)."""
    reads: int = 0
    """Reads of them by read_committed readers: polls with isolation read_committed (or none), pipe.reads."""
    values_read: int = 0
    sample: Sequence[Row] = ()
    """The first such reads (by seq): type (poll, pipe.read), seq, t, consumer, group, topic, partition, offset,
    value, producer, txn."""


@dataclass(frozen=True, slots=True)
class OffsetClaim:
    """What a committed transaction of a pipeline committed for one input partition it read, against the highest
    offset it read there."""

    txn: int
    topic: str
    partition: int
    committed: int | None
    """The next offset the transaction committed there; None: it committed none for a partition it read."""
    read_up_to: int
    skipped: Row | None = None
    """The first record a read_committed reader had to return between `read_up_to` and `committed` (exclusive),
    which the transaction never read: type, seq, t, topic, partition, offset, value (producer, txn upstream)."""


@dataclass(frozen=True, slots=True)
class DuplicateInput:
    """An input value with outputs in two or more committed transactions (or two committed outputs)."""

    source: int
    outputs: Sequence[Row]
    """Its committed outputs (by seq): type, seq, t, topic, partition, offset, value, producer, txn, source."""
    input: Row | None = None
    """Where the input was (its ack, else the pipeline's pipe.read); None when not known."""


@dataclass(frozen=True, slots=True)
class PipelineFacts:
    """What one pipeline (src `pipeline:<id>`) read, wrote and committed; see `checks.txn.eos` for the rules."""

    pipeline: str
    reads: int = 0
    """pipe.read events with a value, a partition, an offset and a txn."""
    inputs_read: int = 0
    """Distinct values read."""
    outputs_committed: int = 0
    """Output records (values) in committed transactions of the pipeline."""
    inputs_judged: int = 0
    """Inputs a read_committed reader sees (acked outside transactions, or in a committed one) below the offsets
    the pipeline's committed transactions committed, except those only processed in transactions of the pipeline
    whose outcome is unknown."""
    processed: int = 0
    """Of the judged inputs, those with a committed output (one, or more: `duplicates`)."""
    unknown_outcome: int = 0
    """Inputs (any offset) without a committed output, read or written from in a transaction of the pipeline
    whose outcome is unknown: not judged."""
    upstream_unknown: int = 0
    """Inputs below the committed offsets whose own (upstream) transaction's outcome is unknown: not judged."""
    beyond_committed: int = 0
    """Visible inputs at or past the committed offsets, never processed: not judged (not yet consumed)."""
    duplicates: int = 0
    duplicate_sample: Sequence[DuplicateInput] = ()
    lost: int = 0
    lost_sample: Sequence[Row] = ()
    """The first lost inputs (by seq): type (ack, pipe.read), seq, t, topic, partition, offset, value, producer and
    txn upstream, committed_offset (the pipeline's committed position on that partition)."""
    offset_mismatches: int = 0
    offset_sample: Sequence[OffsetClaim] = ()
    aborted_outputs: int = 0
    aborted_sample: Sequence[tuple[Row, Row]] = ()
    """(committed output, its input: a record of an aborted transaction), by the output's seq."""

    @property
    def failed(self) -> bool:
        return bool(self.duplicates or self.lost or self.offset_mismatches or self.aborted_outputs)


def pipeline_transactions(index: TransactionIndex, pipeline: str) -> list[Transaction]:
    """The pipeline's transactions (its transactional producer is named by the pipeline id), by number."""
    return sorted((t for t in index.by_key.values() if t.producer == pipeline), key=lambda t: t.txn)


def committed_positions(index: TransactionIndex, pipeline: str) -> dict[TopicPartition, int]:
    """Per input partition, the largest offset the pipeline's committed transactions committed: the group's final
    committed position (`Transaction.offsets`)."""
    out: dict[TopicPartition, int] = {}
    for txn in pipeline_transactions(index, pipeline):
        if txn.outcome == COMMITTED:
            for topic, partition, offset in txn.offsets:
                out[(topic, partition)] = max(out.get((topic, partition), offset), offset)
    return out


def offset_claims(index: TransactionIndex, pipeline: str, read_max: Mapping[tuple[int, str, int], int]
                  ) -> tuple[list[OffsetClaim], list[OffsetClaim]]:
    """For each committed transaction T of the pipeline and input partition it read (`read_max`: (txn, topic,
    partition) -> the highest offset read there, over every pipe.read of the pipeline): (the claims that disagree
    outright: no offset committed there, or one not past the highest offset read; the claims that commit past
    `read_up_to + 1`, fine unless a record a read_committed reader must return lies in between, which the caller
    looks up: librdkafka's position steps over transaction markers and aborted records). Both by (txn, topic,
    partition)."""
    bad: list[OffsetClaim] = []
    to_check: list[OffsetClaim] = []
    for (txn_no, topic, partition), top in sorted(read_max.items()):
        txn = index.get(pipeline, txn_no)
        if txn is None or txn.outcome != COMMITTED:
            continue
        committed = {(t, p): o for t, p, o in txn.offsets}.get((topic, partition))
        claim = OffsetClaim(txn_no, topic, partition, committed, top)
        if committed is None or committed <= top:
            bad.append(claim)
        elif committed > top + 1:
            to_check.append(claim)
    return bad, to_check


def unknown_txns(index: TransactionIndex, pipeline: str, txns: Sequence[int]) -> set[int]:
    """Of `txns`, the pipeline's transactions whose outcome is unknown (no event describing one counts as such)."""
    return {n for n in txns if index.outcome(pipeline, n) == UNKNOWN}


def _zombie_row(attempt: Row) -> dict[str, Any]:
    keys = ("seq", "t", "src", "producer", "transactional_id", "txn", "outcome", "error", "error_detail")
    return {"type": "txn.zombie", **{k: attempt[k] for k in keys if attempt.get(k) is not None}}


def _zombie_commits(index: TransactionIndex, commits: Sequence[Row]) -> list[dict[str, Any]]:
    evidence: list[dict[str, Any]] = []
    for a in commits[:SAMPLE]:
        producer, txn_no = str(a.get("producer") or str(a.get("src") or "").removeprefix("producer:")), a.get("txn")
        evidence.append({**_zombie_row(a), "problem": f"a fenced client of {producer} committed txn {txn_no}, which "
                                                      "the new session had taken over"})
        txn = index.get(producer, int(txn_no)) if txn_no is not None else None
        if txn is not None and txn.end_type is not None:
            evidence.append({k: v for k, v in {
                "type": txn.end_type, "seq": txn.end_seq, "t": txn.end_t, "producer": producer, "txn": txn.txn,
                "transactional_id": txn.transactional_id, "outcome": txn.outcome, "error": txn.error,
                "problem": f"how txn {txn.txn} of {producer} ended for the producer: {txn.outcome}"}.items()
                if v is not None})
    return evidence


def judge_zombie_fenced(index: TransactionIndex, attempts: Sequence[Row], facts: ZombieWrites,
                        faults: FaultIndex) -> CheckResult:
    """`attempts`: the `txn.zombie` events (file order)."""
    said = Counter(str(a.get("outcome") or UNKNOWN) for a in attempts)
    commits = [a for a in attempts if a.get("outcome") == COMMITTED]
    metrics: dict[str, Any] = {
        "zombies": len(attempts), **{f"zombie_{o}": said.get(o, 0) for o in ZOMBIE_OUTCOMES},
        "zombie_records": facts.records, "zombie_records_acked": facts.acked, "zombie_reads": facts.reads,
        "zombie_values_read": facts.values_read}
    if not attempts and not facts.records:
        return passed(ZOMBIE_FENCED, NO_ZOMBIE, metrics)
    if commits or facts.reads:
        parts: list[str] = []
        evidence: list[dict[str, Any]] = []
        fault: str | None = None
        if commits:
            first = commits[0]
            during, fault = during_fault(faults, first.get("t"))
            parts.append(f"Kafka let a fenced client commit: txn {first.get('txn')} of {first.get('producer')} "
                         f"committed after a new session's init_transactions had fenced it"
                         + (f" ({plural(len(commits), 'zombie commit')})" if len(commits) > 1 else "") + during)
            evidence += _zombie_commits(index, commits)
        if facts.reads:
            r = facts.sample[0]
            during, at = during_fault(faults, r.get("t"))
            fault = fault or at
            parts.append(f"read_committed readers read {plural(facts.values_read, 'record')} a fenced client wrote "
                         f"({plural(facts.reads, 'read')}), e.g. {r.get('consumer')} (group {r.get('group')}) read "
                         f"value {r.get('value')} of txn {r.get('txn')} of {r.get('producer')} at {location(r)}"
                         f"{during}")
            evidence += [evidence_row({k: v for k, v in r.items() if k != "type"}, index, str(r.get("type") or "poll"),
                                      f"read_committed reader {r.get('consumer')} read value {r.get('value')}, "
                                      f"written by a fenced client of {r.get('producer')} into txn {r.get('txn')}")
                         for r in facts.sample[:EVIDENCE_ROWS]]
        return failed(ZOMBIE_FENCED, "; ".join(parts), evidence, metrics, fault)
    fate = (f"of the {plural(facts.records, 'record')} written after the fencing, {facts.acked} reached the log "
            "(acked) and none was read by a read_committed reader")
    if not attempts:
        return passed(ZOMBIE_FENCED, f"no txn.zombie recorded (the run ended before a zombie's commit); {fate}",
                      metrics)
    answers = ", ".join(f"{n} {o}" for o, n in sorted(said.items()))
    return passed(ZOMBIE_FENCED, f"Kafka refused every zombie's commit ({plural(len(attempts), 'zombie')}: "
                                 f"{answers}); {fate}", metrics)


def _input_text(row: Row | None) -> str:
    return f" at {location(row)}" if row is not None and row.get("offset") is not None else ""


def _outputs_text(outputs: Sequence[Row]) -> str:
    shown = ", ".join(f"{o.get('value')} (txn {o.get('txn')})" for o in outputs[:3])
    return shown + (f" and {len(outputs) - 3} more" if len(outputs) > 3 else "")


def _claim_text(claim: OffsetClaim) -> str:
    tp = tp_label(claim.topic, claim.partition)
    if claim.committed is None:
        return f"txn {claim.txn} commits no offset on {tp} after reading up to {claim.read_up_to}"
    text = f"txn {claim.txn} commits offset {claim.committed} on {tp} after reading up to {claim.read_up_to}"
    if claim.skipped is not None:
        text += f", past value {claim.skipped.get('value')} at @{claim.skipped.get('offset')}, which it never read"
    return text


def _pipeline_failure(index: TransactionIndex, f: PipelineFacts, faults: FaultIndex
                      ) -> tuple[str, list[dict[str, Any]], list[float | None]]:
    """The summary part, evidence and sample times of one failing pipeline."""
    kinds: list[str] = []
    evidence: list[dict[str, Any]] = []
    times: list[float | None] = []
    p = f.pipeline
    if f.duplicates:
        d = f.duplicate_sample[0]
        kinds.append(f"{plural(f.duplicates, 'input')} processed twice, e.g. value {d.source}{_input_text(d.input)} "
                     f"has committed outputs {_outputs_text(d.outputs)}")
        times.append(d.outputs[-1].get("t") if d.outputs else None)
        for dup in f.duplicate_sample[:PER_KIND]:
            if dup.input is not None:
                evidence.append(evidence_row(dup.input, index, str(dup.input.get("type")),
                                             f"input of pipeline {p} processed {len(dup.outputs)} times"))
            evidence += [evidence_row(o, index, str(o.get("type")),
                                      f"committed output of pipeline {p} from value {dup.source} (txn {o.get('txn')})")
                         for o in dup.outputs[:3]]
    if f.lost:
        r = f.lost_sample[0]
        kinds.append(f"{plural(f.lost, 'input')} lost, e.g. value {r.get('value')} at {location(r)}: its offset was "
                     "committed but its output was not")
        times.append(r.get("t"))
        evidence += [evidence_row(x, index, str(x.get("type")),
                                  f"below the offset {x.get('committed_offset')} pipeline {p} committed for "
                                  f"{tp_label(x.get('topic'), x.get('partition'))}, yet no committed transaction of "
                                  "it holds an output from this input")
                     for x in f.lost_sample[:PER_KIND * 2]]
    if f.offset_mismatches:
        claim = f.offset_sample[0]
        verb = "disagrees" if f.offset_mismatches == 1 else "disagree"
        kinds.append(f"{plural(f.offset_mismatches, 'committed offset')} {verb} with what it read, e.g. "
                     f"{_claim_text(claim)}")
        txn = index.get(p, claim.txn)
        times.append(txn.end_t if txn is not None else None)
        for c in f.offset_sample[:PER_KIND]:
            t = index.get(p, c.txn)
            row = {"seq": t.end_seq if t else None, "t": t.end_t if t else None, "producer": p, "txn": c.txn,
                   "topic": c.topic, "partition": c.partition, "offset": c.committed, "read_up_to": c.read_up_to}
            evidence.append(evidence_row({k: v for k, v in row.items() if v is not None}, index,
                                         (t.end_type if t else None) or "txn.commit", _claim_text(c)))
            if c.skipped is not None:
                evidence.append(evidence_row(c.skipped, index, str(c.skipped.get("type")),
                                             f"a record read_committed readers see, below the offset txn {c.txn} of "
                                             f"{p} committed, never read by it"))
    if f.aborted_outputs:
        out, src = f.aborted_sample[0]
        kinds.append(f"{plural(f.aborted_outputs, 'committed output')} made from records of aborted transactions, "
                     f"e.g. output {out.get('value')} (txn {out.get('txn')}) from value {src.get('value')} of aborted "
                     f"txn {src.get('txn')} of {src.get('producer')} (txn.aborted_read fails the read itself; the "
                     "output is the damage)")
        times.append(out.get("t"))
        for out, src in f.aborted_sample[:PER_KIND]:
            evidence.append(evidence_row(out, index, str(out.get("type")),
                                         f"committed output of pipeline {p} from value {src.get('value')}, a record "
                                         f"of aborted txn {src.get('txn')} of {src.get('producer')}"))
            evidence.append(evidence_row(src, index, str(src.get("type")), "a record of an aborted transaction"))
    return f"pipeline {p}: " + "; ".join(kinds), evidence, times


_TOTALS = {"pipe_reads": "reads", "inputs_read": "inputs_read", "outputs_committed": "outputs_committed",
           "inputs_judged": "inputs_judged", "inputs_processed": "processed", "processed_twice": "duplicates",
           "lost": "lost", "offset_mismatches": "offset_mismatches", "outputs_from_aborted": "aborted_outputs",
           "not_judged_unknown_outcome": "unknown_outcome", "not_judged_upstream_unknown": "upstream_unknown",
           "not_judged_beyond_committed": "beyond_committed"}
"""Metric name -> the `PipelineFacts` field it sums."""


def judge_exactly_once_pipeline(index: TransactionIndex, facts: Sequence[PipelineFacts],
                                faults: FaultIndex) -> CheckResult:
    """`facts`: one per pipeline (any order)."""
    facts = sorted(facts, key=lambda f: f.pipeline)
    committed = {f.pipeline: sum(1 for t in pipeline_transactions(index, f.pipeline) if t.outcome == COMMITTED)
                 for f in facts}
    metrics: dict[str, Any] = {"pipelines": [f.pipeline for f in facts],
                               "committed_transactions": sum(committed.values()),
                               **{name: sum(getattr(f, field) for f in facts) for name, field in _TOTALS.items()}}
    if len(facts) > 1:
        metrics["by_pipeline"] = {f.pipeline: {name: getattr(f, field) for name, field in _TOTALS.items()}
                                  for f in facts}
    if not facts:
        return passed(EXACTLY_ONCE_PIPELINE, NO_PIPELINE, metrics)
    broken = [f for f in facts if f.failed]
    if broken:
        parts: list[str] = []
        evidence: list[dict[str, Any]] = []
        times: list[float | None] = []
        for f in broken:
            text, rows, at = _pipeline_failure(index, f, faults)
            parts.append(text)
            evidence += rows
            times += at
        fault = next((w.label for w in (faults.active_at(float(t)) for t in times if t is not None) if w), None)
        return failed(EXACTLY_ONCE_PIPELINE, "; ".join(parts), evidence[:EVIDENCE_ROWS], metrics, fault)
    names = ", ".join(f.pipeline for f in facts)
    label = f"pipeline {names}" if len(facts) == 1 else f"pipelines {names}"
    notes = ""
    if metrics["not_judged_unknown_outcome"]:
        notes += (f"; {plural(metrics['not_judged_unknown_outcome'], 'input')} processed in transactions with an "
                  "unknown outcome not judged")
    if metrics["not_judged_upstream_unknown"]:
        notes += (f"; {plural(metrics['not_judged_upstream_unknown'], 'input')} of upstream transactions with an "
                  "unknown outcome not judged")
    if metrics["not_judged_beyond_committed"]:
        notes += (f"; {plural(metrics['not_judged_beyond_committed'], 'input')} past the committed offsets not yet "
                  "processed")
    if not metrics["inputs_judged"]:
        done = plural(metrics["committed_transactions"], "committed transaction")
        return unknown(EXACTLY_ONCE_PIPELINE, f"{label}: no input below the offsets its committed transactions "
                                              f"committed ({done}){notes}", metrics)
    return passed(EXACTLY_ONCE_PIPELINE, f"{label} processed each of {plural(metrics['inputs_processed'], 'input')} "
                                         f"below its committed offsets exactly once "
                                         f"({plural(metrics['outputs_committed'], 'output')} committed in "
                                         f"{plural(metrics['committed_transactions'], 'transaction')}){notes}", metrics)
