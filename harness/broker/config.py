"""server.properties for the reference broker: Kafka's own property names in a frozen `BrokerConfig`.

Owns reading Java-properties text (comments, `=`/`:`/space separators, line continuations,
backslash escapes), `--override key=value` pairs, parsing listeners, and sorting properties into
those this broker honours and those it accepts but ignores (listed once at start-up). The key
`reference.bugs` (comma-separated bug flags, see `harness.broker.bugs`) parses to a frozenset;
`reference.controller.resend.ms` (this broker's own, default 0 = off) makes the controller re-send
its current metadata to every live broker at that period.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import ConfigError

MAX_LONG = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Listener:
    """One `NAME://host:port` entry of `listeners` or `advertised.listeners`."""

    name: str
    host: str
    port: int

    def render(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


# Kafka property -> (BrokerConfig field, kind, Kafka's default as text or None).
_SIMPLE: dict[str, tuple[str, str, str | None]] = {
    "broker.id": ("broker_id", "int", "0"),
    "zookeeper.connect": ("zookeeper_connect", "str", ""),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", "int", "18000"),
    "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", "int", "18000"),
    "num.partitions": ("num_partitions", "int", "1"),
    "default.replication.factor": ("default_replication_factor", "int", "1"),
    "min.insync.replicas": ("min_insync_replicas", "int", "1"),
    "auto.create.topics.enable": ("auto_create_topics_enable", "bool", "true"),
    "delete.topic.enable": ("delete_topic_enable", "bool", "true"),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", "int", "50"),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", "int", "3"),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes", "int", "104857600"),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", "int", "3000"),
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", "int", "6000"),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", "int", "1800000"),
    "log.segment.bytes": ("log_segment_bytes", "int", "1073741824"),
    "log.index.interval.bytes": ("log_index_interval_bytes", "int", "4096"),
    "log.flush.interval.messages": ("log_flush_interval_messages", "int", str(MAX_LONG)),
    "log.flush.interval.ms": ("log_flush_interval_ms", "int", "-1"),
    "message.max.bytes": ("message_max_bytes", "int", "1048588"),
    "socket.request.max.bytes": ("socket_request_max_bytes", "int", "104857600"),
    "inter.broker.listener.name": ("inter_broker_listener_name", "str", ""),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", "int", "30000"),
    "replica.fetch.wait.max.ms": ("replica_fetch_wait_max_ms", "int", "500"),
    "replica.fetch.max.bytes": ("replica_fetch_max_bytes", "int", "1048576"),
    "replica.high.watermark.checkpoint.interval.ms": ("replica_high_watermark_checkpoint_interval_ms", "int",
                                                      "5000"),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", "bool", "false"),
    "auto.leader.rebalance.enable": ("auto_leader_rebalance_enable", "bool", "true"),
    "leader.imbalance.check.interval.seconds": ("leader_imbalance_check_interval_seconds", "int", "300"),
    "leader.imbalance.per.broker.percentage": ("leader_imbalance_per_broker_percentage", "int", "10"),
    "controlled.shutdown.enable": ("controlled_shutdown_enable", "bool", "true"),
    "controlled.shutdown.max.retries": ("controlled_shutdown_max_retries", "int", "3"),
    "controlled.shutdown.retry.backoff.ms": ("controlled_shutdown_retry_backoff_ms", "int", "5000"),
    "controller.socket.timeout.ms": ("controller_socket_timeout_ms", "int", "30000"),
    "offsets.commit.timeout.ms": ("offsets_commit_timeout_ms", "int", "5000"),
    "reference.controller.resend.ms": ("reference_controller_resend_ms", "int", "0"),
}
_STRUCTURED = {"listeners", "advertised.listeners", "listener.security.protocol.map", "log.dirs", "log.dir",
               "reference.bugs"}


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Everything the reference broker reads from server.properties (Kafka names in `_SIMPLE`)."""

    broker_id: int = 0
    listeners: tuple[Listener, ...] = (Listener("PLAINTEXT", "", 9092),)
    advertised_listeners: tuple[Listener, ...] = ()
    listener_security_protocol_map: tuple[tuple[str, str], ...] = ()
    inter_broker_listener_name: str = ""
    zookeeper_connect: str = ""
    zookeeper_session_timeout_ms: int = 18000
    zookeeper_connection_timeout_ms: int = 18000
    log_dirs: tuple[str, ...] = ("/tmp/kafka-logs",)
    num_partitions: int = 1
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104857600
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    log_segment_bytes: int = 1073741824
    log_index_interval_bytes: int = 4096
    log_flush_interval_messages: int = MAX_LONG
    log_flush_interval_ms: int = -1
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1048576
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    controller_socket_timeout_ms: int = 30000
    offsets_commit_timeout_ms: int = 5000
    reference_controller_resend_ms: int = 0
    reference_bugs: frozenset[str] = frozenset()
    ignored: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = field(default=())

    def advertised(self) -> tuple[Listener, ...]:
        """`advertised.listeners`, defaulting per listener to `listeners` (empty host -> 127.0.0.1)."""
        adv = {lst.name: lst for lst in self.advertised_listeners}
        return tuple(adv.get(lst.name, Listener(lst.name, lst.host or "127.0.0.1", lst.port))
                     for lst in self.listeners)

    def security_protocol(self, listener: str) -> str:
        mapping = dict(self.listener_security_protocol_map)
        return mapping.get(listener, listener if listener in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT",
                                                              "SASL_SSL") else "PLAINTEXT")

    def inter_broker_listener(self) -> str:
        """The listener name this broker uses to reach its peers (their endpoint of that name)."""
        if self.inter_broker_listener_name:
            return self.inter_broker_listener_name
        names = [lst.name for lst in self.listeners]
        return "PLAINTEXT" if "PLAINTEXT" in names else names[0]

    def flush_every_batch(self) -> bool:
        """The 'flush every batch' policy: `log.flush.interval.messages=1` fsyncs before acking."""
        return self.log_flush_interval_messages <= 1

    def describe(self) -> dict[str, str]:
        """Every property with its effective value (defaults filled in), for DescribeConfigs."""
        out = {name: (default or "") for name, (_, _, default) in _SIMPLE.items()}
        out["listeners"] = ",".join(lst.render() for lst in self.listeners)
        out["log.dirs"] = ",".join(self.log_dirs)
        out.update(dict(self.properties))
        return out


def parse_properties(text: str, source: str = "<text>") -> dict[str, str]:
    """Java .properties text -> dict (last definition wins)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key, value = _split(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _continues(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        ch = line[j]
        if ch == "\\":
            j += 2
            continue
        if ch in "=: \t":
            break
        j += 1
    key, rest = line[:j], line[j:].lstrip(" \t")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t")
    return key, rest.rstrip()


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    table = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
    out, j = [], 0
    while j < len(s):
        if s[j] == "\\" and j + 1 < len(s):
            out.append(table.get(s[j + 1], s[j + 1]))
            j += 2
        else:
            out.append(s[j])
            j += 1
    return "".join(out)


def parse_listeners(value: str, prop: str) -> tuple[Listener, ...]:
    out = []
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, sep, rest = item.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ConfigError(f"{prop}: {item!r} is not NAME://host:port")
        out.append(Listener(name.upper(), host.strip("[]"), int(port)))
    return tuple(out)


def _convert(prop: str, kind: str, value: str) -> object:
    try:
        if kind == "int":
            return int(value.strip())
        if kind == "bool":
            low = value.strip().lower()
            if low not in ("true", "false"):
                raise ValueError(value)
            return low == "true"
        return value.strip()
    except ValueError as exc:
        raise ConfigError(f"server.properties: {prop}={value!r} is not a valid {kind}") from exc


def build_config(props: Mapping[str, str]) -> BrokerConfig:
    """Typed config from raw properties; unknown names are kept in `ignored` (sorted)."""
    kwargs: dict[str, object] = {}
    ignored = []
    for prop, value in props.items():
        if prop in _SIMPLE:
            name, kind, _ = _SIMPLE[prop]
            kwargs[name] = _convert(prop, kind, value)
        elif prop not in _STRUCTURED:
            ignored.append(prop)
    if "listeners" in props:
        kwargs["listeners"] = parse_listeners(props["listeners"], "listeners")
        if not kwargs["listeners"]:
            raise ConfigError("listeners: at least one listener is required")
    if "advertised.listeners" in props:
        kwargs["advertised_listeners"] = parse_listeners(props["advertised.listeners"], "advertised.listeners")
    if "listener.security.protocol.map" in props:
        pairs = []
        for item in filter(None, (v.strip() for v in props["listener.security.protocol.map"].split(","))):
            name, sep, proto = item.partition(":")
            if not sep:
                raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
            pairs.append((name.upper(), proto.upper()))
        kwargs["listener_security_protocol_map"] = tuple(pairs)
    dirs = props.get("log.dirs") or props.get("log.dir")
    if dirs:
        kwargs["log_dirs"] = tuple(d.strip() for d in dirs.split(",") if d.strip())
    bugs = props.get("reference.bugs", "")
    kwargs["reference_bugs"] = frozenset(b.strip() for b in bugs.split(",") if b.strip())
    kwargs["ignored"] = tuple(sorted(ignored))
    kwargs["properties"] = tuple(sorted(props.items()))
    cfg = BrokerConfig(**kwargs)  # type: ignore[arg-type]
    for lst in cfg.advertised_listeners:
        if lst.name not in {x.name for x in cfg.listeners}:
            raise ConfigError(f"advertised.listeners: {lst.name} is not among listeners")
    if cfg.inter_broker_listener_name and cfg.inter_broker_listener_name not in {x.name for x in cfg.listeners}:
        raise ConfigError(f"inter.broker.listener.name={cfg.inter_broker_listener_name!r} is not a listener")
    return cfg


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def load_config(path: str | Path | None, overrides: Iterable[str] = ()) -> BrokerConfig:
    """Read server.properties at `path` (None: defaults only), apply `key=value` overrides."""
    props: dict[str, str] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read broker config {path}: {exc}") from exc
        props = parse_properties(text, str(path))
    props.update(parse_overrides(overrides))
    return build_config(props)
