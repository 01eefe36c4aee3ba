"""Input guards: what an experiment file must be before a YAML node is composed.

`decode` turns the file's bytes into text: more than `MAX_FILE_BYTES`, a NUL byte (a binary file) or
bytes that are not UTF-8 are problems at the line where they occur. `check_text` refuses characters
YAML does not allow (control characters, lone surrogates). `scan` walks the YAML *event* stream (no
recursion, no Python objects) and measures the document as the composer would build it, every alias
expanded: nesting deeper than `MAX_DEPTH`, more than `MAX_NODES` nodes (an alias bomb), or an alias
inside its own anchor (a cycle) are problems at the event that crosses the line, with its field path.
Each stops at the first problem, so refusing a hostile file costs at most `MAX_NODES` events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from harness.errors import Problem
from harness.experiment.limits import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, MAX_VALUE_CHARS

Path = tuple[str | int, ...]

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML was built with it (15 to 30 times faster), else the pure-Python one."""

_NOT_YAML = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters YAML 1.1 does not allow in a stream (PyYAML's `Reader.NON_PRINTABLE`), surrogates included."""


class Clipped:
    """A bad value too long to quote whole: its repr is cut to `MAX_VALUE_CHARS`."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clipped) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def clip(value: object) -> object:
    """`value`, or a `Clipped` stand-in when its repr is longer than `MAX_VALUE_CHARS`."""
    if isinstance(value, (str, bytes)) and len(value) > MAX_VALUE_CHARS:
        return Clipped(f"{value[:MAX_VALUE_CHARS]!r}... ({len(value)} characters)")
    if isinstance(value, (dict, list, tuple, set)):
        text = repr(value)
        if len(text) > MAX_VALUE_CHARS:
            return Clipped(f"{text[:MAX_VALUE_CHARS]}... ({len(value)} items)")
    return value


def _line_col(data: bytes | str, offset: int) -> tuple[int, int]:
    """1-based line and column of `offset` (bytes or characters, as `data` is)."""
    newline: bytes | str = b"\n" if isinstance(data, bytes) else "\n"
    line = data.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    start = data.rfind(newline, 0, offset) + 1  # type: ignore[arg-type]
    return line, offset - start + 1


def too_large(file: str, data: bytes | str) -> Problem:
    line, _ = _line_col(data, MAX_FILE_BYTES)
    return Problem(file, line, None, "", f"the file is larger than {MAX_FILE_BYTES} bytes (1 MiB), the limit for "
                   "an experiment; it is not read further", None, "an experiment is a few KiB of YAML")


def decode(data: bytes, file: str) -> tuple[str, list[Problem]]:
    """The file's text, or problems: too large, binary (a NUL byte), or not UTF-8."""
    if len(data) > MAX_FILE_BYTES:
        return "", [too_large(file, data)]
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _line_col(data, nul)
        return "", [Problem(file, line, col, "", f"binary file: a NUL byte at offset {nul}; an experiment is "
                            "YAML text (UTF-8)")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(data, exc.start)
        bad = data[exc.start:exc.end]
        return "", [Problem(file, line, col, "", f"not UTF-8 text: byte(s) {bad.hex(' ')} at offset {exc.start} "
                            "cannot be decoded", None, "save the file as UTF-8")]
    return text, []


def check_text(text: str, file: str) -> list[Problem]:
    """Problems of text as a whole: too large, or holding a character YAML does not allow."""
    if len(text) > MAX_FILE_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        return [too_large(file, text)]
    bad = _NOT_YAML.search(text)
    if bad is None:
        return []
    line, col = _line_col(text, bad.start())
    what = "NUL (a binary file?)" if bad.group() == "\x00" else f"U+{ord(bad.group()):04X}"
    return [Problem(file, line, col, "", f"character {what} is not allowed in YAML (control characters and "
                    "unpaired surrogates are not text)")]


@dataclass(slots=True)
class _Open:
    """A mapping or sequence whose end event has not come yet."""

    path: Path
    mapping: bool
    anchor: str | None
    first: int
    """The running node count when it started (its expanded size is the count at its end minus this)."""
    items: int = 0
    key: str | int = "?"
    height: int = 1


@dataclass(slots=True)
class Scan:
    """What the event stream showed: the expanded node count so far, and the first problem (or None)."""

    nodes: int = 0
    problem: Problem | None = None
    anchors: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Anchor -> (expanded size, expanded height) of the node it names."""
    error: str | None = None
    """The YAML syntax error that ended the scan, if one did."""


def render_path(path: Path) -> str:
    """`cluster.broker_config['min.insync.replicas']`, `schedule[0].target`: how messages name a field."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out and ("." in part or " " in part):
            out += f"[{part!r}]"
        else:
            out += f".{part}" if out else part
    return out


def _render(path: Path) -> str:
    """`render_path`, its middle cut out when the path is very deep."""
    out = render_path(path)
    return out if len(out) <= 80 else f"{out[:40]}...{out[-30:]}"


LIBYAML_DEPTH_ERROR = "exceeded maximum nesting depth"
"""libyaml's own nesting limit (1,000 levels, from the libyaml that PyYAML 6.0.4's wheels bundle). Its scanner
looks ahead over a run of flow openers, so it refuses such a file before the first event reaches `_walk`."""


def scan(text: str, file: str) -> Scan:
    """Measure the document from its events; a YAML syntax error ends the scan without a problem (the
    composer reports it, at the same place, with PyYAML's words). Where libyaml refuses the nesting itself,
    the pure-Python parser measures it again, so the problem names the field path at `MAX_DEPTH`."""
    result = _scan(LOADER, text, file)
    if result.problem is None and result.error is not None and LIBYAML_DEPTH_ERROR in result.error \
            and LOADER is not yaml.SafeLoader:
        result = _scan(yaml.SafeLoader, text, file)
    return result


def _scan(loader_class: type[yaml.SafeLoader], text: str, file: str) -> Scan:
    result = Scan()
    loader = loader_class(text)
    try:
        _walk(loader, file, result)
    except yaml.YAMLError as exc:
        result.error = str(exc)
    finally:
        loader.dispose()
    return result


def _child_path(stack: list[_Open]) -> Path:
    if not stack:
        return ()
    top = stack[-1]
    if not top.mapping:
        return (*top.path, top.items)
    return top.path if top.items % 2 == 0 else (*top.path, top.key)


def _walk(loader: yaml.SafeLoader, file: str, result: Scan) -> None:
    stack: list[_Open] = []
    open_anchors: set[str] = set()
    while not loader.check_event(yaml.StreamEndEvent):
        event = loader.get_event()
        if isinstance(event, (yaml.StreamStartEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent)):
            continue
        problem = _step(event, stack, open_anchors, result)
        if problem is not None:
            message, hint = problem
            mark = event.start_mark
            result.problem = Problem(file, mark.line + 1, mark.column + 1, _render(_child_path(stack)), message,
                                     None, hint)
            return


def _step(event: yaml.Event, stack: list[_Open], open_anchors: set[str], result: Scan) -> tuple[str, str] | None:
    """Account for one event; (message, hint) when it crosses a limit."""
    if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
        result.nodes += 1
        if len(stack) + 1 > MAX_DEPTH:
            return f"nesting deeper than {MAX_DEPTH} levels", "an experiment nests about 5 levels deep"
        if result.nodes > MAX_NODES:
            return _too_many()
        anchor = event.anchor
        stack.append(_Open(_child_path(stack), isinstance(event, yaml.MappingStartEvent), anchor, result.nodes - 1))
        if anchor is not None:
            open_anchors.add(anchor)
        return None
    if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
        done = stack.pop()
        size, height = result.nodes - done.first, done.height
        if done.anchor is not None:
            open_anchors.discard(done.anchor)
            result.anchors[done.anchor] = (size, height)
    elif isinstance(event, yaml.AliasEvent):
        name = event.anchor or ""
        if name in open_anchors:
            return f"alias *{name} refers to an anchor that contains it (a cycle)", "an alias repeats a finished node"
        size, height = result.anchors.get(name, (1, 1))
        result.nodes += size
        if result.nodes > MAX_NODES:
            return (f"alias *{name} expands to {size} nodes, and the document with its aliases expanded to more "
                    f"than {MAX_NODES} nodes", "an experiment has a few hundred nodes; expand fewer aliases")
        if len(stack) + height > MAX_DEPTH:
            return f"alias *{name} expands to nesting deeper than {MAX_DEPTH} levels", "expand fewer aliases"
    elif isinstance(event, yaml.ScalarEvent):
        result.nodes += 1
        height = 1
        if result.nodes > MAX_NODES:
            return _too_many()
        if event.anchor is not None:
            result.anchors[event.anchor] = (1, 1)
    else:
        return None
    if stack:
        top = stack[-1]
        top.height = max(top.height, 1 + height)
        if top.mapping and top.items % 2 == 0:
            top.key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
        top.items += 1
    return None


def _too_many() -> tuple[str, str]:
    return (f"the document has more than {MAX_NODES} nodes (scalars, mappings and lists)",
            "an experiment has a few hundred")
