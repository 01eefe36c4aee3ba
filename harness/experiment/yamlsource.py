"""YAML with locations: parses a document into plain values plus a map from field path to line/column.

Duplicate keys are problems (PyYAML silently keeps the last one); syntax errors become a `Problem`
at the line PyYAML points at. Paths are tuples of keys and list indices. Nothing here raises: the
guards (guard.py) run first, so a node is composed only when the document is small, shallow and its
aliases cheap to expand; a scalar that cannot be converted (`!!int x`, `2001-02-30`, a number of a
thousand digits) is a problem at its line, and any other failure of PyYAML is a problem of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from harness.errors import Problem
from harness.experiment.guard import LOADER, Path, check_text, clip, render_path, scan
from harness.experiment.limits import MAX_NUMBER_CHARS

__all__ = ["Located", "Path", "parse_located", "render_path"]


@dataclass(slots=True)
class Located:
    """A parsed document: plain Python values and where each path starts (1-based line, column)."""

    file: str
    value: Any = None
    locations: dict[Path, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    nodes: int = 0
    """Nodes in the document, every alias expanded (what the input limits count)."""

    def where(self, path: Path) -> tuple[int | None, int | None]:
        """The location of `path`, or of its nearest located ancestor."""
        for cut in range(len(path), -1, -1):
            loc = self.locations.get(path[:cut])
            if loc is not None:
                return loc
        return None, None

    def problem(self, path: Path, message: str, value: object = None, hint: str | None = None) -> Problem:
        line, col = self.where(path)
        return Problem(self.file, line, col, render_path(path), message, clip(value), hint)


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_COLLECTION_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:omap")
"""The tags a mapping or list may carry: the plain ones (a scalar's tag is judged by converting it)."""


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, doc: Located) -> None:
        self.loader = loader
        self.doc = doc

    def _problem(self, node: yaml.Node, path: Path, message: str, value: object = None,
                 hint: str | None = None) -> None:
        mark = node.start_mark
        self.doc.problems.append(Problem(self.doc.file, mark.line + 1, mark.column + 1, render_path(path), message,
                                         clip(value), hint))

    def scalar(self, node: yaml.Node, path: Path) -> Any:
        """The scalar's value; its text (and a problem) when it cannot be converted."""
        if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
            self._problem(node, path, f"a number of more than {MAX_NUMBER_CHARS} characters", node.value)
            return node.value
        try:
            return self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            what = getattr(exc, "problem", None) or str(exc)
            self._problem(node, path, f"cannot read the value as {node.tag.rpartition(':')[2]}: {what}", node.value)
            return node.value

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.doc.locations[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.CollectionNode) and node.tag not in _COLLECTION_TAGS:
            kind = "mapping" if isinstance(node, yaml.MappingNode) else "list"
            self._problem(node, path, f"the tag {node.tag} is not honoured here: an experiment holds plain YAML",
                          node.tag, f"remove the tag and write a plain {kind}")
            return {} if isinstance(node, yaml.MappingNode) else []
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    self._problem(key_node, path, "merge keys (<<) are not supported", "<<",
                                  "write the keys out, or use an alias as a whole value")
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    self._problem(key_node, path, "mapping keys must be plain scalars", "a mapping or list")
                    continue
                key = self.scalar(key_node, path)
                if not isinstance(key, (str, int, float, bool)):
                    self._problem(key_node, path, "mapping keys must be plain scalars", key)
                    continue
                key = str(key) if not isinstance(key, str) else key
                if key in out:
                    first = self.doc.locations.get((*path, key), (None, None))[0]
                    self._problem(key_node, (*path, key), f"duplicate key (first defined on line {first})", key)
                    continue
                out[key] = self.build(value_node, (*path, key))
                self.doc.locations[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self.scalar(node, path)


def parse_located(text: str, file: str) -> Located:
    """Parse one YAML document. Problems (limits, syntax, values) are returned, never raised."""
    doc = Located(file=file)
    doc.problems.extend(check_text(text, file))
    if doc.problems:
        return doc
    try:
        found = scan(text, file)
        doc.nodes = found.nodes
        if found.problem is not None:
            doc.problems.append(found.problem)
        else:
            _compose(text, doc)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        doc.problems.append(Problem(file, line, col, "", f"YAML syntax error: {what}"))
    except yaml.YAMLError as exc:
        doc.problems.append(Problem(file, None, None, "", f"YAML error: {exc}"))
    except Exception as exc:  # whatever PyYAML raised: the file is refused, never the loader crashed
        doc.problems.append(Problem(file, None, None, "", f"cannot parse the file: {type(exc).__name__}: {exc}"))
    return doc


def _compose(text: str, doc: Located) -> None:
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            doc.problems.append(Problem(doc.file, 1, 1, "", "the file is empty; an experiment is a YAML mapping"))
            return
        doc.value = _Builder(loader, doc).build(node, ())
    finally:
        loader.dispose()
