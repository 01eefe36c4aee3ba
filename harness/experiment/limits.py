"""Every bound the experiment loader enforces, in one place (docs/design.md, "Input limits").

Two kinds of limit live here:

- **Input limits** keep the loader itself safe: no input file, however hostile, may crash it with
  anything but a `ValidationError`, or keep it busy for more than a fraction of a second. They are
  checked on the raw bytes and on the YAML event stream, before any Python object is built.
- **Run limits** make `validate` as strict as `run`: a value the backends, the workloads or Toxiproxy
  would refuse (or overflow on) after processes were started is refused here, with its line.

Each constant says why it has the value it has. A limit that turns out too tight for a real
experiment is raised here, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# -- input limits ---------------------------------------------------------------------------------

MAX_FILE_BYTES = 1 << 20
"""1 MiB. The shipped experiments are about 1 KiB; a megabyte is a thousand times that and still parses
(with libyaml) in a few tens of milliseconds. The file is read only up to this size plus one byte."""

MAX_DEPTH = 64
"""Nesting of mappings and sequences, counted after alias expansion. An experiment nests at most 6 deep
(`schedule[0].groups[0][0]`); PyYAML's composer recurses once per level and overflows the Python stack
near 1,000."""

MAX_NODES = 10_000
"""Scalars, mappings and sequences in the document, counted as if every alias were expanded. Shipped
experiments have 100-200. It bounds what a 300-byte 'billion laughs' alias bomb can cost, and every
later step (building, matrix expansion, validation) is linear in it."""

MAX_MATRIX_NODES = 50_000
"""Variants times nodes: each `matrix:` variant is a copy of the document, validated on its own (about
20 microseconds a node), so 64 variants of a 10,000-node document would be 640,000 nodes and seconds of
work. A matrix of 64 variants of a 200-node experiment uses 12,800."""

MAX_NUMBER_CHARS = 100
"""A number literal longer than this is refused before conversion: Python refuses `int()` of more than
4,300 digits, and a sexagesimal literal (`1:2:3:...`) costs quadratic time to convert. No field needs a
number with more than 20 digits."""

MAX_DURATION_CHARS = 64
"""A duration's text (`1h30m`): longer texts are refused before they are parsed."""

MAX_RUN_NAME_CHARS = 230
"""`name` plus the matrix variant id: the run directory is `<name>-<variant>-<utc stamp>[-n]`, and a file
name has at most 255 bytes."""

MAX_PROBLEMS = 100
"""Problems reported per file; the rest are counted in a last line, so a broken file cannot flood the terminal."""

MAX_VALUE_CHARS = 200
"""A bad value is quoted in a message up to this many characters."""

# -- run limits -----------------------------------------------------------------------------------

MAX_DURATION_S = 24 * 3600.0
"""Every duration (`duration`, `steady_timeout`, `drain`, fault `at`/`duration`/`jitter`, `slo.*`) is at
most 24 h. A chaos run is a CI job; the engine's sleeps and deadlines overflow near 1e9 s."""

MAX_BROKERS = 9
"""Brokers per cluster. Every broker is a JVM (512 MiB of heap by default) with N+1 listeners, and the
topology holds N*(N-1) + N*Z + N Toxiproxy proxies (126 at 9 brokers and 5 ZooKeeper members): beyond 9
neither backend comes up on a CI machine. Experiments use 3; the widest test uses 5."""

ZOOKEEPER_SIZES = (1, 3, 5)
"""ZooKeeper ensemble sizes both backends start (`ProcessBackend.up`, `ContainersBackend.up`)."""

MAX_TOPICS = 50
"""Topics per experiment (each is created, observed and checked)."""

MAX_PARTITIONS = 1_000
"""Partitions per topic: the observers poll every partition's state, and the verifiers judge each."""

MAX_PRODUCERS = 32
"""Producers per experiment: one librdkafka producer and one thread each."""

MAX_CONSUMER_GROUPS = 32
"""Consumer groups per experiment."""

MAX_MEMBERS = 32
"""Members per consumer group: one librdkafka consumer (and its threads) each."""

MAX_RATE = 10_000.0
"""Messages per second per producer. The producer paces itself with sleeps of 1/rate; at 10,000/s the
history already records 20,000 events per second per producer (send and ack)."""

MAX_VALUES_PER_PRODUCER = 1_000_000_000
"""Producer i writes the unique values i*1e9 + n (`harness.engine.parts.VALUE_STRIDE`): a producer must
not send more values than that, or its values would collide with the next producer's. It sends from the
steady phase to the drain, so `rate * (duration + 2 * steady_timeout)` must stay below this."""

MAX_KEYS = 1_000_000
"""A producer's key space (`keys`): keys are `k<n % keys>`."""

MAX_TXN_RECORDS = 10_000
"""Records per transaction of a transactional producer (`transactions.records`)."""

MAX_TXN_TIMEOUT_S = 900.0
"""`transactions.timeout`: Apache Kafka's `transaction.max.timeout.ms` defaults to 15 minutes."""

MAX_FAULTS = 200
"""Scheduled faults per experiment (the overlap rule compares every pair)."""

MAX_SEED = 2**63 - 1
"""Seeds fit a Java/Spark long (run.json, the JUnit properties, the trend tables)."""

MAX_PARAM_INT = 2**31 - 1
"""A fault parameter that counts bytes or KB/s (Toxiproxy's int attributes)."""

MAX_PARAM_MS = int(MAX_DURATION_S * 1000)
"""A fault parameter in milliseconds (`latency_ms`, `jitter_ms`, `timeout_ms`): at most 24 h."""

PARAM_MAXIMA: Mapping[str, int] = MappingProxyType({
    "latency_ms": MAX_PARAM_MS, "jitter_ms": MAX_PARAM_MS, "timeout_ms": MAX_PARAM_MS,
    "delay_us": MAX_PARAM_MS * 1000,
})
"""Fault parameters with a bound of their own; other integer parameters are bounded by `MAX_PARAM_INT`."""

RESERVED_BROKER_KEYS: Mapping[str, str] = MappingProxyType({
    "broker.id": "each broker's number, 1..brokers",
    "listeners": "one listener per source broker plus EXTERNAL, see docs/design.md 'Link-level faults'",
    "advertised.listeners": "the Toxiproxy proxy of every link into the broker",
    "listener.security.protocol.map": "PLAINTEXT for each of its listeners",
    "inter.broker.listener.name": "FROM<k>, the listener broker k's traffic arrives on",
    "zookeeper.connect": "the broker's own proxies to ZooKeeper, so its session can be cut alone",
    "log.dirs": "the node's data directory in the run directory",
    "log.dir": "the node's data directory in the run directory (as log.dirs)",
    "node.id": "KRaft: brokers 1..brokers, controllers 101..100+controllers",
    "process.roles": "KRaft: broker, controller, or both with cluster.combined",
    "controller.quorum.voters": "KRaft: each node's own proxies to the voters, so one quorum link can be cut alone",
    "controller.quorum.bootstrap.servers": "KRaft: the harness runs a static quorum (controller.quorum.voters)",
    "controller.listener.names": "KRaft: CONTROLLER, the voters' listener",
})
"""`broker_config` keys the harness writes itself in every server.properties (`harness/cluster/render.py`:
`TOPOLOGY_KEYS`), with what it sets them to."""

BROKER_INT_KEYS: Mapping[str, int] = MappingProxyType({
    "zookeeper.session.timeout.ms": 1,
    "offsets.topic.num.partitions": 1,
})
"""`broker_config` keys the harness itself reads as integers (ZooKeeper's session bounds, run.json), with
their minimum. Other typed keys are checked as Apache Kafka reads them (`BROKER_TYPED_KEYS`)."""

BROKER_TYPED_KEYS: Mapping[str, str] = MappingProxyType({
    **dict.fromkeys((
        "zookeeper.connection.timeout.ms", "num.partitions", "default.replication.factor", "min.insync.replicas",
        "offsets.topic.replication.factor", "offsets.topic.segment.bytes", "group.initial.rebalance.delay.ms",
        "group.min.session.timeout.ms", "group.max.session.timeout.ms", "log.segment.bytes",
        "log.index.interval.bytes", "log.flush.interval.messages", "log.flush.interval.ms", "message.max.bytes",
        "socket.request.max.bytes", "replica.lag.time.max.ms", "replica.fetch.wait.max.ms",
        "replica.fetch.max.bytes", "replica.high.watermark.checkpoint.interval.ms",
        "leader.imbalance.check.interval.seconds", "leader.imbalance.per.broker.percentage",
        "controlled.shutdown.max.retries", "controlled.shutdown.retry.backoff.ms", "controller.socket.timeout.ms",
        "offsets.commit.timeout.ms"), "int"),
    **dict.fromkeys((
        "auto.create.topics.enable", "delete.topic.enable", "unclean.leader.election.enable",
        "auto.leader.rebalance.enable", "controlled.shutdown.enable"), "bool"),
})
"""`broker_config` keys Apache Kafka reads as a number (`int`) or a boolean (`bool`, `true`/`false` in any case):
a value it cannot parse stops every broker at start-up with a ConfigException, after the processes were started,
so validate refuses it at its line. Other keys are passed through as text."""
