"""The layer rules of docs/design.md ("Layers"), read from the imports of every module (lazy imports inside
functions included): the history and the model at the bottom; cluster, faults, observers, workloads above them;
the engine, the analysis, the CLI and pytest on top. A lower layer never imports a higher one.

Inside spark_analysis the same holds by job (`SPARK_LAYERS`, docs/design.md "spark_analysis, by job"): the
session, then ingest, the facts, the result type, the checks (shared helpers below the families, the families
beside each other, the registry above them), the in-process evaluator, the verdict, the reports, verify, trend,
compare and the entry points. And no spark_analysis module imports back into itself through others at all
(`test_no_import_cycle_in_spark_analysis`).

`python -m tests.unit.test_layers` prints the import graph between the packages (the issue's "before and after")
and any import cycle among spark_analysis's modules."""

from __future__ import annotations

import ast
import functools
import graphlib
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TOP = ("harness.engine", "harness.explore", "harness.cli", "harness.cli_progress", "harness.cli_verify",
       "harness.cli_kafka_tool",
       "harness.pytest_plugin",
       "harness.nightly", "harness.known_bugs", "harness.testing", "spark_analysis")
"""Modules on top: nothing below them may import them."""

RULES: dict[str, tuple[str, ...]] = {
    "harness.history": ("harness.",  "spark_analysis"),  # only harness.errors, checked below
    "harness.install": ("harness.", "spark_analysis"),
    "harness.waiting": ("harness.", "spark_analysis"),  # only harness.errors, checked below
    "harness.model": TOP,
    "harness.experiment": TOP,
    "harness.faults": TOP,
    "harness.observe": TOP,
    "harness.workload": TOP,
    "harness.cluster": TOP,
    "harness.zk": TOP,
    "harness.toxiproxy": TOP,
    "spark_analysis": ("harness.cli", "harness.engine.runner", "harness.pytest_plugin", "harness.nightly",
                       "harness.known_bugs"),
}
"""Package -> prefixes it must not import."""

ALLOWED = {"harness.history": ("harness.errors", "harness.history"),
           "harness.install": ("harness.errors", "harness.install"),
           "harness.waiting": ("harness.errors", "harness.waiting")}
"""The ground floor imports only these of the project."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every project module `path` imports, at any depth (TYPE_CHECKING blocks too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path).rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parents + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith(("harness", "spark_analysis"))}


@functools.cache
def _modules() -> dict[str, set[str]]:
    """Every module of harness and spark_analysis -> the project modules it imports (read once; do not modify)."""
    out: dict[str, set[str]] = {}
    for top in ("harness", "spark_analysis"):
        for path in sorted((ROOT / top).rglob("*.py")):
            out[_module_name(path)] = _imports(path)
    return out


def _violations() -> list[str]:
    bad: list[str] = []
    for module, imports in _modules().items():
        for package, forbidden in RULES.items():
            if module != package and not module.startswith(package + "."):
                continue
            allowed = ALLOWED.get(package)
            for imp in sorted(imports):
                if allowed is not None:
                    if not any(imp == a or imp.startswith(a + ".") for a in allowed):
                        bad.append(f"{module} imports {imp} (the ground floor imports only {', '.join(allowed)})")
                elif any(imp == f or imp.startswith(f + ".") for f in forbidden):
                    bad.append(f"{module} imports {imp} (a higher layer)")
    return bad


def test_no_lower_layer_imports_a_higher_one() -> None:
    assert _violations() == []


@pytest.mark.parametrize("package", sorted(RULES))
def test_every_ruled_package_exists(package: str) -> None:
    assert any(m == package or m.startswith(package + ".") for m in _modules()), package


SPARK_LAYERS: tuple[tuple[str, ...], ...] = (
    ("",),  # spark_analysis/__init__.py: the map of the package, importing nothing
    ("session",),
    ("ingest",),
    ("facts",),
    ("result",),
    ("checks.shared",),
    ("checks.controller", "checks.quorum", "checks.partition", "checks.delivery", "checks.consumer", "checks.group",
     "checks.txn", "checks.operation", "checks.slo"),
    ("checks",),  # the registry, checks/__init__.py
    ("catalogue",),  # what the layers below know of the registry (the loader's generated check ids)
    ("inprocess",),
    ("verdict",),
    ("report",),
    ("verify",),
    ("trend",),
    ("compare",),
    ("warmup",),  # the background warm-up of `kafka-chaos run` (a verify of a built-in history)
    ("jvm_archive_build", "__main__"),
)
"""spark_analysis's parts (sub-packages and top-level modules, relative to spark_analysis), lowest first. A module
belongs to the longest part its name starts with; it imports only its own part and the parts of lower layers, never
a part beside it (no check family imports another: what two families share is checks.shared or facts)."""

_SPARK = "spark_analysis"


def _spark_part(name: str) -> str | None:
    """The part of SPARK_LAYERS a spark_analysis module or imported name belongs to (None: none declared)."""
    rel = name[len(_SPARK) + 1:] if name.startswith(_SPARK + ".") else ("" if name == _SPARK else None)
    if rel is None:
        return None
    parts = [p for layer in SPARK_LAYERS for p in layer]
    matching = [p for p in parts if p and (rel == p or rel.startswith(p + "."))]
    return max(matching, key=len) if matching else ("" if rel == "" else None)


def _spark_rank(part: str) -> int:
    return next(i for i, layer in enumerate(SPARK_LAYERS) if part in layer)


def _spark_violations() -> list[str]:
    bad: list[str] = []
    for module, imports in module_graph().items():
        mine = _spark_part(module)
        if mine is None:
            bad.append(f"{module} is in no part of SPARK_LAYERS")
            continue
        for imp in sorted(imports):
            theirs = _spark_part(imp)
            if theirs is None or theirs == mine:
                continue
            if _spark_rank(theirs) > _spark_rank(mine):
                bad.append(f"{module} ({mine or _SPARK}) imports {imp} ({theirs}, a higher layer)")
            elif _spark_rank(theirs) == _spark_rank(mine):
                bad.append(f"{module} ({mine}) imports {imp} ({theirs}, beside it in the same layer)")
    return bad


def test_spark_analysis_parts_import_only_lower_layers() -> None:
    assert _spark_violations() == []


@pytest.mark.parametrize("part", [p for layer in SPARK_LAYERS for p in layer if p])
def test_every_spark_analysis_part_exists(part: str) -> None:
    name = f"{_SPARK}.{part}"
    assert any(m == name or m.startswith(name + ".") for m in _modules()), name


@functools.cache
def module_graph(top: str = _SPARK) -> dict[str, set[str]]:
    """Module -> the modules of `top` it imports (lazy and TYPE_CHECKING imports included). An imported name is
    the module it names, or the module it is defined in (`from a.b import c`: `a.b.c` if that is a module, else
    `a.b`). Importing `a.b.c` is an edge to `a.b.c` alone, not to the packages `a` and `a.b` whose `__init__`
    Python runs first: a package's `__init__` may import its own modules (the check registry does) without a
    cycle, as long as none of them names the package (`from spark_analysis.checks import BY_ID` inside checks/
    would be an edge to the registry, and a cycle)."""
    modules = {m for m in _modules() if m == top or m.startswith(top + ".")}
    graph: dict[str, set[str]] = {}
    for module, imports in _modules().items():
        if module not in modules:
            continue
        targets: set[str] = set()
        for imp in imports:
            name = imp
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of `graph` (module -> the modules it imports) as the standard library's `graphlib` finds
    one (`[a, b, ..., a]`), or None when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_no_import_cycle_in_spark_analysis() -> None:
    assert import_cycle(module_graph()) is None


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    cycle = import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()})
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert import_cycle({"a": {"b"}, "b": set()}) is None


def test_the_module_graph_reads_lazy_imports_and_leaves_parent_packages_out() -> None:
    graph = module_graph()
    assert "spark_analysis.checks.slo.stall" in graph["spark_analysis.inprocess.evaluator"]
    assert "spark_analysis.checks.shared.bitsets" in graph["spark_analysis.checks.slo.stall"]  # inside a method
    assert "spark_analysis.checks" not in graph["spark_analysis.checks.slo.stall"]


def package_graph() -> dict[str, set[str]]:
    """Package -> the packages it imports (harness.<x> / spark_analysis.<x>)."""
    def pkg(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else parts[0]
    graph: dict[str, set[str]] = defaultdict(set)
    modules = _modules()
    for module, imports in modules.items():
        for imp in imports:
            target = pkg(imp)
            if target != pkg(module) and any(m == target or m.startswith(target + ".") for m in modules):
                graph[pkg(module)].add(target)
    return graph


if __name__ == "__main__":
    for source, targets in sorted(package_graph().items()):
        print(f"{source} -> {', '.join(sorted(targets))}")
    problems = _violations() + _spark_violations()
    print(f"\n{len(problems)} layer violation(s)" + ("".join(f"\n  {p}" for p in problems) if problems else ""))
    cycle = import_cycle(module_graph())
    print("no import cycle in spark_analysis" if cycle is None else f"an import cycle: {' -> '.join(cycle)}")
    sys.exit(1 if problems or cycle else 0)
