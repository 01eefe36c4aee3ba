"""The JSON Schema (draft 2020-12) of experiment files, for editors: generated from the loader, so it cannot drift.

`experiment_schema()` has the loader's own readers read two made-up documents (a ZooKeeper and a KRaft cluster;
every fault kind and action of `harness.faults.catalog` once) through a `Fields` that notes every read (`_Trace`):
the keys each mapping allows, each field's reader (string, choice, integer, number, boolean, duration, list of
strings, properties), its bounds and default, and which fields are required. A default that differs between reads
(a producer's id is `p0`, `p1`...) is left out. A key read without a typed reader (`acks`, partition and broker
lists, `targets`, `groups`, `features`) takes its spec field's type. Descriptions are the specs' own: attribute and
class docstrings of `harness.experiment.schema`'s dataclasses (and `ClusterSpec`), and the catalogue's help for
fault kinds, their parameters and the actions.

The schema refuses unknown keys, wrong types, bad choices and values out of the readers' bounds; durations match
`harness.experiment.durations`' pattern, and targets and links are strings. The rest (target syntax, cross-field
rules, Kafka releases, the checks after a read) is the loader's alone: `kafka-chaos validate`. `kafka-chaos schema`
prints the schema; docs/experiment.schema.json is the committed copy (docs/editors.md).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from harness.errors import HarnessError
from harness.experiment import durations, expect_spec, loader, matrix
from harness.experiment.cluster_fields import IMAGE_ROLES, RETIRED_KEYS, SPEC_FIELDS
from harness.experiment.fields import MISSING, Fields
from harness.experiment.schedule_spec import FAULT_KEYS
from harness.experiment.schema import ExpectSpec, Experiment, FaultSpec, OperationSpec
from harness.experiment.yamlsource import Located, Path
from harness.faults import targets as target_syntax
from harness.faults.catalog import CATALOG, OPERATIONS
from harness.faults.generator import ZK_KINDS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
REGENERATE = "kafka-chaos schema > docs/experiment.schema.json"
ITEM = "[]"
"""A path segment standing for every element of a list."""
UNSTABLE: Any = object()
"""The default of a field whose reads gave different defaults: none is written."""
DURATION = {"$ref": "#/$defs/duration"}
TARGET = {"$ref": "#/$defs/target"}
SCALAR = ["string", "number", "boolean"]
_RENAMED: dict[type, Mapping[str, str]] = {FaultSpec: {"fault": "kind"},
                                          typing.get_type_hints(Experiment)["cluster"]: SPEC_FIELDS}
"""Spec class -> YAML key -> its field, where they differ (`cluster:` keys through `SPEC_FIELDS`)."""
_REPLICAS = {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}}
"""`replicas:` as written (partition -> broker list); the spec holds it as pairs."""


@dataclasses.dataclass
class _Leaf:
    kind: str
    default: Any
    options: dict[str, Any]


class _Trace(Fields):
    """A `Fields` that notes every read: mappings (their allowed keys), lists, leaves, required keys. Paths are
    normalized: a list index is `ITEM`, a schedule entry's index its label (`fault:kill`, `action:reassign`)."""

    def __init__(self) -> None:
        super().__init__(Located("<schema>"))
        self.objects: dict[Path, tuple[str, ...]] = {}
        self.lists: set[Path] = set()
        self.leaves: dict[Path, dict[str | int, _Leaf]] = {}
        self.required_keys: set[tuple[Path, str | int]] = set()
        self.labels: dict[int, str] = {}

    def where(self, path: Path) -> Path:
        return tuple(self.labels[s] if i == 1 and path[0] == "schedule" and isinstance(s, int)
                     else ITEM if isinstance(s, int) else s for i, s in enumerate(path))

    def note(self, path: Path, key: str | int, kind: str, default: Any, **options: Any) -> None:
        at = self.leaves.setdefault(self.where(path), {})
        old = at.get(key)
        if old is None:
            at[key] = _Leaf(kind, default, {k: v for k, v in options.items() if v is not None})
        elif old.default is not UNSTABLE and old.default != default:
            old.default = UNSTABLE

    def mapping(self, path: Path, value: object, allowed: Iterable[str], what: str) -> dict[str, Any] | None:
        allowed = tuple(allowed)
        self.objects.setdefault(self.where(path), allowed)
        return super().mapping(path, value, allowed, what)

    def sequence(self, path: Path, value: object, what: str) -> list[Any]:
        self.lists.add(self.where(path))
        return super().sequence(path, value, what)

    def required(self, m: Mapping[str, Any], path: Path, key: str) -> Any:
        if key not in m or m[key] is None:
            self.required_keys.add((self.where(path), key))
        self.note(path, key, "present", MISSING)
        return super().required(m, path, key)

    def string(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
               choices: Iterable[str] | None = None) -> Any:
        choices = None if choices is None else _sorted(choices)
        self.note(path, key, "string", default, choices=choices)
        return super().string(m, path, key, default, choices)

    def integer(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
                minimum: int | None = None, maximum: int | None = None, why: str | None = None) -> Any:
        self.note(path, key, "integer", default, minimum=minimum, maximum=maximum)
        return super().integer(m, path, key, default, minimum, maximum, why)

    def number(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
               positive: bool = False, maximum: float | None = None, why: str | None = None,
               minimum: float | None = None) -> Any:
        self.note(path, key, "number", default, exclusiveMinimum=0 if positive else None, minimum=minimum,
                  maximum=maximum)
        return super().number(m, path, key, default, positive, maximum, why, minimum)

    def boolean(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING) -> Any:
        self.note(path, key, "boolean", default)
        return super().boolean(m, path, key, default)

    def duration(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
                 positive: bool = True) -> Any:
        self.note(path, key, "duration", default)
        return super().duration(m, path, key, default, positive)

    def properties(self, m: Mapping[str, Any], path: Path, key: str, lines: bool = False) -> dict[str, str]:
        self.note(path, key, "properties", None)
        return super().properties(m, path, key, lines)

    def strings(self, m: Mapping[str, Any], path: Path, key: str, default: Any = MISSING,
                choices: Iterable[str] | None = None) -> Any:
        choices = None if choices is None else _sorted(choices)
        self.note(path, key, "strings", default, choices=choices)
        return super().strings(m, path, key, default, choices)


def _sorted(choices: Iterable[str]) -> tuple[str, ...]:
    """Choices in a stable order (a reader may build them from a set)."""
    return tuple(sorted(set(choices)))


def _documents() -> list[tuple[dict[str, Any], dict[int, str]]]:
    """The made-up documents that reach every reader, each with its schedule labels. The first holds two of each
    producer and pipeline (so defaults made from an index differ); the second, a KRaft cluster and a valid workload
    (so defaults made from the mode, `acks` or the workload differ)."""
    schedule: list[dict[str, Any]] = []
    labels: dict[int, str] = {}
    for name, kind in CATALOG.items():
        labels[len(schedule)] = f"fault:{name}"  # a text parameter without a default is read only when present
        schedule.append({"fault": name, "params": {p.name: "" for p in kind.spec.params if p.type == "text"},
                         "during": "copy"})  # so is `during`
    for name in OPERATIONS:
        labels[len(schedule)] = f"action:{name}"
        schedule.append({"action": name})
    zookeeper = {"cluster": {"images": dict.fromkeys(IMAGE_ROLES, "")}, "topics": [{}],
                 "workload": {"producers": [{"transactions": {}}, {"transactions": {}}], "consumers": [{}],
                              "pipelines": [{}, {}], "client_version": ""},
                 "schedule": schedule, "verify": {}, "expect": {"why": ""},
                 "explore": {"faults": [], "per_schedule": [1, 1], "durations": ["1s", "1s"], "window": ["1s", "1s"],
                             "overlap": 0.5, "targets": [], "rates": dict.fromkeys(ZK_KINDS, 1), "concurrent": 1}}
    kraft = {"cluster": {"mode": "kraft"},  # valid, and unlike the first: defaults made from it differ
             "workload": {"producers": [{"topic": "t", "acks": 1}], "consumers": [{"group": "g", "topics": ["t"]}]}}
    return [(zookeeper, labels), (kraft, {})]


def _trace() -> _Trace:
    trace = _Trace()
    for top, labels in _documents():
        trace.labels = labels
        trace.doc = Located("<schema>", top)
        loader._build(trace, top, "<schema>", None)  # every reader of a document, with this Fields
    return trace


@functools.cache
def _docstrings(cls: type) -> dict[str, str]:
    """The attribute docstrings of a class (a string right after an annotated attribute)."""
    body = ast.parse(inspect.getsource(cls).strip()).body[0]
    out: dict[str, str] = {}
    statements = body.body if isinstance(body, ast.ClassDef) else []
    for stmt, nxt in itertools.pairwise(statements):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            out[stmt.target.id] = _prose(nxt.value.value)
    return out


def _prose(text: str | None, paragraphs: int = 0) -> str:
    """A docstring's first `paragraphs` paragraphs (or all), each on one line; an indented example stays as is."""
    parts = [p for p in inspect.cleandoc(text or "").split("\n\n") if p][:paragraphs or None]
    return "\n\n".join(p if p.startswith(" ") else " ".join(p.split()).replace("::", ":") for p in parts)


def _spec_class(hint: Any) -> type | None:
    """The dataclass a field's type holds (`TopicSpec` in `tuple[TopicSpec, ...]`), if any."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint if hint not in (target_syntax.Target, target_syntax.LinkTarget) else None
    return next((c for c in map(_spec_class, typing.get_args(hint)) if c is not None), None)


def _choices(values: Iterable[Any]) -> list[Any]:
    """An enum of choices as the readers take them: a choice that is a number may be written as one."""
    values = list(values)
    return values + [int(v) for v in values if isinstance(v, str) and v.isdigit()]


def _from_hint(hint: Any) -> dict[str, Any]:
    """The schema of a spec field's type, for a key the loader reads without a typed reader."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (target_syntax.Target, target_syntax.LinkTarget):
        return dict(TARGET)
    if origin is typing.Literal:
        return {"enum": _choices(args)}
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in args if a is not type(None)]
        one = _from_hint(inner[0]) if len(inner) == 1 else {"anyOf": [_from_hint(a) for a in inner]}
        if type(None) not in args:
            return one
        return {**one, "type": [one["type"], "null"]} if "type" in one else {"anyOf": [one, {"type": "null"}]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _from_hint(args[0])}
        return {"type": "array", "prefixItems": [_from_hint(a) for a in args], "minItems": len(args),
                "maxItems": len(args)}
    if origin is Mapping or origin is dict:
        return {"type": "object", "additionalProperties": _from_hint(args[1])}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return {"type": simple[hint]} if hint in simple else {}


def _json_default(value: Any, kind: str) -> Any:
    if isinstance(value, (tuple, list)):
        return [_json_default(v, kind) for v in value]
    return durations.format_duration(value) if kind == "duration" else value


class _Builder:
    def __init__(self, trace: _Trace) -> None:
        self.t = trace

    def object(self, path: Path, cls: type | None, keys: Iterable[str] | None = None, description: str | None = None,
               nullable: bool = True) -> dict[str, Any]:
        """The closed object at `path`: the keys its reader allows (retired keys, which it refuses, left out)."""
        if keys is None and path not in self.t.objects:
            raise HarnessError(f"the loader's readers never read {'.'.join(map(str, path))}: "
                               "harness/experiment/json_schema.py needs a made-up document that reaches it")
        keys = [k for k in (self.t.objects[path] if keys is None else keys) if k not in RETIRED_KEYS]
        if description is None and cls is not None and cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
            description = _prose(cls.__doc__)
        out: dict[str, Any] = {"description": description} if description else {}
        out["type"] = ["object", "null"] if nullable else "object"
        out["properties"] = {k: self.value(path, k, cls) for k in keys}
        required = [k for k in keys if (path, k) in self.t.required_keys]
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        return out

    def value(self, path: Path, key: str, cls: type | None) -> dict[str, Any]:
        child: Path = (*path, key)
        name = _RENAMED.get(cls or object, {}).get(key, key)
        hint = typing.get_type_hints(cls).get(name) if cls is not None else None
        leaf = self.t.leaves.get(path, {}).get(key)
        pair = self.t.leaves.get(child, {})
        if path == () and key in ("schedule", "expect", "matrix"):
            schema = getattr(self, key)()
        elif child in self.t.lists:
            item: Path = (*child, ITEM)
            items = self.object(item, _spec_class(hint)) if item in self.t.objects else {}
            schema = {"type": ["array", "null"], "items": items}
        elif child in self.t.objects:
            schema = self.object(child, _spec_class(hint))
        elif leaf is not None and leaf.kind != "present":
            schema = dict(TARGET) if leaf.kind == "string" and _names_target(hint) else self.leaf(leaf)
        elif pair and all(isinstance(k, int) for k in pair):
            kind = pair[0].kind
            schema = {"type": "array", "prefixItems": [self.leaf(pair[k]) for k in sorted(pair, key=int)],
                      "minItems": len(pair), "maxItems": len(pair)}
            default = _field_default(cls, name)
            if default is not None:
                schema["default"] = _json_default(default, kind)
        else:
            schema = dict(_REPLICAS) if key == "replicas" else _from_hint(hint)
            default = _field_default(cls, name)
            if isinstance(default, (str, int, float)):
                schema = {**schema, "default": default}
        doc = _docstrings(cls).get(name) if cls is not None else None
        return {"description": doc, **schema} if doc else schema

    def leaf(self, leaf: _Leaf) -> dict[str, Any]:
        kind, options = leaf.kind, dict(leaf.options)
        choices = options.pop("choices", None)
        item: dict[str, Any] = {"type": "string"} if choices is None else {"enum": _choices(choices)}
        optional = leaf.default is not MISSING
        schema: dict[str, Any]
        if kind == "string":
            schema = item if choices is not None else {"type": ["string", "number"]}
        elif kind == "strings":
            schema = {"anyOf": [item, {"type": "array", "items": item}]}
        elif kind == "duration":
            schema = {"anyOf": [DURATION, {"type": "null"}]} if optional else dict(DURATION)
        elif kind == "properties":
            schema = {"type": ["object", "null"], "additionalProperties": {"type": SCALAR}}
        else:
            schema = {"type": kind, **options}
        if leaf.default not in (MISSING, UNSTABLE, None):
            schema["default"] = _json_default(leaf.default, kind)
        return schema

    def schedule(self) -> dict[str, Any]:
        """Each entry is one fault kind's or one action's closed object, chosen by its `fault:` or `action:`."""
        branches = []
        for word, names in (("fault", list(CATALOG)), ("action", list(OPERATIONS))):
            for name in names:
                branches.append({"if": {"properties": {word: {"const": name}}, "required": [word]},
                                 "then": {"$ref": f"#/$defs/{word}.{name}"}})
        item = {"type": "object",
                "properties": {"fault": {"description": "a fault kind (`kafka-chaos faults`)", "enum": list(CATALOG)},
                               "action": {"description": "an operation (`kafka-chaos actions`)",
                                          "enum": list(OPERATIONS)}},
                "oneOf": [{"required": ["fault"]}, {"required": ["action"]}], "allOf": branches}
        return {"description": "Faults (`fault:`, `kafka-chaos faults`) and operations (`action:`, `kafka-chaos "
                               "actions`), each starting `at` into the chaos phase.",
                "type": ["array", "null"], "items": item}

    def fault(self, name: str) -> dict[str, Any]:
        spec = CATALOG[name].spec
        path: Path = ("schedule", f"fault:{name}")
        read = {*self.t.leaves.get(path, {}), *(k for k in FAULT_KEYS if (*path, k) in self.t.objects)}
        keys = [k for k in FAULT_KEYS if k in read or (k == "targets" and spec.several)]
        about = f"Targets: {', '.join(sorted(spec.targets))}; duration: {spec.duration}; at the end: {spec.heal}."
        out = self.object(path, FaultSpec, keys, nullable=False, description=f"{spec.help} {about}")
        out["properties"]["fault"] = {"const": name}
        params = out["properties"]["params"]
        for p in spec.params:
            one = params["properties"][p.name]
            one["description"] = p.help
            if p.type == "float" and p.minimum is not None:
                one["minimum"] = p.minimum
        if params.get("required"):  # `params:` left out reads as `{}`, which lacks them
            out["required"].append("params")
        if spec.several and "target" in out.get("required", ()):
            out["required"].remove("target")
            out["oneOf"] = [{"required": ["target"]}, {"required": ["targets"]}]
        return out

    def action(self, name: str) -> dict[str, Any]:
        kind = OPERATIONS[name]
        out = self.object(("schedule", f"action:{name}"), OperationSpec, description=kind.help, nullable=False)
        out["properties"]["action"] = {"const": name}
        for key in kind.keys:
            out["properties"][key.name]["description"] = key.help
        return out

    def expect(self) -> dict[str, Any]:
        entry = self.object(("expect",), ExpectSpec)
        return {"description": _prose(expect_spec.__doc__, 2),
                "anyOf": [entry, {"type": "object", "additionalProperties": entry}]}

    def matrix(self) -> dict[str, Any]:
        return {"description": _prose(matrix.__doc__, 3), "type": "object",
                "additionalProperties": {"type": "array"}}


def _names_target(hint: Any) -> bool:
    return hint in (target_syntax.Target, target_syntax.LinkTarget) or any(map(_names_target, typing.get_args(hint)))


def _field_default(cls: type | None, name: str) -> Any:
    """A spec field's default (not a factory's), None when it has none."""
    found = next((f for f in dataclasses.fields(cls) if f.name == name), None) if cls is not None else None
    return found.default if found is not None and found.default is not dataclasses.MISSING else None


def experiment_schema() -> dict[str, Any]:
    """The JSON Schema of an experiment file."""
    builder = _Builder(_trace())
    top = builder.object((), Experiment, (*loader.TOP_KEYS, "matrix"), nullable=False)
    for named in (top, top["properties"]["topics"]["items"]):  # the names the loader matches with one regex
        named["properties"]["name"]["pattern"] = loader._NAME.pattern
    defs: dict[str, Any] = {
        "duration": {"description": _prose(durations.__doc__).split(";")[0], "type": "string",
                     "pattern": rf"^\s*(?:{durations._PART.pattern}\s*)+$"},
        "target": {"description": _prose(target_syntax.__doc__).split("\n\n", 1)[-1], "type": "string"}}
    defs |= {f"fault.{n}": builder.fault(n) for n in CATALOG}
    defs |= {f"action.{n}": builder.action(n) for n in OPERATIONS}
    return {"$schema": DRAFT, "title": "kafka-chaos experiment",
            "description": "An experiment file of kafka-chaos (experiments/*.yaml). Generated from the loader by "
                           f"`{REGENERATE}`; `kafka-chaos validate FILE` is the authority (target syntax, "
                           "cross-field rules, Kafka releases).", **top, "$defs": defs}


def schema_text() -> str:
    """`experiment_schema()` as the committed file holds it."""
    return json.dumps(experiment_schema(), indent=2) + "\n"


__all__ = ["REGENERATE", "experiment_schema", "schema_text"]
