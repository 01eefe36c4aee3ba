"""The verifiers read what a fault did from `fault.start`'s `effect` (`spark_analysis.facts.fault_effect`), and from
the kind name only in the legacy reader (`spark_analysis.facts.faults_legacy`), for histories recorded before `effect`:
both answer the verifiers' questions alike for every kind the harness injects, and no check module names a fault
kind."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from harness.faults.catalog import CATALOG
from spark_analysis.facts.fault_effect import FaultEffect
from spark_analysis.facts.faults import build_fault_index, describe_target
from spark_analysis.facts.faults_legacy import legacy_effect
from tests.unit.faults.test_kinds import _run

ROOT = Path(__file__).resolve().parents[3]
ENTRIES = [
    "{at: 1s, fault: kill, target: 'broker:2', duration: 5s}",
    "{at: 1s, fault: kill, target: 'zookeeper:1', duration: 5s}",
    "{at: 1s, fault: kill_zookeeper, target: 'zookeeper:1', duration: 5s}",
    "{at: 1s, fault: kill, target: 'consumer:g/0', duration: 5s}",
    "{at: 1s, fault: stop, target: 'broker:1', duration: 5s}",
    "{at: 1s, fault: pause, target: 'broker:3', duration: 5s}",
    "{at: 1s, fault: pause, target: 'consumer:g/1', duration: 5s}",
    "{at: 1s, fault: isolate, target: 'broker:2', duration: 5s}",
    "{at: 1s, fault: isolate_zookeeper, target: 'broker:3', duration: 5s}",
    "{at: 1s, fault: partition, groups: [['broker:1'], ['broker:2', 'broker:3']], duration: 5s}",
    "{at: 1s, fault: partition, groups: [['broker:1', 'zookeeper:1'], ['broker:2']], duration: 5s, "
    "params: {one_way: true}}",
    "{at: 1s, fault: cut, link: 'broker:1->broker:2', duration: 5s}",
    "{at: 1s, fault: cut, link: 'client->broker:2', duration: 5s}",
    "{at: 1s, fault: latency, link: 'broker:1->broker:2', duration: 5s, params: {latency_ms: 10}}",
    "{at: 1s, fault: timeout, link: 'client->broker:3', duration: 5s}",
]


def _answers(effect: FaultEffect) -> dict[str, Any]:
    """The questions the verifiers ask of a fault, for nodes 1-3."""
    return {"stopped": effect.stopped(), "graceful": effect.stopped_gracefully(), "graceful_stop": effect.graceful_stop,
            "takes_away": {n for n in (1, 2, 3) if effect.takes_away(n)},
            "takes_broker_away": {n for n in (1, 2, 3) if effect.takes_away(n, ("broker",))},
            "from_clients": {n for n in (1, 2, 3) if effect.takes_from_clients(n)}}


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_recorded_effect_answers_as_the_legacy_reader_did(entry: str) -> None:
    events, _ = _run(entry)
    start = events[0]
    recorded = FaultEffect.read(json.dumps(start["effect"]))  # as Spark keeps it: JSON text
    assert recorded is not None and recorded == FaultEffect.read(start["effect"])
    legacy = legacy_effect(str(start["kind"]), describe_target(start["target"]))
    assert _answers(recorded) == _answers(legacy), entry


def test_a_window_uses_the_recorded_effect_and_an_old_history_the_legacy_reader() -> None:
    events, _ = _run("{at: 1s, fault: isolate, target: 'broker:2', duration: 5s}")
    start = {**events[0], "t": 1.0}
    recorded = build_fault_index([start]).windows[0]
    assert recorded.recorded is not None and recorded.effect.cut_off(peer="client") == {2}
    old = build_fault_index([{k: v for k, v in start.items() if k != "effect"}]).windows[0]
    assert old.recorded is None and old.effect.cut_off(peer="client") == {2}
    # the effect, not the kind name, decides: a kind the legacy reader never heard of
    new_kind = {**start, "kind": "brownout", "effect": {"nodes": [{"role": "broker", "id": 3}], "down": True}}
    assert build_fault_index([new_kind]).took_from_clients(3, 0.0, 2.0) is not None


def test_an_effect_that_is_not_an_object_reads_as_none() -> None:
    assert FaultEffect.read(None) is None and FaultEffect.read("[1]") is None and FaultEffect.read("{") is None


AMBIGUOUS = {"partition": "an event field and a check family", "timeout": "an operation's outcome"}
"""Kind names that are other words of the verifiers too: flagged only where they sit beside another kind name or
are compared with a `kind`."""


def _kind_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = set(CATALOG)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in kinds):
            continue
        parent = parents.get(node)
        if node.value in AMBIGUOUS:
            siblings = getattr(parent, "elts", [])
            beside = any(isinstance(e, ast.Constant) and e.value in kinds and e is not node for e in siblings)
            compared = isinstance(parent, ast.Compare) and any(
                (isinstance(x, ast.Attribute) and x.attr == "kind") or (isinstance(x, ast.Name) and x.id == "kind")
                for x in [parent.left, *parent.comparators])
            if not (beside or compared):
                continue
        found.append((node.lineno, node.col_offset, f"{path}:{node.lineno}: {node.value!r}"))
    return [text for *_, text in sorted(found)]


def test_no_check_module_names_a_fault_kind() -> None:
    """Checks and the facts they read ask a fault's effect; only the legacy reader
    (`spark_analysis/facts/faults_legacy.py`) knows kind names."""
    facts = [p for p in sorted((ROOT / "spark_analysis" / "facts").glob("*.py")) if p.name != "faults_legacy.py"]
    paths = [*sorted((ROOT / "spark_analysis" / "checks").rglob("*.py")), *facts]
    assert ROOT / "spark_analysis" / "facts" / "faults.py" in paths
    assert [hit for p in paths for hit in _kind_literals(p)] == []


def test_the_kind_literal_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('A = frozenset({"kill", "partition"})\nB = w.kind == "timeout"\nC = ev["partition"]\n')
    assert [h.rsplit(": ", 1)[1] for h in _kind_literals(sample)] == ["'kill'", "'partition'", "'timeout'"]
