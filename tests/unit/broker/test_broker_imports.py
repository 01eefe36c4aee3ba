"""The reference broker's module graph: no runtime import cycle among `harness.broker` modules (imports under
`if TYPE_CHECKING:` are type-only and allowed), and only the wiring (`server`, `main`) imports `server`.

`python -m tests.unit.broker.test_broker_imports` prints the graph, runtime and type-only edges, and its
strongly connected components (the issue's "before and after": 15 modules in one type-only cycle through
`server.Broker` before, the controller's 4 after)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "harness" / "broker"
PREFIX = "harness.broker"
WIRING = {"server", "main", "__main__"}
"""The modules that build the broker; every other module sees its collaborators through Protocols."""

Graph = dict[str, set[str]]


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.stmt) -> set[str]:
    """The `harness.broker` modules one import statement names (by short name)."""
    if isinstance(node, ast.Import):
        return {a.name.split(".")[2] for a in node.names if a.name.startswith(PREFIX + ".")}
    if isinstance(node, ast.ImportFrom):
        module = f"{PREFIX}.{node.module}" if node.level and node.module else node.module or ""
        if module == PREFIX:
            return {a.name for a in node.names}
        if module.startswith(PREFIX + "."):
            return {module.split(".")[2]}
    return set()


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(runtime imports, type-only imports) of one module, at any depth (lazy imports in functions count)."""
    runtime: set[str] = set()
    typed: set[str] = set()

    def walk(nodes: Iterable[ast.AST], type_only: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking(node.test):
                walk(node.body, True)
                walk(node.orelse, type_only)
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                (typed if type_only else runtime).update(_targets(node))
            walk(ast.iter_child_nodes(node), type_only)

    walk(ast.parse(path.read_text(encoding="utf-8")).body, False)
    me = path.stem
    return runtime - {me}, typed - runtime - {me}


def graphs() -> tuple[Graph, Graph]:
    """(runtime edges, runtime plus type-only edges) between the modules of `harness/broker`."""
    runtime: Graph = {}
    every: Graph = {}
    for path in sorted(PACKAGE.glob("*.py")):
        rt, typed = _imports(path)
        runtime[path.stem] = rt
        every[path.stem] = rt | typed
    return runtime, every


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: (-len(c), c))


def test_no_runtime_import_cycle_among_broker_modules() -> None:
    runtime, _every = graphs()
    assert cycles(runtime) == []


def test_the_graph_reader_finds_a_cycle_and_ignores_type_only_edges() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    runtime, every = graphs()
    assert all(runtime[m] <= every[m] for m in runtime)


def test_only_the_wiring_imports_server_even_for_types() -> None:
    """Components take Protocols of what they need, not the whole `Broker`."""
    _runtime, every = graphs()
    assert sorted(m for m, targets in every.items() if "server" in targets and m not in WIRING) == []


def test_the_only_type_only_cycle_is_the_controller_and_its_parts() -> None:
    """The controller's channels, event handlers and reassignments take the `Controller` they are parts of."""
    _runtime, every = graphs()
    assert cycles(every) == [["channels", "controller", "controller_events", "reassign"]]


def main() -> int:
    runtime, every = graphs()
    for module in sorted(every):
        typed = sorted(every[module] - runtime[module])
        print(f"{module} -> {', '.join(sorted(runtime[module])) or '-'}"
              + (f"   [type-only: {', '.join(typed)}]" if typed else ""))
    for name, graph in (("runtime", runtime), ("runtime + type-only", every)):
        found = cycles(graph)
        print(f"\n{name} import cycles: " + ("none" if not found else
                                              "; ".join(f"{len(c)} modules: {', '.join(c)}" for c in found)))
    return 1 if cycles(runtime) else 0


if __name__ == "__main__":
    sys.exit(main())
