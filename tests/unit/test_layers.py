"""The layer rules of docs/design.md ("Layers"), read from the imports of every module (lazy imports inside
functions included): the history and the model at the bottom; cluster, faults, observers, workloads above them;
the engine, the analysis, the CLI and pytest on top. A lower layer never imports a higher one.

`python -m tests.unit.test_layers` prints the import graph between the packages (the issue's "before and after")."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TOP = ("harness.engine", "harness.cli", "harness.cli_progress", "harness.pytest_plugin", "harness.nightly",
       "harness.known_bugs", "harness.testing", "spark_analysis")
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


def _modules() -> dict[str, set[str]]:
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
    problems = _violations()
    print(f"\n{len(problems)} layer violation(s)" + ("".join(f"\n  {p}" for p in problems) if problems else ""))
    sys.exit(1 if problems else 0)
