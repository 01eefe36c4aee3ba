"""Reads the `action:` entries of an experiment's `schedule:` list into `OperationSpec`s, checked against
the operation catalogue (`harness.faults.catalog.OPERATIONS`): the keys each action takes, partition
numbers, replica lists (distinct broker ids, at least one), `replicas` or `shuffle` for a reassignment, the
new partition count of `add_partitions`, the group and member count of `scale_consumers`, the broker order
of `rolling_restart`, `upgrade`, `finalize_upgrade` and `migrate_to_kraft`, the release an `upgrade` rolls onto,
the steps of `migrate_to_kraft`, the producer of `restart_producer`.
References to the experiment's topics and brokers are checked with the other cross-field rules
(`harness.experiment.rules`)."""

from __future__ import annotations

from typing import Any

from harness.experiment.fields import MISSING, Fields, did_you_mean
from harness.experiment.limits import MAX_MEMBERS, MAX_PARTITIONS
from harness.experiment.schema import MIGRATION_STEPS, ROLLING_ACTIONS, OperationSpec
from harness.experiment.yamlsource import Path
from harness.faults.catalog import OPERATIONS
from harness.model.releases import Release

_MAX_BROKER_ID = 1000


def read_operation(f: Fields, path: Path, index: int, item: dict[str, Any]) -> OperationSpec | None:
    """The operation at `path` (a mapping with an `action` key), or None after recording its problems."""
    name = item.get("action")
    kind = OPERATIONS.get(name) if isinstance(name, str) else None
    if kind is None:
        f.error((*path, "action"), "unknown action", name,
                (did_you_mean(name, OPERATIONS) + "; " if isinstance(name, str) else "")
                + "`kafka-chaos actions` lists them")
        return None
    m = f.mapping(path, item, ("at", "action", *(k.name for k in kind.keys)), f"a scheduled {kind.name!r}")
    if m is None:
        return None
    at = f.duration(m, path, "at", positive=False)
    topic_key = next((k for k in kind.keys if k.name == "topic"), None)
    topic = (f.string(m, path, "topic")
             if topic_key is not None and (topic_key.required or m.get("topic") is not None) else None)
    partitions = _partitions(f, m, path)
    timeout = f.duration(m, path, "timeout", default=kind.default_timeout)
    replicas: Any = ()
    shuffle: Any = False
    count: Any = None
    if kind.name == "reassign":
        replicas, shuffle = _reassignment(f, m, path)
    elif kind.name == "add_partitions":
        count = f.integer(m, path, "count", minimum=2, maximum=MAX_PARTITIONS,
                          why="the observers poll, and the verifiers judge, every partition")
    group: Any = None
    members: Any = None
    abrupt: Any = False
    producer: Any = None
    zombie: Any = False
    if kind.name == "scale_consumers":
        group = f.string(m, path, "group")
        members = f.integer(m, path, "members", minimum=0, maximum=MAX_MEMBERS)  # 0: the application is stopped
    if kind.name in ("scale_consumers", "restart_producer"):
        abrupt = f.boolean(m, path, "abrupt", default=False)
    if kind.name == "restart_producer":
        producer = f.string(m, path, "producer")
        zombie = f.boolean(m, path, "zombie", default=False)
        if zombie is True and abrupt is True:
            f.error((*path, "zombie"), "a zombie keeps the old client alive; abrupt purges it: choose one", zombie)
            zombie = MISSING
    brokers: Any = _brokers(f, m, path) if kind.name in (*ROLLING_ACTIONS, "migrate_to_kraft") else ()
    steps: Any = _steps(f, m, path) if kind.name == "migrate_to_kraft" else ()
    to: Any = _release(f, m, path) if kind.name == "upgrade" else None
    if MISSING in (at, topic, partitions, timeout, replicas, shuffle, count, group, members, abrupt, brokers,
                   producer, zombie, to, steps):
        return None
    if replicas and partitions and sorted(p for p, _ in replicas) != sorted(partitions):
        f.error((*path, "partitions"), "with `replicas`, the partitions are its keys: leave `partitions` out",
                list(partitions))
        return None
    return OperationSpec(index=index, at=at, action=kind.name, topic=topic, partitions=partitions,
                         replicas=replicas, shuffle=shuffle, timeout=timeout, count=count, group=group,
                         members=members, abrupt=abrupt, brokers=brokers, producer=producer, zombie=zombie, to=to,
                         steps=steps)


def _release(f: Fields, m: dict[str, Any], path: Path) -> Any:
    """upgrade's `to`: an exact Apache Kafka release (a line would resolve to whichever release is newest then)."""
    raw = m.get("to")
    if not isinstance(raw, str) or Release.parse(raw) is None or raw.strip().count(".") != 2:
        f.error((*path, "to"), "to must be an Apache Kafka release, major.minor.patch, as a string", raw,
                'e.g. to: "3.9.2"')
        return MISSING
    return raw.strip()


def _steps(f: Fields, m: dict[str, Any], path: Path) -> Any:
    """migrate_to_kraft's `steps`: a prefix of Kafka's order (a step needs the ones before it)."""
    raw = m.get("steps")
    if raw is None:
        return ()
    if (not isinstance(raw, list) or not raw or not all(isinstance(s, str) for s in raw)
            or tuple(raw) != MIGRATION_STEPS[:len(raw)]):
        f.error((*path, "steps"), "steps must be a prefix of the migration's order, " + ", ".join(MIGRATION_STEPS)
                + ": each step needs the ones before it", raw, "e.g. steps: [controllers, brokers, copy] (stays "
                "in dual-write)")
        return MISSING
    return tuple(raw)


def _brokers(f: Fields, m: dict[str, Any], path: Path) -> Any:
    raw = m.get("brokers")
    if raw is None:
        return ()
    if not _is_broker_list(raw):
        f.error((*path, "brokers"), "brokers must be a non-empty list of distinct broker ids, in restart order",
                raw, "e.g. brokers: [3, 1, 2]")
        return MISSING
    return tuple(raw)


def _partitions(f: Fields, m: dict[str, Any], path: Path) -> Any:
    raw = m.get("partitions")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(_is_partition(p) for p in raw) or len(set(raw)) != len(raw):
        f.error((*path, "partitions"), f"partitions must be a non-empty list of distinct partition numbers "
                f"(0..{MAX_PARTITIONS - 1})", raw, "e.g. partitions: [0, 2]")
        return MISSING
    return tuple(sorted(raw))


def _is_broker_list(raw: object) -> bool:
    """A non-empty list of distinct broker ids (a reassignment's replicas, a rolling restart's order)."""
    return (isinstance(raw, list) and bool(raw) and len(set(raw)) == len(raw)
            and all(isinstance(b, int) and not isinstance(b, bool) and 0 < b <= _MAX_BROKER_ID for b in raw))


def _is_partition(p: object) -> bool:
    return isinstance(p, int) and not isinstance(p, bool) and 0 <= p < MAX_PARTITIONS


def _reassignment(f: Fields, m: dict[str, Any], path: Path) -> tuple[Any, Any]:
    shuffle = f.boolean(m, path, "shuffle", default=False)
    raw = m.get("replicas")
    if shuffle is MISSING:
        return MISSING, MISSING
    if (raw is None) == (not shuffle):
        f.error((*path, "replicas"), "a reassignment takes either `replicas` (the new list per partition) or "
                "`shuffle: true`" + (", not both" if shuffle else ""), raw,
                "e.g. replicas: {0: [2, 3, 1]}, or shuffle: true")
        return MISSING, MISSING
    if raw is None:
        return (), True
    if not isinstance(raw, dict) or not raw:
        f.error((*path, "replicas"), "replicas must map partition numbers to broker lists", raw,
                "e.g. replicas: {0: [2, 3, 1], 1: [3, 1, 2]}")
        return MISSING, MISSING
    out: list[tuple[int, tuple[int, ...]]] = []
    for key, brokers in raw.items():
        part = int(key) if isinstance(key, str) and key.isdigit() else key
        where = (*path, "replicas", key)
        if not _is_partition(part):
            f.error(where, f"a partition number (0..{MAX_PARTITIONS - 1})", key)
            return MISSING, MISSING
        if not _is_broker_list(brokers):
            f.error(where, "a non-empty list of distinct broker ids", brokers, "e.g. [2, 3, 1]")
            return MISSING, MISSING
        out.append((part, tuple(brokers)))
    return tuple(sorted(out)), False
