"""Reads a cluster's shape into the one `ClusterSpec` (`harness.cluster.base`), from an experiment's `cluster:`
section or from the keywords of a test module's `chaos_cluster(**spec)` marker, with the same rules for both:
broker, ZooKeeper and controller counts, the mode the Kafka version has (ZooKeeper mode up to 3.x, KRaft from
3.3 and only KRaft from 4.0), and a `broker_config` that neither sets a property the harness writes itself
nor gives a value the brokers (or the harness) cannot read. `broker: reference` and `reference_bugs:` name the
retired reference broker: each is refused saying what to write instead. Every problem names the file, line,
field path (for the marker: the test module and the keyword) and the bad value."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import Any

from harness.cluster.base import ClusterSpec, SecuritySpec
from harness.cluster.client_security import MECHANISMS
from harness.cluster.process_flavour import zookeeper_mode_supported
from harness.errors import ConfigError, ValidationError
from harness.experiment.fields import MISSING, Fields
from harness.experiment.limits import (
    BROKER_INT_KEYS,
    BROKER_TYPED_KEYS,
    MAX_BROKERS,
    RESERVED_BROKER_KEYS,
    ZOOKEEPER_SIZES,
)
from harness.experiment.schema import frozen_map
from harness.experiment.yamlsource import Located, Path
from harness.install.kafka import BROKERS, DEFAULT_KRAFT_LINE, RETIRED_BROKER, kafka_request
from harness.model.releases import feature_problem

SPEC_FIELDS = {"brokers": "brokers", "zookeepers": "zookeepers", "kafka": "kafka_version", "mode": "mode",
               "controllers": "controllers", "combined": "combined", "broker": "broker",
               "broker_config": "broker_config", "images": "images", "features": "features",
               "log_dirs": "log_dirs", "log_dir_mb": "log_dir_mb", "security": "security"}
"""`cluster:` key (and marker keyword) -> the `ClusterSpec` field it sets."""
RETIRED_KEYS = ("reference_bugs",)
"""`cluster:` keys of the retired reference broker: refused with `RETIRED_BROKER`, not as unknown keys."""
CLUSTER_KEYS = (*SPEC_FIELDS, *RETIRED_KEYS)
DEFAULTS = ClusterSpec()
"""A key left out takes the spec's default (in KRaft mode: no ZooKeeper, `KRAFT_CONTROLLERS` voters and Kafka
`DEFAULT_KRAFT_LINE`)."""
MODES = ("zookeeper", "kraft")
CONTROLLER_SIZES = (1, 3, 5)
"""KRaft quorum sizes: odd, so a majority survives the loss of (n-1)/2 voters (KIP-595)."""
KRAFT_CONTROLLERS = 3
IMAGE_ROLES = ("zookeeper", "kafka", "toxiproxy")
MARKER = "chaos_cluster"
_JAVA_INT_MAX = 2**31 - 1
MIN_LOG_DIR_MB = 32
MAX_LOG_DIRS = 4
MAX_LOG_DIR_MB = 4096
_FEATURE_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def read_cluster(f: Fields, raw: object, path: Path = ("cluster",), what: str = "cluster") -> ClusterSpec | None:
    """`raw` (the `cluster:` mapping at `path`) as a spec; None, with the problems in `f`, when it is invalid."""
    m = f.mapping(path, raw, CLUSTER_KEYS, what)
    if m is None:
        return None
    brokers = f.integer(m, path, "brokers", default=DEFAULTS.brokers, minimum=1, maximum=MAX_BROKERS,
                        why="every broker is a JVM and the link topology grows as brokers squared "
                            "(docs/design.md 'Input limits')")
    mode = f.string(m, path, "mode", default="", choices=("", *MODES))
    kafka = _kafka(f, m, path, mode)
    if mode == "" and kafka is not MISSING:  # implied: `zookeepers:` or a 3.x Kafka mean ZooKeeper mode
        mode = "zookeeper" if "zookeepers" in m or zookeeper_mode_supported(kafka_request(kafka)) else "kraft"
        if mode == "zookeeper" and not zookeeper_mode_supported(kafka_request(kafka)):
            f.error((*path, "kafka"), f"Apache Kafka {kafka_request(kafka)} has no ZooKeeper mode (Kafka 4.0 "
                    "removed it, KIP-833), and this cluster has zookeepers:", kafka,
                    "mode: kraft without zookeepers, or cluster.kafka: \"3.9\"")
            kafka = MISSING
    zookeepers = _zookeepers(f, m, path, mode)
    controllers, combined = _quorum(f, m, path, mode, brokers)
    broker = _broker(f, m, path)
    images = _images(f, m, path)
    if "reference_bugs" in m:
        f.error((*path, "reference_bugs"), RETIRED_BROKER, m["reference_bugs"], "remove reference_bugs")
    config = broker_config(f, m, path)
    features = _features(f, m, path, mode, kafka)
    log_dirs = f.integer(m, path, "log_dirs", default=DEFAULTS.log_dirs, minimum=1, maximum=MAX_LOG_DIRS,
                         why="each log directory of each node is a directory (a tmpfs with log_dir_mb) of its own")
    log_dir_mb = f.integer(m, path, "log_dir_mb", default=DEFAULTS.log_dir_mb, minimum=0, maximum=MAX_LOG_DIR_MB,
                           why="each log directory is a tmpfs, held in memory")
    if isinstance(log_dir_mb, int) and 0 < log_dir_mb < MIN_LOG_DIR_MB:
        f.error((*path, "log_dir_mb"), f"a log directory needs room for its first segments and indexes: at least "
                f"{MIN_LOG_DIR_MB} MB", log_dir_mb, f"log_dir_mb: {MIN_LOG_DIR_MB} or more, or 0 (no tmpfs)")
        log_dir_mb = MISSING
    values = {"brokers": brokers, "zookeepers": zookeepers, "kafka": kafka, "mode": mode, "controllers": controllers,
              "combined": combined, "broker": broker, "broker_config": frozen_map(config),
              "images": frozen_map(images) if images is not MISSING else MISSING,
              "features": frozen_map(features) if features is not MISSING else MISSING, "log_dirs": log_dirs,
              "log_dir_mb": log_dir_mb, "security": _security(f, m, path, mode, kafka)}
    if any(v is MISSING for v in values.values()):
        return None
    return ClusterSpec(**{SPEC_FIELDS[key]: value for key, value in values.items()})


def read_marker(keywords: Mapping[str, object], module: FilePath) -> ClusterSpec:
    """The spec of test module `module`'s `chaos_cluster(**keywords)` marker: the keywords are the `cluster:`
    keys, read by `read_cluster`; a problem names the module (at the marker's line) and the keyword."""
    doc = Located(file=f"{module} ({MARKER} marker)", value=dict(keywords))
    where = _marker_line(module)
    if where is not None:
        doc.locations[()] = where
    f = Fields(doc)
    spec = read_cluster(f, dict(keywords), (), f"{MARKER} marker")
    if f.problems or spec is None:
        raise ValidationError(f.problems)
    return spec


def _marker_line(module: FilePath) -> tuple[int, int] | None:
    """Line and column of the first `chaos_cluster(` in the module's source (the marker), if it can be read."""
    try:
        lines = module.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return next(((i, text.index(MARKER) + 1) for i, text in enumerate(lines, 1) if f"{MARKER}(" in text), None)


def cluster_to_dict(spec: ClusterSpec) -> dict[str, Any]:
    """`spec` as the `cluster:` section that reads back into it (the keys a KRaft or a ZooKeeper cluster has)."""
    out: dict[str, Any] = {}
    for key, name in SPEC_FIELDS.items():
        if key in (("zookeepers",) if spec.kraft else ("combined", "features")):
            continue
        if key == "controllers" and not spec.kraft and not spec.migrating:
            continue
        value = getattr(spec, name)
        if value == getattr(DEFAULTS, name) and key in ("log_dirs", "log_dir_mb", "security"):
            continue
        if isinstance(value, SecuritySpec):
            out[key] = dataclasses.asdict(value)
            continue
        out[key] = dict(value) if isinstance(value, Mapping) else list(value) if isinstance(value, tuple) else value
    return out


def _broker(f: Fields, m: dict[str, Any], path: Path) -> Any:
    """`broker`: `auto` or `apache-kafka`; `reference` (the retired reference broker) says what to write."""
    if m.get("broker") == "reference":
        f.error((*path, "broker"), RETIRED_BROKER, "reference", "broker: apache-kafka (or auto)")
        return MISSING
    return f.string(m, path, "broker", default=DEFAULTS.broker, choices=BROKERS)


def _kafka(f: Fields, m: dict[str, Any], path: Path, mode: Any) -> Any:
    kafka = f.string(m, path, "kafka", default=DEFAULT_KRAFT_LINE if mode == "kraft" else DEFAULTS.kafka_version)
    if kafka is MISSING or mode is MISSING:
        return MISSING
    try:
        request = kafka_request(kafka)
    except ConfigError as exc:
        f.error((*path, "kafka"), str(exc), kafka, 'quote it in YAML ("3.9.2", "3.10"): 3.10 unquoted is 3.1')
        return MISSING
    feature, hint = {"zookeeper": ("zookeeper_mode", 'mode: kraft, or cluster.kafka: "3.9"'),
                     "kraft": ("kraft", 'cluster.kafka: "4" (the newest 4.x) or "3.9"')}.get(mode, ("", ""))
    problem = feature_problem(request, feature) if feature else None  # no mode given: implied by the release
    if problem:
        f.error((*path, "kafka"), problem, kafka, hint)
        return MISSING
    return kafka


def _zookeepers(f: Fields, m: dict[str, Any], path: Path, mode: Any) -> Any:
    if mode == "kraft":
        if "zookeepers" in m:
            f.error((*path, "zookeepers"), "a KRaft cluster has no ZooKeeper", m["zookeepers"],
                    "remove it, or say mode: zookeeper (Kafka 3.x)")
            return MISSING
        return 0
    zookeepers = f.integer(m, path, "zookeepers", default=DEFAULTS.zookeepers, minimum=1)
    if zookeepers is not MISSING and zookeepers not in ZOOKEEPER_SIZES:
        f.error((*path, "zookeepers"), "a ZooKeeper ensemble here has 1, 3 or 5 members", zookeepers,
                "an ensemble needs an odd number of members, and the backends start at most 5")
        return MISSING
    return zookeepers


def _quorum(f: Fields, m: dict[str, Any], path: Path, mode: Any, brokers: Any) -> tuple[Any, Any]:
    """`controllers` and `combined`: KRaft's; combined voters are brokers 1..controllers. In ZooKeeper mode,
    `controllers` is the dedicated KRaft quorum a `migrate_to_kraft` starts (`migration_rules`)."""
    migration = mode == "zookeeper" and "controllers" in m and "combined" not in m
    if mode != "kraft" and not migration:
        for key in ("controllers", "combined"):
            if key in m and mode is not MISSING:
                f.error((*path, key), f"{key} is a KRaft setting, and this cluster runs ZooKeeper mode", m[key],
                        "mode: kraft (Kafka 4.x, or 3.3+), or remove it")
                return MISSING, MISSING
        return DEFAULTS.controllers, DEFAULTS.combined
    controllers = f.integer(m, path, "controllers", default=KRAFT_CONTROLLERS, minimum=1)
    combined = False if migration else f.boolean(m, path, "combined", default=DEFAULTS.combined)
    if controllers is not MISSING and controllers not in CONTROLLER_SIZES:
        f.error((*path, "controllers"), "a KRaft quorum here has 1, 3 or 5 voters", controllers,
                "an odd number keeps a majority through (n-1)/2 losses (KIP-595)")
        return MISSING, combined
    if combined is True and controllers is not MISSING and brokers is not MISSING and controllers > brokers:
        f.error((*path, "controllers"), f"combined: true makes brokers 1..{controllers} the voters, but there "
                f"are {brokers} brokers", controllers, "more brokers, fewer controllers, or combined: false")
        return MISSING, combined
    return controllers, combined


def _features(f: Fields, m: dict[str, Any], path: Path, mode: Any, kafka: Any) -> Any:
    """`features:` (KRaft): feature name -> level, written by `kafka-storage format --feature` (Kafka 3.8+)."""
    raw = m.get("features")
    fpath: Path = (*path, "features")
    if raw is None or raw == {}:
        return {}
    if not isinstance(raw, dict):
        f.error(fpath, "features must be a mapping of feature name -> level", raw,
                "e.g. features: {eligible.leader.replicas.version: 1}")
        return MISSING
    if mode != "kraft":
        f.error(fpath, "features are KRaft feature levels (kafka-storage format --feature)", raw,
                "mode: kraft, or remove features")
        return MISSING
    problem = feature_problem(kafka_request(kafka), "format_features") if kafka is not MISSING else None
    if problem:
        f.error(fpath, problem, raw, 'cluster.kafka: "3.8" or newer')
        return MISSING
    out: dict[str, int] = {}
    for name, level in raw.items():
        if not (isinstance(name, str) and _FEATURE_NAME.match(name)):
            f.error((*fpath, str(name)), "a feature name is lowercase words joined by dots", name,
                    "e.g. eligible.leader.replicas.version")
        elif isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 32767:
            f.error((*fpath, name), "a feature level is an integer from 0 to 32767 (a short)", level)
        else:
            out[name] = level
    return out if len(out) == len(raw) else MISSING


def _security(f: Fields, m: dict[str, Any], path: Path, mode: Any, kafka: Any) -> Any:
    """`security:` {tls, sasl, authorizer} (`harness.cluster.security`)."""
    spath: Path = (*path, "security")
    s = f.mapping(spath, m.get("security"), ("tls", "sasl", "authorizer"), "security")
    if s is None:
        return MISSING
    tls = f.boolean(s, spath, "tls", default=False)
    sasl = s.get("sasl")
    if sasl is not None and sasl not in MECHANISMS:
        f.error((*spath, "sasl"), f"sasl is one of {', '.join(MECHANISMS)} (or left out: no SASL)", sasl,
                "sasl: scram-sha-512")
        sasl = MISSING
    authorizer = f.boolean(s, spath, "authorizer", default=False)
    if authorizer is True and sasl is None:
        f.error((*spath, "authorizer"), "ACLs need principals to tell apart: the authorizer needs SASL users "
                "(`admin` for the harness, `client` for the workloads)", authorizer, "sasl: scram-sha-512")
        authorizer = MISSING
    if sasl == "scram-sha-512" and mode == "kraft" and kafka is not MISSING:
        problem = feature_problem(kafka_request(kafka), "kraft_scram")
        if problem:
            f.error((*spath, "sasl"), problem, sasl, 'cluster.kafka: "3.5" or newer, or sasl: plain')
            sasl = MISSING
    if MISSING in (tls, sasl, authorizer):
        return MISSING
    return SecuritySpec(tls=tls, sasl=sasl, authorizer=authorizer)


def _images(f: Fields, m: dict[str, Any], path: Path) -> Any:
    ipath: Path = (*path, "images")
    raw = f.mapping(ipath, m.get("images"), IMAGE_ROLES, "images")
    if raw is None:
        return MISSING
    out: dict[str, str] = {}
    for role in IMAGE_ROLES:
        if role in raw:
            value = f.string(raw, ipath, role)
            if value is MISSING:
                return MISSING
            out[role] = value
    return out


def broker_config(f: Fields, m: dict[str, Any], path: Path) -> dict[str, str]:
    """`cluster.broker_config`, every property checked as the backends and the brokers will read it."""
    config = f.properties(m, path, "broker_config", lines=True)
    cpath: Path = (*path, "broker_config")
    for key in list(config):
        value = config[key]
        reason = RESERVED_BROKER_KEYS.get(key)
        if reason is not None:
            f.error((*cpath, key), f"{key} is reserved: the harness sets it itself, to {reason}", value,
                    "remove it from broker_config")
            del config[key]
        elif key in BROKER_INT_KEYS:
            text = value.strip()
            lowest = BROKER_INT_KEYS[key]
            if not (text.isascii() and text.isdigit() and lowest <= int(text) <= _JAVA_INT_MAX):
                f.error((*cpath, key), f"must be an integer from {lowest} to {_JAVA_INT_MAX}", value)
                del config[key]
    for key in [k for k in config if k in BROKER_TYPED_KEYS and k not in BROKER_INT_KEYS]:
        kind = BROKER_TYPED_KEYS[key]
        if not _reads_as(kind, config[key]):
            f.error((*cpath, key), f"the broker cannot read it: {key}={config[key]!r} is not a valid {kind}",
                    config.pop(key), "true or false" if kind == "bool" else "a whole number, e.g. 2")
    return config


def _reads_as(kind: str, value: str) -> bool:
    """Whether Apache Kafka parses `value` as `kind` (ConfigDef: the trimmed text; a boolean in any case)."""
    text = value.strip()
    if kind == "bool":
        return text.lower() in ("true", "false")
    return _INTEGER.fullmatch(text) is not None
