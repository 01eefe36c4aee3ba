"""`txn.zombie_fenced` and `txn.exactly_once_pipeline` on the in-process evaluator (the Spark path reaches the
same words: tests/integration/spark_analysis/test_txn_checks_spark.py and test_self_test_spark.py), and
`delivery.lost_write` reading a pipeline's `pipe.read`s as reads of its input topic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks.txn.eos_judge import NO_PIPELINE, NO_ZOMBIE
from spark_analysis.facts.transactions import build_transaction_index
from spark_analysis.inprocess.evaluator import inprocess_checks
from spark_analysis.result import CheckResult
from tests.fixtures.histories import ill_typed, scenario, write_run
from tests.fixtures.histories_txn import (
    PIPELINE_FAULTS,
    RC,
    TOPIC,
    TxnHistory,
    aborted_read_history,
    eos_history,
)

ZOMBIE, PIPELINE = "txn.zombie_fenced", "txn.exactly_once_pipeline"


def reference(tmp_path: Path, events: list[dict[str, Any]], name: str = "run") -> dict[str, CheckResult]:
    return {r.check_id: r for r in inprocess_checks(write_run(tmp_path / name, events))}


def test_a_fenced_zombie_and_a_pipeline_that_processes_each_input_once_pass(tmp_path: Path) -> None:
    """`enrich` commits offsets 2 and 6 after reading up to 0 and 4 (the position steps over the markers, and
    over txn 1's aborted records, at @1, @2, @3 and @5): no mismatch. Its last transaction's outcome is unknown:
    the 2 inputs it read are counted, not judged. The zombie's commit was fenced; 1 of its 2 records reached the
    log and no read_committed reader read it. Nothing else fails."""
    got = reference(tmp_path, eos_history())
    zombie, pipeline = got[ZOMBIE], got[PIPELINE]
    assert (zombie.status, zombie.summary) == (
        "pass", "Kafka refused every zombie's commit (1 zombie: 1 fenced); of the 2 records written after the "
                "fencing, 1 reached the log (acked) and none was read by a read_committed reader")
    assert dict(zombie.metrics) == {"zombies": 1, "zombie_fenced": 1, "zombie_refused": 0, "zombie_committed": 0,
                                    "zombie_records": 2, "zombie_records_acked": 1, "zombie_reads": 0,
                                    "zombie_values_read": 0}
    assert (pipeline.status, pipeline.summary) == (
        "pass", "pipeline enrich processed each of 4 inputs below its committed offsets exactly once (4 outputs "
                "committed in 2 transactions); 2 inputs processed in transactions with an unknown outcome not judged")
    assert {k: pipeline.metrics[k] for k in ("pipe_reads", "inputs_judged", "offset_mismatches",
                                             "not_judged_unknown_outcome", "not_judged_beyond_committed")} == {
        "pipe_reads": 6, "inputs_judged": 4, "offset_mismatches": 0, "not_judged_unknown_outcome": 2,
        "not_judged_beyond_committed": 0}
    assert not [c for c, r in got.items() if c.split(".")[0] in ("txn", "delivery", "consumer") and r.status != "pass"]


@pytest.mark.parametrize(("fault", "summary"), [
    ("duplicate", "pipeline dup: 2 inputs processed twice, e.g. value 1008 at payments/0@0 has committed outputs "
                  "1022 (txn 0), 1024 (txn 1)"),
    ("loss", "pipeline lossy: 1 input lost, e.g. value 1009 at payments/1@0: its offset was committed but its output "
             "was not"),
    ("offsets", "pipeline skewed: 1 committed offset disagrees with what it read, e.g. txn 0 commits offset 0 on "
                "payments/0 after reading up to 0"),
    ("offsets_skip", "pipeline skipper: 1 input lost, e.g. value 1014 at payments/0@6: its offset was committed but "
                     "its output was not; 1 committed offset disagrees with what it read, e.g. txn 1 commits offset "
                     "8 on payments/0 after reading up to 4, past value 1014 at @6, which it never read"),
    ("aborted_input", "pipeline dirty: 1 committed output made from records of aborted transactions, e.g. output "
                      "1024 (txn 0) from value 1010 of aborted txn 1 of tp1 (txn.aborted_read fails the read itself; "
                      "the output is the damage)"),
])
def test_each_pipeline_fault_fails_exactly_once_naming_that_pipeline_only(
        tmp_path: Path, fault: str, summary: str) -> None:
    got = reference(tmp_path, eos_history(fault))
    assert (got[PIPELINE].status, got[PIPELINE].summary) == ("fail", summary)
    assert {e["producer"] for e in got[PIPELINE].evidence if e["type"] == "txn.commit"} <= {PIPELINE_FAULTS[fault]}
    assert "enrich" not in got[PIPELINE].summary, "each pipeline is judged on its own"
    others = {c: r.status for c, r in got.items() if c.split(".")[0] in ("txn", "delivery", "consumer")
              and r.status != "pass" and c != PIPELINE}
    assert others == ({"txn.aborted_read": "fail"} if fault == "aborted_input" else {}), "reading it is its fault"


def test_a_duplicate_shows_the_input_and_its_committed_outputs(tmp_path: Path) -> None:
    result = reference(tmp_path, eos_history("duplicate"))[PIPELINE]
    first = [(e["type"], e["value"], e.get("txn"), e.get("input_value")) for e in result.evidence[:3]]
    assert first == [("ack", 1008, 0, None), ("ack", 1022, 0, 1008), ("ack", 1024, 1, 1008)]
    assert result.evidence[1]["transactional_id"] == "dup-tid" and result.evidence[1]["topic"] == "dup-out"
    assert result.metrics["processed_twice"] == 2 and result.metrics["by_pipeline"]["enrich"]["processed_twice"] == 0


def test_an_offset_past_the_reads_is_evidenced_by_the_commit_and_the_record_it_stepped_over(tmp_path: Path) -> None:
    result = reference(tmp_path, eos_history("offsets_skip"))[PIPELINE]
    commit = next(e for e in result.evidence if e["type"] == "txn.commit")
    assert {k: commit[k] for k in ("producer", "txn", "topic", "partition", "offset", "read_up_to")} == {
        "producer": "skipper", "txn": 1, "topic": TOPIC, "partition": 0, "offset": 8, "read_up_to": 4}
    lost = result.evidence[0]
    assert (lost["type"], lost["value"], lost["offset"], lost["committed_offset"]) == ("ack", 1014, 6, 8)


@pytest.mark.parametrize(("fault", "summary"), [
    ("zombie_commit", "Kafka let a fenced client commit: txn 1 of tp2 committed after a new session's "
                      "init_transactions had fenced it"),
    ("zombie_read", "read_committed readers read 1 record a fenced client wrote (1 read), e.g. l1 (group ledger) "
                    "read value 1004 of txn 1 of tp2 at orders/0@4"),
])
def test_a_zombie_that_commits_or_is_read_committed_fails(tmp_path: Path, fault: str, summary: str) -> None:
    got = reference(tmp_path, eos_history(fault))
    assert (got[ZOMBIE].status, got[ZOMBIE].summary) == ("fail", summary)
    assert got[PIPELINE].status == "pass"
    if fault == "zombie_commit":
        zombie, end = got[ZOMBIE].evidence
        assert (zombie["type"], zombie["outcome"], end["type"], end["error"]) == (
            "txn.zombie", "committed", "txn.commit", "_ABANDONED")
    else:
        (read,) = got[ZOMBIE].evidence
        assert (read["type"], read["consumer"], read["value"], read["transactional_id"]) == ("poll", "l1", 1004,
                                                                                             "tp2-tid")
        assert got["txn.aborted_read"].status == "fail", "the zombie's transaction was aborted: both see it"


def test_a_zombie_commit_kafka_refuses_without_fencing_passes(tmp_path: Path) -> None:
    events = [{**e, "outcome": "refused", "error": "_STATE"} if e["type"] == "txn.zombie" else e
              for e in eos_history()]
    result = reference(tmp_path, events)[ZOMBIE]
    assert result.status == "pass" and "(1 zombie: 1 refused)" in result.summary


def test_zombie_records_without_a_txn_zombie_are_judged_too(tmp_path: Path) -> None:
    """A run cut short before the zombie's commit: its records carry `zombie: true`, no txn.zombie says more."""
    quiet = [e for e in eos_history() if e["type"] != "txn.zombie"]
    result = reference(tmp_path, quiet)[ZOMBIE]
    assert (result.status, result.summary) == (
        "pass", "no txn.zombie recorded (the run ended before a zombie's commit); of the 2 records written after "
                "the fencing, 1 reached the log (acked) and none was read by a read_committed reader")
    read = [e for e in eos_history("zombie_read") if e["type"] != "txn.zombie"]
    assert reference(tmp_path, read, name="read")[ZOMBIE].status == "fail"


@pytest.mark.parametrize("events", [scenario, aborted_read_history], ids=["no transactions", "no zombie, no pipeline"])
def test_a_run_without_a_zombie_or_a_pipeline_has_nothing_to_judge(tmp_path: Path, events: Any) -> None:
    got = reference(tmp_path, events())
    assert (got[ZOMBIE].status, got[ZOMBIE].summary) == ("pass", NO_ZOMBIE)
    assert (got[PIPELINE].status, got[PIPELINE].summary) == ("pass", NO_PIPELINE)


def _upstream() -> tuple[TxnHistory, list[list[dict[str, Any]]]]:
    """tp1 commits txns 0 and 1 on payments/0 and /1 (@0 and @2; markers at @1 and @3)."""
    h = TxnHistory()
    return h, [h.txn(1.0, "tp1", [0, 1]), h.txn(2.0, "tp1", [0, 1])]


def test_inputs_of_a_transaction_with_an_unknown_outcome_are_not_judged_though_below_later_offsets(
        tmp_path: Path) -> None:
    """enrich's txn 0 ends unknown (it may have committed: then its outputs are the inputs' only ones, and its
    txn 1 rightly goes on from its offsets); txn 1 commits past them. Neither lost nor processed: not judged."""
    h, up = _upstream()
    h.pipeline_txn(3.0, "enrich", "enrich", up[0], end="unknown", offsets={(TOPIC, 0): 2, (TOPIC, 1): 2})
    h.pipeline_txn(4.0, "enrich", "enrich", up[1], offsets={(TOPIC, 0): 4, (TOPIC, 1): 4})
    result = reference(tmp_path, h.events())[PIPELINE]
    assert result.status == "pass", result.summary
    assert (result.metrics["inputs_judged"], result.metrics["not_judged_unknown_outcome"]) == (2, 2)


def test_a_pipeline_without_a_committed_transaction_leaves_the_check_unknown(tmp_path: Path) -> None:
    h, up = _upstream()
    h.pipeline_txn(3.0, "enrich", "enrich", up[0], end="unknown")
    result = reference(tmp_path, h.events())[PIPELINE]
    assert (result.status, result.summary) == (
        "unknown", "pipeline enrich: no input below the offsets its committed transactions committed (0 committed "
                   "transactions); 2 inputs processed in transactions with an unknown outcome not judged; 2 inputs "
                   "past the committed offsets not yet processed")


def test_an_input_past_the_committed_offsets_is_not_yet_processed_not_lost(tmp_path: Path) -> None:
    h, up = _upstream()
    h.pipeline_txn(3.0, "enrich", "enrich", up[0], offsets={(TOPIC, 0): 2, (TOPIC, 1): 2})
    result = reference(tmp_path, h.events())[PIPELINE]
    assert result.status == "pass", result.summary
    assert result.summary.endswith("; 2 inputs past the committed offsets not yet processed")


def test_an_upstream_transaction_with_an_unknown_outcome_is_not_judged(tmp_path: Path) -> None:
    h = TxnHistory()
    up = [h.txn(1.0, "tp1", [0]), h.txn(2.0, "tp1", [0], end="unknown"), h.txn(3.0, "tp1", [0])]
    h.pipeline_txn(4.0, "enrich", "enrich", [up[0][0], up[2][0]], offsets={(TOPIC, 0): 6})
    result = reference(tmp_path, h.events())[PIPELINE]
    assert result.status == "pass", result.summary
    assert (result.metrics["inputs_judged"], result.metrics["not_judged_upstream_unknown"]) == (2, 1)
    assert result.metrics["offset_mismatches"] == 0, "the unknown record at @2 is no visible record it skipped"


@pytest.mark.parametrize("skips", [False, True])
def test_lost_write_reads_a_pipelines_input_topic_through_its_pipe_reads(tmp_path: Path, skips: bool) -> None:
    """No consumer polls at all, the pipeline reads payments: its pipe.reads are reads of payments, so an acked
    record it read past and never read is a lost write (before, payments was a topic no consumer reads, and a
    run without polls left the check unknown)."""
    h = TxnHistory()
    up = h.txn(1.0, "tp1", [0, 0, 0])
    h.pipeline_txn(2.0, "enrich", "enrich", [up[0], up[2]] if skips else up, offsets={(TOPIC, 0): 4})
    got = reference(tmp_path, h.events())
    assert got["delivery.lost_write"].status == ("fail" if skips else "pass"), got["delivery.lost_write"].summary
    if skips:
        assert got["delivery.lost_write"].summary == "lost 1 acked write on payments/0"
        # a record skipped between two reads is a loss; the offsets rule looks past the last read only
        assert got[PIPELINE].metrics["lost"] == 1 and got[PIPELINE].metrics["offset_mismatches"] == 0


def test_a_read_committed_reader_of_a_pipelines_output_is_judged_by_the_other_checks(tmp_path: Path) -> None:
    """The pipeline's outputs are its transactions' records: a read_committed group reading them sees each
    committed transaction whole, and the records of its unknown one are no acknowledged writes."""
    h, up = _upstream()
    outs = h.pipeline_txn(3.0, "enrich", "enrich", up[0], offsets={(TOPIC, 0): 2, (TOPIC, 1): 2})
    h.pipeline_txn(4.0, "enrich", "enrich", up[1], end="unknown")
    h.read(5.0, "ledger", "l1", RC, outs)
    got = reference(tmp_path, h.events())
    assert {c: r.status for c, r in got.items() if c.startswith(("txn.", "delivery."))} == {
        c: "pass" for c in got if c.startswith(("txn.", "delivery."))}
    assert got["txn.lost_commit"].metrics["polled"] == 6, "4 inputs the pipeline read, 2 outputs ledger polled"


def test_a_pipelines_commit_names_the_offsets_it_commits() -> None:
    """`offsets` as Spark reads it (an array of strings) and as the file has it (numbers) alike; malformed
    entries are left out."""
    commit = {"type": "txn.commit", "src": "pipeline:enrich", "producer": "enrich", "txn": 0, "outcome": "committed",
              "definite": True}
    for offsets in ([["payments", 0, 6], ["payments", "1", "7"]], [["payments", "0", "6"], ["payments", 1, 7], [1]]):
        txn = build_transaction_index([{**commit, "offsets": offsets}]).get("enrich", 0)
        assert txn is not None and txn.offsets == (("payments", 0, 6), ("payments", 1, 7))


def test_a_damaged_pipe_read_line_makes_a_pipeline_failure_unknown(tmp_path: Path) -> None:
    """The damaged-history rule: a missing pipe.read (or output) line can make offsets look past what was read,
    or an input look lost."""
    damaged, _line = ill_typed(eos_history("loss"), "pipe.read", "offset", 1.5)
    result = reference(tmp_path, damaged)[PIPELINE]
    assert result.status == "unknown"
    assert result.metrics["status_without_damage_rule"] == "fail"
