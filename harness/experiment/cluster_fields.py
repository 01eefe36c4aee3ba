"""Reads the `cluster:` section of an experiment into a `ClusterConfig`, with every rule the backends
apply when they start the cluster: broker and ZooKeeper counts, a Kafka with ZooKeeper mode, bug flags
only where the reference broker runs, and a `broker_config` that neither sets a property the harness
writes itself nor gives a value the brokers (or the harness) cannot read."""

from __future__ import annotations

from typing import Any

from harness.broker.config import build_config
from harness.cluster.process_flavour import zookeeper_mode_supported
from harness.errors import ConfigError
from harness.experiment.fields import MISSING, Fields
from harness.experiment.limits import (
    BROKER_INT_KEYS,
    MAX_BROKERS,
    RESERVED_BROKER_KEYS,
    ZOOKEEPER_SIZES,
)
from harness.experiment.schema import REFERENCE_BUGS, ClusterConfig, frozen_map
from harness.experiment.yamlsource import Path
from harness.install.kafka import BROKERS, DEFAULT_LINE, kafka_request

CLUSTER_KEYS = ("brokers", "zookeepers", "kafka", "broker", "broker_config", "images", "reference_bugs")
IMAGE_ROLES = ("zookeeper", "kafka", "toxiproxy")
_JAVA_INT_MAX = 2**31 - 1


def read_cluster(f: Fields, raw: object) -> ClusterConfig | None:
    path: Path = ("cluster",)
    m = f.mapping(path, raw, CLUSTER_KEYS, "cluster")
    if m is None:
        return None
    brokers = f.integer(m, path, "brokers", default=3, minimum=1, maximum=MAX_BROKERS,
                        why="every broker is a JVM and the link topology grows as brokers squared "
                            "(docs/design.md 'Input limits')")
    zookeepers = f.integer(m, path, "zookeepers", default=1, minimum=1)
    if zookeepers is not MISSING and zookeepers not in ZOOKEEPER_SIZES:
        f.error((*path, "zookeepers"), "a ZooKeeper ensemble here has 1, 3 or 5 members", zookeepers,
                "an ensemble needs an odd number of members, and the backends start at most 5")
        zookeepers = MISSING
    kafka = _kafka(f, m, path)
    broker = f.string(m, path, "broker", default="auto", choices=BROKERS)
    images = _images(f, m, path)
    bugs = f.strings(m, path, "reference_bugs", default=[], choices=REFERENCE_BUGS)
    if broker == "apache-kafka" and bugs not in (MISSING, ()):
        f.error((*path, "reference_bugs"), "reference_bugs only apply to the reference broker, but "
                "broker: apache-kafka is asked for", list(bugs), "drop one of them")
        bugs = MISSING
    config = broker_config(f, m, path)
    if MISSING in (brokers, zookeepers, kafka, broker, bugs, images):
        return None
    return ClusterConfig(brokers=brokers, zookeepers=zookeepers, kafka=kafka, broker=broker,
                         broker_config=frozen_map(config), images=frozen_map(images),  # type: ignore[arg-type]
                         reference_bugs=bugs)


def _kafka(f: Fields, m: dict[str, Any], path: Path) -> Any:
    kafka = f.string(m, path, "kafka", default=DEFAULT_LINE)
    if kafka is MISSING:
        return MISSING
    try:
        request = kafka_request(kafka)
    except ConfigError as exc:
        f.error((*path, "kafka"), str(exc), kafka, 'quote it in YAML ("3.9.2", "3.10"): 3.10 unquoted is 3.1')
        return MISSING
    if not zookeeper_mode_supported(request):
        f.error((*path, "kafka"), f"Apache Kafka {request} has no ZooKeeper mode (Kafka 4.0 removed it); the "
                "harness runs ZooKeeper-mode clusters", kafka, 'cluster.kafka: "3.9"')
        return MISSING
    return kafka


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
    if not _readable(config):  # one call in the common case; key by key to name the culprits
        for key in [k for k in config if not _readable({k: config[k]})]:
            try:
                build_config({key: config[key]})
            except ConfigError as exc:
                f.error((*cpath, key), f"the broker cannot read it: {exc}", config.pop(key))
    return config


def _readable(props: dict[str, str]) -> bool:
    """Whether the reference broker reads these properties (typed ones as int or bool) without an error."""
    try:
        build_config(props)
    except ConfigError:
        return False
    return True
