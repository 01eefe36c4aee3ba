"""`matrix:` — one experiment file, several variants (the cross product of the axes).

An axis is a field path into the experiment and the list of values it takes::

    matrix:
      workload.producers[*].acks: [1, all]          # [*]: every element of the list
      cluster.broker_config.min.insync.replicas: [1, 2]   # after broker_config/config: one property name
      cluster.kafka: ["7.6.1", "7.7.1"]

Each variant is the document with the values substituted, then read by the ordinary field
readers, so a bad value is reported at the matrix line that supplied it. A variant's id names its
values by the axis' last segment (`acks=1,kafka=7.6.1`), or by the whole path where two axes share
a last segment. This module is pure: it rewrites parsed documents and never reads files.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from typing import Any

from harness.experiment.fields import Fields
from harness.experiment.yamlsource import Located, Path, render_path

MAX_VARIANTS = 64
PROPERTY_MAPS = ("broker_config", "config")
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\*|\d+)\]")


@dataclass(frozen=True, slots=True)
class Axis:
    key: str
    segments: tuple[str | int, ...]
    values: tuple[Any, ...]
    label: str


@dataclass(frozen=True, slots=True)
class Variant:
    """One combination: its id and, per axis key, the value chosen (index into the axis' values)."""

    id: str
    choices: tuple[tuple[Axis, int], ...]


def parse_path(key: str) -> tuple[str | int, ...] | None:
    """`a.b[0].c[*]` -> ('a', 'b', 0, 'c', '*'); after `broker_config`/`config` the rest is one key."""
    out: list[str | int] = []
    pos = 0
    while pos < len(key):
        if key[pos] == "." and out:
            pos += 1
        m = _SEGMENT.match(key, pos)
        if m is None:
            return None
        if m.group(1) is not None:
            if out and out[-1] in PROPERTY_MAPS:
                out.append(key[m.start():])
                return tuple(out)
            out.append(m.group(1))
        else:
            out.append("*" if m.group(2) == "*" else int(m.group(2)))
        pos = m.end()
    return tuple(out) if out else None


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "+".join(_label(v) for v in value) or "none"
    if isinstance(value, dict):
        return "+".join(f"{k}:{_label(v)}" for k, v in value.items()) or "none"
    return str(value)


def read_axes(f: Fields, raw: object) -> tuple[Axis, ...] | None:
    """The axes of a `matrix:` mapping (problems recorded in `f`); None when there is no matrix."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw:
        f.error(("matrix",), "matrix must be a non-empty mapping of field path -> list of values", raw)
        return ()
    parsed: list[tuple[str, tuple[str | int, ...], tuple[Any, ...]]] = []
    for key, values in raw.items():
        path: Path = ("matrix", key)
        segments = parse_path(key)
        if segments is None or segments[0] in ("matrix", "name"):
            f.error(path, "not a field path (write e.g. workload.producers[*].acks)", key)
            continue
        if not isinstance(values, list) or not values:
            f.error(path, "a matrix axis is a non-empty list of values", values)
            continue
        parsed.append((key, segments, tuple(values)))
    lasts = [str(s[-1]) for _, s, _ in parsed]
    axes = tuple(Axis(k, s, v, str(s[-1]) if lasts.count(str(s[-1])) == 1 else k) for k, s, v in parsed)
    total = 1
    for axis in axes:
        total *= len(axis.values)
    if total > MAX_VARIANTS:
        f.error(("matrix",), f"the matrix expands to {total} variants; at most {MAX_VARIANTS} are allowed",
                {a.key: len(a.values) for a in axes})
        return ()
    return axes


def variants(axes: tuple[Axis, ...]) -> tuple[Variant, ...]:
    """The cross product, in the order the axes and values are written."""
    out = []
    for combo in itertools.product(*(range(len(a.values)) for a in axes)):
        choices = tuple(zip(axes, combo, strict=True))
        out.append(Variant(",".join(f"{a.label}={_label(a.values[i])}" for a, i in choices), choices))
    return tuple(out)


def apply_variant(doc: Located, top: dict[str, Any], variant: Variant, f: Fields) -> tuple[Located, dict[str, Any]]:
    """A copy of the document with the variant's values substituted (problems recorded in `f`).

    Substituted fields are located at the matrix value that supplied them, so later problems about
    them point at the matrix line.
    """
    new_top = copy.deepcopy({k: v for k, v in top.items() if k != "matrix"})
    located = Located(doc.file, new_top, dict(doc.locations), [])
    for axis, index in variant.choices:
        value_loc = doc.locations.get(("matrix", axis.key, index)) or doc.locations.get(("matrix", axis.key))
        for target in _targets(f, new_top, axis):
            parent, last = _walk(new_top, target[:-1]), target[-1]
            parent[last] = copy.deepcopy(axis.values[index])
            for p in [p for p in located.locations if p[:len(target)] == target]:
                del located.locations[p]
            if value_loc is not None:
                located.locations[target] = value_loc
    return located, new_top


def _walk(node: Any, path: tuple[str | int, ...]) -> Any:
    for seg in path:
        node = node[seg]
    return node


def _targets(f: Fields, top: dict[str, Any], axis: Axis) -> list[tuple[str | int, ...]]:
    """Concrete paths the axis sets ([*] expanded; missing mapping levels created)."""
    found: list[tuple[str | int, ...]] = [()]
    where: Path = ("matrix", axis.key)
    for depth, seg in enumerate(axis.segments):
        last = depth == len(axis.segments) - 1
        nxt: list[tuple[str | int, ...]] = []
        for prefix in found:
            node = _walk(top, prefix)
            if seg == "*" or isinstance(seg, int):
                if not isinstance(node, list):
                    f.error(where, f"{render_path(prefix)} is not a list", axis.key)
                    return []
                if isinstance(seg, str):
                    nxt.extend((*prefix, i) for i in range(len(node)))
                elif seg < len(node):
                    nxt.append((*prefix, seg))
                else:
                    f.error(where, f"{render_path(prefix)} has {len(node)} element(s); there is no [{seg}]", axis.key)
                    return []
            else:
                if node is None and prefix:
                    node = {}
                    _walk(top, prefix[:-1])[prefix[-1]] = node
                if not isinstance(node, dict):
                    f.error(where, f"{render_path(prefix) or 'the experiment'} is not a mapping", axis.key)
                    return []
                if not last and node.get(seg) is None:
                    node[seg] = {}
                nxt.append((*prefix, seg))
        found = nxt
    if not found:
        f.error(where, "the path matches nothing (an empty list?)", axis.key)
    return found

