"""The delivery checks' fast paths (word bit sets, slot words, value order as send order) agree
with the frames they stand in for, and step aside whenever their premise does not hold."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.checks import BY_ID
from spark_analysis.checks.delivery.checks import LOST_COUNTERS
from spark_analysis.checks.delivery.slots import acks_in_value_order, increasing_within, location_summary
from spark_analysis.checks.shared.bitsets import write_counters
from spark_analysis.checks.shared.frames import per_value_stats
from spark_analysis.facts.context import CheckContext, spark_context
from spark_analysis.ingest.load import load_history
from spark_analysis.ingest.runinfo import load_run_info
from spark_analysis.result import run_check
from tests.fixtures.histories import scenario

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

COMPARED = (*LOST_COUNTERS, "values_seen")


def context(spark: Any, run_dir: Path) -> CheckContext:
    loaded = load_history(spark, run_dir / "history.jsonl")
    return spark_context(load_run_info(run_dir), spark, loaded.events, loaded.type_counts, loaded.end_t)


def _write(t: float, kind: str, value: int, **fields: Any) -> dict[str, Any]:
    src = "consumer:c1" if kind == "poll" else "producer:p1"
    who = {"consumer": "c1", "group": "g"} if kind == "poll" else {"producer": "p1"}
    return {"t": t, "src": src, "type": kind, "value": value, "topic": "orders", **who, **fields}


@pytest.mark.parametrize("bug", [None, "lost", "duplicate", "inconsistent", "reorder"])
def test_word_counters_equal_the_per_value_counters_on_the_fixtures(spark: Any, make_run: Any, bug: str | None) -> None:
    """Every counter the bit sets give equals the one the per-value frame gives."""
    ctx = context(spark, make_run(f"fast-{bug}", scenario(**({bug: True} if bug else {}))))
    try:
        fast, slow = write_counters(ctx), per_value_stats(ctx)
        assert {k: fast[k] for k in COMPARED} == {k: int(slow[k] or 0) for k in COMPARED}
    finally:
        ctx.close()


def test_word_counters_are_exact_at_word_edges_for_negative_and_far_apart_values(spark: Any, make_run: Any) -> None:
    """Values on both sides of a 64-bit word boundary, negative, and 2^62 apart are all counted."""
    values = [0, 63, 64, 127, -1, -64, -65, 2**62 + 1, 10**12]
    events: list[dict[str, Any]] = []
    for i, v in enumerate(values):
        events.append(_write(i, "send", v, key=f"k{i}", acks="all" if i % 3 else "1"))
        if i % 2 == 0:
            events.append(_write(i + 0.1, "ack", v, key=f"k{i}", partition=0, offset=i))
        if i % 4 == 0:
            events.append(_write(i + 0.2, "poll", v, key=f"k{i}", partition=0, offset=i))
        if i == 3:
            events.append(_write(i + 0.1, "send.error", v, key=f"k{i}", error="timeout", definite=False))
    ctx = context(spark, make_run("edges", events))
    try:
        fast, slow = write_counters(ctx), per_value_stats(ctx)
        assert {k: fast[k] for k in COMPARED} == {k: int(slow[k] or 0) for k in COMPARED}
        assert fast["acked"] == 5 and fast["polled"] == 3 and fast["indefinite_errors"] == 1
        assert location_summary(ctx) == {"locations": 5, "two_valued": 0} and fast["values_seen"] == 5
    finally:
        ctx.close()


def test_location_summary_sees_a_shared_offset_and_a_value_at_two_offsets(spark: Any, make_run: Any) -> None:
    """The inconsistent fixture has a two-valued location; the duplicate one more locations than values."""
    for bug, expect in (("inconsistent", lambda s, seen: s["two_valued"] > 0),
                        ("duplicate", lambda s, seen: not s["two_valued"] and s["locations"] > seen)):
        ctx = context(spark, make_run(f"loc-{bug}", scenario(**{bug: True})))
        try:
            seen = write_counters(ctx)["values_seen"]
            assert expect(location_summary(ctx), seen), (bug, location_summary(ctx), seen)
        finally:
            ctx.close()


def _increasing(rows: list[tuple[int, int, int]]) -> bool:
    """The definition `increasing_within` answers, by sorting: per group, no x twice and y rising with x."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for g, x, y in rows:
        groups.setdefault(g, []).append((x, y))
    for pairs in groups.values():
        pairs.sort()
        if any(a[0] == b[0] or a[1] >= b[1] for a, b in itertools.pairwise(pairs)):
            return False
    return True


INCREASING_CASES = {
    "empty": [],
    "one row": [(1, 5, 9)],
    "rising across a word edge": [(1, 6, 1), (1, 7, 2), (1, 8, 3), (1, 9, 4)],
    "falling across a word edge": [(1, 7, 5), (1, 8, 4)],
    "falling inside a word, slots apart": [(1, 1, 5), (1, 6, 4)],
    "equal y": [(1, 1, 5), (1, 2, 5)],
    "x twice": [(1, 3, 1), (1, 3, 2)],
    "sparse words far apart": [(1, -2**40, 1), (1, -9, 2), (1, -8, 3), (1, -1, 4), (1, 0, 5), (1, 2**50, 6)],
    "negative x out of order": [(1, -9, 2), (1, -1, 1)],
    "two groups, each rising": [(1, 1, 10), (2, 2, 1), (1, 3, 11), (2, 4, 2)],
    "two groups interleaved, one falling": [(1, 1, 10), (2, 2, 5), (1, 3, 11), (2, 4, 4)],
    "a gap inside a word": [(1, 0, 1), (1, 7, 2), (1, 16, 3), (1, 23, 0)],
    "holes in x are no violation": [(1, 0, 1), (1, 2, 2), (1, 4, 3)],
    "a hole between words": [(1, 5, 1), (1, 6, 2), (1, 7, 3), (1, 9, 4)],
    "negative to positive, 2 groups": [(1, -3, 1), (1, -2, 2), (1, -1, 3), (1, 0, 4), (1, 1, 5), (2, 8, 1), (2, 9, 2)],
}


@pytest.mark.parametrize("case", INCREASING_CASES)
def test_increasing_within_agrees_with_sorting_each_group(spark: Any, case: str) -> None:
    """The slot-word answer equals the one from sorting, at word edges, for negatives, gaps and repeats."""
    rows = INCREASING_CASES[case]
    df = spark.createDataFrame(rows, "g long, x long, y long")
    assert increasing_within(df, ["g"], "x", "y") is _increasing(rows)


def _two_writes(first: int, second: int, offsets: tuple[int, int]) -> list[dict[str, Any]]:
    """Producer p1 sends `first` then `second` under one key; they are stored at `offsets`."""
    events = [_write(0.0, "send", first, key="k"), _write(0.1, "send", second, key="k")]
    for t, (v, o) in enumerate(zip((first, second), offsets, strict=True)):
        events.append(_write(1.0 + t, "ack", v, key="k", partition=0, offset=o))
        events.append(_write(3.0 + t, "poll", v, key="k", partition=0, offset=o))
    return events


@pytest.mark.parametrize(("first", "second", "offsets", "status"), [
    (10, 20, (0, 1), "pass"),   # the harness's case: value order is send order, and the fast path says so
    (20, 10, (0, 1), "pass"),   # sent 20 then 10, stored in that order: value order would call it reordered
    (10, 20, (1, 0), "fail"),   # sent 10 then 20, stored 20 first: reordered
    (20, 10, (1, 0), "fail"),   # sent 20 then 10, stored 10 first: reordered, though in value order
])
def test_key_order_follows_send_order_even_when_values_are_not_sent_in_increasing_order(
        spark: Any, make_run: Any, first: int, second: int, offsets: tuple[int, int], status: str) -> None:
    """Key order judges the order of the sends, not of the values."""
    ctx = context(spark, make_run(f"order-{first}-{second}-{offsets[0]}", _two_writes(first, second, offsets)))
    try:
        assert acks_in_value_order(ctx) is (first < second and offsets[0] < offsets[1])
        result = run_check(BY_ID["delivery.key_order"], ctx)
        assert result.status == status, result
    finally:
        ctx.close()


def test_value_order_falls_back_to_each_key_when_a_producer_interleaves_keys(spark: Any, make_run: Any) -> None:
    """A producer whose values fall across keys (10, 5, 11, 6), with both keys' acks in one partition,
    fails the per-producer pass of both halves; per key, value order is still send order."""
    events = [_write(i * 0.1, "send", v, key=k) for i, (k, v) in enumerate([("a", 10), ("b", 5), ("a", 11), ("b", 6)])]
    events += [_write(1.0 + i, "ack", v, key=k, partition=0, offset=i)
               for i, (k, v) in enumerate([("a", 10), ("b", 5), ("a", 11), ("b", 6)])]
    ctx = context(spark, make_run("interleaved-keys", events))
    try:
        assert acks_in_value_order(ctx) is True
        assert run_check(BY_ID["delivery.key_order"], ctx).status == "pass"
    finally:
        ctx.close()
