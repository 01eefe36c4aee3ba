"""`explore:` — how `kafka-chaos explore` narrows the fault space it draws from for this file. `run` ignores it.

    explore:
      faults: [kill, partition, isolate_zookeeper]  # kinds to draw (default: every one the cluster's mode has)
      per_schedule: [1, 3]                          # how many faults a schedule holds, fewest and most
      durations: [4s, 16s]                          # each fault's duration, shortest and longest
      window: [3s, 30s]                             # when faults start, seconds into the chaos phase
      overlap: 0.5                                  # the chance a fault starts inside the one before it
      targets: [one, leaders, majority]             # Jepsen's target choices to draw among (default: all)
      rates: {kill: 2}                              # how often a kind is drawn, relative to the others (1)
      concurrent: 2                                 # the most faults in effect at once (default: no limit)

The kinds and target choices are `harness.faults.generator`'s (`kafka-chaos explore --faults` overrides the kinds).
This module reads the block into an `ExploreSpec`; it is pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.experiment.fields import MISSING, Fields, did_you_mean
from harness.experiment.limits import MAX_FAULTS
from harness.experiment.schema import ExploreSpec
from harness.experiment.yamlsource import Path

KEYS = ("faults", "per_schedule", "durations", "window", "overlap", "targets", "rates", "concurrent")
DEFAULT = ExploreSpec()


def read_explore(f: Fields, raw: object, mode: str) -> ExploreSpec | None:
    """The block for a cluster in `mode` (`zookeeper` or `kraft`); None when it is invalid."""
    path: Path = ("explore",)
    m = f.mapping(path, raw, KEYS, "the explore block")
    if m is None:
        return None
    from harness.faults.generator import (  # here: the generator reads durations from this package
        KRAFT_KINDS,
        TARGETS,
        ZK_KINDS,
        uncovered,
    )

    allowed = KRAFT_KINDS if mode == "kraft" else ZK_KINDS
    kinds = _choices(f, m, path, "faults", allowed, f"not a fault kind explore draws in {mode} mode")
    count = _pair(f, m, path, "per_schedule", DEFAULT.per_schedule, lambda e, k: f.integer(
        e, (*path, "per_schedule"), k, minimum=1, maximum=MAX_FAULTS, why="the loader's limit on a schedule"))
    durations = _pair(f, m, path, "durations", DEFAULT.durations, lambda e, k: f.duration(e, (*path, "durations"), k))
    window = _pair(f, m, path, "window", DEFAULT.window,
                   lambda e, k: f.duration(e, (*path, "window"), k, positive=False))
    overlap = f.number(m, path, "overlap", DEFAULT.overlap, minimum=0.0, maximum=1.0, why="it is a probability")
    targets = _choices(f, m, path, "targets", TARGETS, "not a target choice")
    drawn = tuple(kinds) if kinds is not MISSING and kinds else allowed
    if targets is not MISSING and targets and (bare := uncovered(drawn, targets)):
        f.error((*path, "targets"), f"leaves {', '.join(bare)} nothing to aim at: add one of their choices or "
                "narrow explore.faults", targets)
        targets = MISSING
    rates = _rates(f, m, path, drawn, tuple(dict.fromkeys((*ZK_KINDS, *KRAFT_KINDS))))
    concurrent = f.integer(m, path, "concurrent", None, minimum=1, maximum=MAX_FAULTS,
                           why="the loader's limit on a schedule") if m.get("concurrent") is not None else None
    if MISSING in (kinds, count, durations, window, overlap, targets, rates, concurrent):
        return None
    return ExploreSpec(faults=tuple(kinds), per_schedule=count, durations=durations, window=window, overlap=overlap,
                       targets=tuple(targets), rates=rates, concurrent=concurrent)


def _choices(f: Fields, m: dict[str, Any], path: Path, key: str, allowed: tuple[str, ...], what: str) -> Any:
    """A list of names from `allowed` (empty when absent)."""
    if m.get(key) is None:
        return ()
    names = f.strings(m, path, key)
    for i, name in enumerate(names if names is not MISSING else ()):
        if name not in allowed:
            f.error((*path, key, i), what, name, did_you_mean(name, allowed))
            names = MISSING
    return names


def _rates(f: Fields, m: dict[str, Any], path: Path, drawn: tuple[str, ...], every: tuple[str, ...]) -> Any:
    """`rates: {kind: weight}` over the kinds drawn, as (kind, weight) pairs; a weight is a number, 0 or more. A key
    is read against `every` kind of either mode (so the JSON schema names them all), then refused unless drawn."""
    if m.get("rates") is None:
        return ()
    rates = f.mapping((*path, "rates"), m["rates"], every, "explore.rates (the kinds drawn)")
    if rates is None:
        return MISSING
    for k in rates:
        if k in every and k not in drawn:
            f.error((*path, "rates", k), "not a kind this file's explore draws", k, f"draws: {', '.join(drawn)}")
    weights = {k: f.number(rates, (*path, "rates"), k, minimum=0.0) for k in rates if k in drawn}
    if MISSING in weights.values() or len(weights) < len(rates):
        return MISSING
    if not any(weights.get(k, 1.0) > 0 for k in drawn):
        f.error((*path, "rates"), "leaves every kind drawn at 0", m["rates"])
        return MISSING
    return tuple(weights.items())


def _pair(f: Fields, m: dict[str, Any], path: Path, key: str, default: Any,
          read: Callable[[Any, Any], Any]) -> Any:
    """`[low, high]`, each element read by `read(elements, index)` (so its errors name the element), low <= high."""
    if m.get(key) is None:
        return default
    raw = m[key]
    if not isinstance(raw, list) or len(raw) != 2:
        f.error((*path, key), "must be a list of two: [lowest, highest]", raw)
        return MISSING
    elements = dict(enumerate(raw))  # read as a mapping by index: an element's problem names its path and line
    low, high = read(elements, 0), read(elements, 1)
    if MISSING in (low, high):
        return MISSING
    if low > high:
        f.error((*path, key), "the first value must not be above the second", raw)
        return MISSING
    return (low, high)
