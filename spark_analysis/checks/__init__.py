"""The check registry: every check of the verdict, in report order, with its fixed id.

One package per family (`checks/<family>/`: controller, quorum, partition, delivery, consumer, group, txn,
operation, slo), holding that family's checks (`checks.py`, and more modules where a family outgrows one:
`partition/isr.py`, `slo/stall.py`, `txn/eos.py`), judges and frames; what several families read is
`checks/shared/`, below every family, and no family imports another. `ALL_CHECKS` holds one instance of
each `Check`, found in the family packages (`_discover`: a check is added by writing its class, nothing lists
it). Ids are fixed: verdict.json, report.html and junit.xml use them.
The quorum family applies to KRaft runs only (`spark_analysis.ingest.runinfo.MODE_FAMILIES`): a ZooKeeper
run does not select it, and the verdict lists it under `not_selected`.
"""

from __future__ import annotations

import importlib
import pkgutil

from spark_analysis.checks.shared.damage import Depends
from spark_analysis.result import Check

FAMILIES: tuple[str, ...] = ("controller", "quorum", "partition", "delivery", "consumer", "group", "txn",
                             "operation", "slo")
"""The check families in report order (each a package `checks/<family>/`)."""


def _is_check(obj: object, module: str) -> bool:
    """A class defined in `module` that declares a check: an `id` naming its family, `needs` and `run`."""
    return (isinstance(obj, type) and obj.__module__ == module and isinstance(getattr(obj, "id", None), str)
            and isinstance(getattr(obj, "family", None), str) and isinstance(getattr(obj, "needs", None), frozenset)
            and callable(getattr(obj, "run", None)))


def _discover() -> tuple[Check, ...]:
    """One instance of every check class: by family in `FAMILIES` order, then by module name, then in the order the
    module defines them. A check is added by writing its class in its family's package; nothing lists it."""
    found: list[Check] = []
    for family in FAMILIES:
        package = importlib.import_module(f"{__name__}.{family}")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            found += [obj() for obj in vars(module).values() if _is_check(obj, module.__name__)]
    return tuple(found)


ALL_CHECKS: tuple[Check, ...] = _discover()

CHECK_IDS: tuple[str, ...] = tuple(c.id for c in ALL_CHECKS)

BY_ID: dict[str, Check] = {c.id: c for c in ALL_CHECKS}

DAMAGE: dict[str, Depends] = {c.id: d for c in ALL_CHECKS if isinstance(d := getattr(c, "damage", None), Depends)}
"""The damaged-history rule's input per check that reads bulk events: its `damage` attribute
(`spark_analysis.checks.shared.damage`)."""


def select(entries: tuple[str, ...] | list[str], mode: str | None = None) -> list[Check]:
    """Checks named by `entries` ("all", ids, families or last parts), in registry order; with a
    cluster `mode` ("zookeeper", "kraft"), only those that apply to it."""
    from spark_analysis.ingest.runinfo import RunInfo

    info = RunInfo(checks=tuple(entries), mode=mode or "")
    return [c for c in ALL_CHECKS if info.is_named(c.id) and (mode is None or info.applies(c.id))]
