"""`expect:` — the checks an experiment is known to fail, per matrix variant (a known bug, a weak setting).

    expect:
      "cluster.kafka=3.6.1": {fail: [quorum.leader_resigns], why: "KAFKA-15489, fixed in 3.7.0"}
      "kafka=3.7.0,acks=1": {fail: [delivery.lost_write]}
      "*": {fail: [slo.rebalance]}          # every variant
    expect: {fail: [delivery.lost_write]}   # shorthand for "*", e.g. a file without a matrix

A selector is `*` or comma-separated `axis=value` pairs; an axis is named by its matrix key (`cluster.kafka`) or
its label in variant ids (`kafka`), and the value must be one the axis takes. A variant expects the union of
the `fail` lists of every selector it matches. A check is named by its id or the id's last part. The verdict
turns an expected failure that happens into a pass reported as expected, and one that does not happen into a
failure (`spark_analysis.verdict`); pytest makes it a strict xfail. This module reads the block; it is pure.
"""

from __future__ import annotations

from typing import Any

from harness.experiment.fields import MISSING, Fields, did_you_mean
from harness.experiment.matrix import Variant
from harness.experiment.schema import CHECK_IDS, ExpectSpec
from harness.experiment.yamlsource import Path

ENTRY_KEYS = ("fail", "why")
EVERY = "*"


def read_expect(f: Fields, raw: object, variant: Variant | None) -> ExpectSpec | None:
    """The expectation of `variant` (None: the file has no matrix); None when the block is invalid."""
    path: Path = ("expect",)
    if raw is None:
        return ExpectSpec()
    if not isinstance(raw, dict):
        f.error(path, "expect must be a mapping of variant selector -> {fail: [check ids], why: text}", raw)
        return None
    entries = {EVERY: raw} if set(raw) <= set(ENTRY_KEYS) and raw else raw
    fails: list[str] = []
    whys: list[str] = []
    ok = True
    for selector, entry in entries.items():
        where: Path = path if entries is not raw else (*path, selector)
        matched = _matches(f, where, str(selector), variant)
        read = _entry(f, where, entry)
        if matched is None or read is None:
            ok = False
            continue
        if matched:
            fails += [c for c in read[0] if c not in fails]
            if read[1]:
                whys.append(read[1])
    return ExpectSpec(fail=tuple(fails), why="; ".join(whys)) if ok else None


def _entry(f: Fields, where: Path, entry: object) -> tuple[tuple[str, ...], str] | None:
    m = f.mapping(where, entry, ENTRY_KEYS, "an expectation")
    if m is None:
        return None
    short = {c.split(".", 1)[1]: c for c in CHECK_IDS}
    names = f.strings(m, where, "fail", choices=(*CHECK_IDS, *short))
    why = f.string(m, where, "why", default="")
    if names is MISSING or why is MISSING:
        return None
    if not names:
        f.error((*where, "fail"), "name at least one check that is expected to fail", [])
        return None
    return tuple(short.get(n, n) for n in names), why


def _matches(f: Fields, where: Path, selector: str, variant: Variant | None) -> bool | None:
    """Whether `selector` selects `variant`; None (a problem recorded) when it names no axis or value."""
    if selector.strip() == EVERY:
        return True
    if variant is None:
        f.error(where, "a variant selector needs a matrix: this file has none", selector,
                f"use {EVERY!r}, or write expect: {{fail: [...]}}")
        return None
    result = True
    for part in selector.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        axis = next(((a, i) for a, i in variant.choices if key in (a.key, a.label)), None)
        if not eq or axis is None:
            names = [n for a, _ in variant.choices for n in dict.fromkeys((a.key, a.label))]
            f.error(where, "a selector is * or axis=value[,axis=value]; no matrix axis is named "
                    f"{key!r}", selector, did_you_mean(key, names))
            return None
        a, chosen = axis
        labels = [_text(v) for v in a.values]
        if value not in labels:
            f.error(where, f"the matrix gives {a.key} the values {', '.join(labels)}, not {value!r}", selector)
            return None
        result = result and labels[chosen] == value
    return result


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
