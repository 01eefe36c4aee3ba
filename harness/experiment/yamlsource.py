"""YAML with locations: parses a document into plain values plus a map from field path to line/column.

Duplicate keys are problems (PyYAML silently keeps the last one); syntax errors become a `Problem`
at the line PyYAML points at. Paths are tuples of keys and list indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from harness.errors import Problem

Path = tuple[str | int, ...]


def render_path(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out and ("." in part or " " in part):
            out += f"[{part!r}]"
        else:
            out += f".{part}" if out else part
    return out


@dataclass(slots=True)
class Located:
    """A parsed document: plain Python values and where each path starts (1-based line, column)."""

    file: str
    value: Any = None
    locations: dict[Path, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def where(self, path: Path) -> tuple[int | None, int | None]:
        """The location of `path`, or of its nearest located ancestor."""
        for cut in range(len(path), -1, -1):
            loc = self.locations.get(path[:cut])
            if loc is not None:
                return loc
        return None, None

    def problem(self, path: Path, message: str, value: object = None, hint: str | None = None) -> Problem:
        line, col = self.where(path)
        return Problem(self.file, line, col, render_path(path), message, value, hint)


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, doc: Located) -> None:
        self.loader = loader
        self.doc = doc

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.doc.locations[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.loader.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)):
                    self.doc.problems.append(
                        Problem(self.doc.file, key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                                render_path(path), "mapping keys must be plain scalars", key)
                    )
                    continue
                key = str(key) if not isinstance(key, str) else key
                if key in out:
                    first = self.doc.locations.get((*path, key), (None, None))[0]
                    self.doc.problems.append(
                        Problem(self.doc.file, key_node.start_mark.line + 1, key_node.start_mark.column + 1,
                                render_path((*path, key)), f"duplicate key (first defined on line {first})",
                                key)
                    )
                    continue
                out[key] = self.build(value_node, (*path, key))
                self.doc.locations[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self.loader.construct_object(node, deep=True)


def parse_located(text: str, file: str) -> Located:
    """Parse one YAML document. Syntax errors are returned as problems, never raised."""
    doc = Located(file=file)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            doc.problems.append(Problem(file, 1, 1, "", "the file is empty; an experiment is a YAML mapping"))
            return doc
        doc.value = _Builder(loader, doc).build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        doc.problems.append(Problem(file, line, col, "", f"YAML syntax error: {what}"))
    except yaml.YAMLError as exc:
        doc.problems.append(Problem(file, None, None, "", f"YAML error: {exc}"))
    finally:
        loader.dispose()
    return doc
