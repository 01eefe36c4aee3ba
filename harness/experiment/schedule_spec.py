"""Reads the `schedule:` list of an experiment into `FaultSpec`s, checked against the fault catalogue
(kind, target slot, parameters and their types and bounds, duration rule). At most `MAX_FAULTS` faults;
integer parameters are bounded (`PARAM_MAXIMA`, else `MAX_PARAM_INT`) as Toxiproxy and the engine can
take them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from harness.experiment.fields import MISSING, Fields, did_you_mean
from harness.experiment.limits import MAX_FAULTS, MAX_PARAM_INT, PARAM_MAXIMA
from harness.experiment.operation_spec import read_operation
from harness.experiment.schema import MIGRATION_STEPS, FaultSpec, OperationSpec, ParamValue, frozen_map
from harness.experiment.yamlsource import Path
from harness.faults.catalog import CATALOG, KindSpec, ParamSpec
from harness.faults.targets import LinkTarget, Target, parse_link, parse_target

T = TypeVar("T")
FAULT_KEYS = ("at", "fault", "target", "targets", "link", "groups", "params", "duration", "jitter", "during")
_MAX_TARGET_CHARS = 300


def read_schedule(f: Fields, raw: object) -> tuple[tuple[FaultSpec, ...], tuple[OperationSpec, ...]]:
    """The schedule's faults (`fault:` entries) and operations (`action:` entries)."""
    faults: list[FaultSpec] = []
    operations: list[OperationSpec] = []
    items = f.sequence(("schedule",), raw, "schedule")
    if len(items) > MAX_FAULTS:
        f.error(("schedule",), f"at most {MAX_FAULTS} faults and actions are allowed, got {len(items)}", None,
                "docs/design.md 'Input limits'")
    for i, item in enumerate(items):
        if isinstance(item, dict) and "action" in item:
            if "fault" in item:
                f.error(("schedule", i), "an entry is either a `fault:` or an `action:`, not both", None)
                continue
            op = read_operation(f, ("schedule", i), i, item)
            if op is not None:
                operations.append(op)
            continue
        spec = _fault(f, ("schedule", i), i, item)
        if spec is not None:
            faults.append(spec)
    return tuple(faults), tuple(operations)


def _fault(f: Fields, path: Path, index: int, item: object) -> FaultSpec | None:
    m = f.mapping(path, item, FAULT_KEYS, "a scheduled fault")
    if m is None:
        return None
    at = f.duration(m, path, "at", positive=False)
    jitter = f.duration(m, path, "jitter", default=0.0, positive=False)
    during = f.string(m, path, "during", default=None, choices=MIGRATION_STEPS) if "during" in m else None
    name = f.string(m, path, "fault")
    if name is MISSING:
        return None
    entry = CATALOG.get(name)
    if entry is None:
        f.error((*path, "fault"), "unknown fault kind", name,
                did_you_mean(name, CATALOG) + "; `kafka-chaos faults` lists them")
        return None
    kind = entry.spec
    duration = _duration(f, m, path, kind)
    targets: Any = ()
    if "targets" in m and "target" not in m and kind.several:
        targets = _several(f, m, path, kind)
        target, link, groups = (MISSING if targets is MISSING else targets[0]), None, ()
    else:
        target, link, groups = _slots(f, m, path, kind)
    params = _params(f, m, path, kind)
    if MISSING in (at, jitter, duration, target, link, groups, params, targets, during):
        return None
    return FaultSpec(index=index, at=at, kind=kind.name, target=target, link=link, groups=groups,
                     params=frozen_map(params), duration=duration, jitter=jitter,  # type: ignore[arg-type]
                     targets=targets, during=during)


def _duration(f: Fields, m: dict[str, Any], path: Path, kind: KindSpec) -> Any:
    if kind.duration == "forbidden" and "duration" in m:
        f.error((*path, "duration"), f"fault {kind.name!r} takes no duration", m["duration"])
        return MISSING
    if kind.duration == "required":
        return f.duration(m, path, "duration")
    return f.duration(m, path, "duration", default=None)


def _several(f: Fields, m: dict[str, Any], path: Path, kind: KindSpec) -> tuple[Target, ...] | Any:
    """`targets:`: two or more distinct nodes named by id, which the fault acts on at one instant."""
    raw = m["targets"]
    if not isinstance(raw, list) or len(raw) < 2:
        f.error((*path, "targets"), "targets is a list of two or more nodes (one node: `target:`)", raw,
                "e.g. targets: [broker:1, broker:2, broker:3]")
        return MISSING
    out: list[Target] = []
    for i, text in enumerate(raw):
        if not isinstance(text, str):
            f.error((*path, "targets", i), "a target is a string such as broker:1", text)
            return MISSING
        t = _node(f, (*path, "targets", i), text, kind)
        if t is MISSING:
            return MISSING
        if not t.is_static:
            f.error((*path, "targets", i), "targets name nodes by id (broker:<id>, controller:<id>): they act "
                    "together at one instant, so none is chosen when the fault fires", text)
            return MISSING
        if t in out:
            f.error((*path, "targets", i), "a node is named twice", text)
            return MISSING
        out.append(t)
    return tuple(out)


def _slots(f: Fields, m: dict[str, Any], path: Path, kind: KindSpec) -> tuple[Any, Any, Any]:
    """Reads target / link / groups, whichever the kind takes; the others must be absent."""
    wanted = "link" if "link" in kind.targets else "groups" if "groups" in kind.targets else "target"
    if "targets" in m:
        if "target" in m:
            f.error((*path, "targets"), "a fault takes `target:` or `targets:`, not both", m["targets"])
        else:
            f.error((*path, "targets"), f"fault {kind.name!r} acts on one node", m["targets"],
                    "use `target:`; for several nodes at one instant, one entry per node at the same `at`")
        return MISSING, MISSING, MISSING
    for other in ("target", "link", "groups"):
        if other != wanted and other in m:
            f.error((*path, other), f"fault {kind.name!r} takes `{wanted}`, not `{other}`", m[other])
            return MISSING, MISSING, MISSING
    target: Any = None
    link: Any = None
    groups: Any = ()
    if wanted == "target":
        target = _target(f, m, path, "target", kind)
    elif wanted == "link":
        text = f.string(m, path, "link")
        if text is MISSING:
            return MISSING, MISSING, MISSING
        link = _parsed(f, (*path, "link"), text, parse_link, "link")
    else:
        groups = _groups(f, m, path)
    return target, link, groups


def _target(f: Fields, m: dict[str, Any], path: Path, key: str, kind: KindSpec) -> Target | Any:
    text = f.string(m, path, key)
    if text is MISSING:
        return MISSING
    return _node(f, (*path, key), text, kind)


def _node(f: Fields, path: Path, text: str, kind: KindSpec) -> Target | Any:
    target = _parsed(f, path, text, parse_target, "target")
    if target is MISSING:
        return MISSING
    if target.role not in kind.targets:
        f.error(path, f"fault {kind.name!r} cannot target a {target.role}", text,
                f"it targets: {', '.join(sorted(kind.targets))}")
        return MISSING
    return target


def _groups(f: Fields, m: dict[str, Any], path: Path) -> Any:
    raw = f.required(m, path, "groups")
    if raw is MISSING:
        return MISSING
    if not isinstance(raw, list) or len(raw) < 2 or not all(isinstance(g, list) and g for g in raw):
        f.error((*path, "groups"), "groups must be a list of at least two non-empty lists of nodes", raw,
                'e.g. groups: [["broker:1"], ["broker:2", "broker:3", "zookeeper:1"]]')
        return MISSING
    out: list[tuple[Target, ...]] = []
    seen: set[Target] = set()
    for gi, group in enumerate(raw):
        members: list[Target] = []
        for ni, text in enumerate(group):
            t = _parsed(f, (*path, "groups", gi, ni), text, parse_target, "target")
            if t is MISSING:
                return MISSING
            if not t.is_static or t.role in ("consumer", "producer"):
                f.error((*path, "groups", gi, ni), "partition groups name brokers, ZooKeeper members or "
                        "KRaft controllers by id (broker:<id>, zookeeper:<id>, controller:<id>)", text)
                return MISSING
            if t in seen:
                f.error((*path, "groups", gi, ni), "a node may be in only one group", text)
                return MISSING
            seen.add(t)
            members.append(t)
        out.append(tuple(members))
    return tuple(out)


def _parsed(f: Fields, path: Path, text: object, parse: Callable[[str], T], what: str) -> T | Any:
    """`parse(text)`, or MISSING and a problem: the text must be short ASCII, and every error of the
    parser is a problem at `path`."""
    if not isinstance(text, str) or not text.isascii() or len(text) > _MAX_TARGET_CHARS:
        f.error(path, f"malformed {what}: a {what} is ASCII text of at most {_MAX_TARGET_CHARS} characters", text)
        return MISSING
    try:
        return parse(text)
    except ValueError as exc:  # TargetSyntaxError, or any other ValueError of the parser
        f.error(path, f"malformed {what}: {exc}", text)
        return MISSING


def _params(f: Fields, m: dict[str, Any], path: Path, kind: KindSpec) -> Any:
    ppath: Path = (*path, "params")
    raw = f.mapping(ppath, m.get("params"), [p.name for p in kind.params], f"params of {kind.name!r}")
    if raw is None:
        return MISSING
    out: dict[str, ParamValue] = {}
    ok = True
    for spec in kind.params:
        value = _param(f, raw, ppath, spec)
        if value is MISSING:
            ok = False
        elif value is not None:
            out[spec.name] = value
    if any(k not in {p.name for p in kind.params} for k in raw):
        ok = False
    return out if ok else MISSING


def _param(f: Fields, raw: dict[str, Any], path: Path, spec: ParamSpec) -> Any:
    default: Any = MISSING if spec.required else spec.default
    if spec.type == "int":
        value = f.integer(raw, path, spec.name, default=default,
                          minimum=None if spec.minimum is None else int(spec.minimum),
                          maximum=PARAM_MAXIMA.get(spec.name, MAX_PARAM_INT),
                          why="Toxiproxy's bound for this attribute (docs/design.md 'Input limits')")
    elif spec.type == "float":
        value = f.number(raw, path, spec.name, default=default)
        if value is not MISSING and value is not None and spec.minimum is not None and value < spec.minimum:
            f.error((*path, spec.name), f"must be >= {spec.minimum:g}", value)
            value = MISSING
        if spec.name == "toxicity" and value not in (MISSING, None) and value > 1:
            f.error((*path, spec.name), "toxicity is a probability between 0 and 1", value)
            value = MISSING
    elif spec.type == "bool":
        value = f.boolean(raw, path, spec.name, default=default)
    elif spec.type == "text" and default is None and spec.name not in raw:
        value = None  # an optional text without a default: absent
    else:  # choice, or free text
        value = f.string(raw, path, spec.name, default=default, choices=spec.choices if spec.type == "choice" else None)
    return value


__all__ = ["FAULT_KEYS", "LinkTarget", "read_schedule"]
