"""The `workload:` section: producers (plain, idempotent or transactional), consumer groups and read-process-write
pipelines, read into frozen `ProducerSpec` / `TransactionSpec` / `ConsumerSpec` / `PipelineSpec` values; every
error names its field path."""

from __future__ import annotations

from typing import Any

from harness.errors import ConfigError
from harness.experiment.fields import MISSING, Fields, count_items
from harness.experiment.limits import (
    MAX_CONSUMER_GROUPS,
    MAX_KEYS,
    MAX_MEMBERS,
    MAX_PRODUCERS,
    MAX_RATE,
    MAX_TXN_RECORDS,
    MAX_TXN_TIMEOUT_S,
)
from harness.experiment.schema import (
    CLIENTS,
    ConsumerSpec,
    PipelineSpec,
    ProducerSpec,
    TransactionSpec,
    WorkloadSpec,
    frozen_map,
)
from harness.experiment.yamlsource import Path
from harness.install.java_client import check_client_version
from harness.install.librdkafka_client import check_librdkafka_version

_OWN_FIELDS = {"transactional.id": "transactions.id", "transaction.timeout.ms": "transactions.timeout",
               "isolation.level": "isolation"}
"""librdkafka properties that the workload's own fields set: `config` may not set them too."""


def read_workload(f: Fields, raw: object) -> WorkloadSpec | None:
    """The workload, or None after any error in it (so the cross-field rules, which name producers and groups
    by their position, never see a list that lost an item)."""
    before = len(f.problems)
    m = f.mapping(("workload",), raw, ("producers", "consumers", "pipelines", "client", "client_version"),
                  "workload")
    if m is None:
        return None
    client, client_version = _client(f, m)
    producers: list[ProducerSpec] = []
    items = f.sequence(("workload", "producers"), m.get("producers"), "producers")
    count_items(f, ("workload", "producers"), items, MAX_PRODUCERS, "producers")
    txn_ids: set[str] = set()
    for i, item in enumerate(items):
        path: Path = ("workload", "producers", i)
        p = f.mapping(path, item, ("id", "topic", "rate", "acks", "idempotence", "keys", "config", "transactions"),
                      "a producer")
        if p is None:
            continue
        pid = _client_name(f, p, path, "id", default=f"p{i}")
        topic = f.string(p, path, "topic")
        rate = f.number(p, path, "rate", default=100.0, positive=True, maximum=MAX_RATE,
                        why="messages per second per producer")
        raw_acks = p.get("acks", "all")
        acks = {"-1": "all", "all": "all", "0": "0", "1": "1"}.get(str(raw_acks).lower())
        if acks is None or isinstance(raw_acks, bool):
            f.error((*path, "acks"), "acks must be 0, 1 or all", raw_acks)
            acks = MISSING
        idem = f.boolean(p, path, "idempotence", default=acks == "all")
        if idem is True and acks not in ("all", MISSING):
            f.error((*path, "idempotence"), "idempotence needs acks: all (librdkafka enforces it)", idem)
        keys = f.integer(p, path, "keys", default=0, minimum=0, maximum=MAX_KEYS)
        config = f.properties(p, path, "config")
        txn = _transactions(f, p, path, pid, acks, idem)
        _unique_txn_id(f, path, txn, txn_ids)
        _no_own_fields(f, path, config)
        if client == "java":
            _java_names(f, path, config)
        if MISSING not in (pid, topic, rate, acks, idem, keys, txn):
            producers.append(ProducerSpec(pid, topic, rate, acks, idem, keys, frozen_map(config),  # type: ignore[arg-type]
                                          txn))
    consumers: list[ConsumerSpec] = []
    groups: set[str] = set()
    items = f.sequence(("workload", "consumers"), m.get("consumers"), "consumers")
    count_items(f, ("workload", "consumers"), items, MAX_CONSUMER_GROUPS, "consumer groups")
    for i, item in enumerate(items):
        path = ("workload", "consumers", i)
        c = f.mapping(path, item, ("group", "topics", "members", "strategy", "commit", "config", "isolation"),
                      "a consumer group")
        if c is None:
            continue
        group = _client_name(f, c, path, "group")
        topics = f.strings(c, path, "topics")
        if topics == ():
            f.error((*path, "topics"), "a consumer group subscribes to at least one topic", [])
            topics = MISSING
        members = f.integer(c, path, "members", default=1, minimum=1, maximum=MAX_MEMBERS,
                            why="every member is a client of its own")
        strategy = f.string(c, path, "strategy", default="range",
                            choices=("range", "roundrobin", "cooperative-sticky"))
        commit = f.string(c, path, "commit", default="auto", choices=("auto", "sync", "async"))
        isolation = f.string(c, path, "isolation", default="read_committed",
                             choices=("read_committed", "read_uncommitted"))
        config = f.properties(c, path, "config")
        _no_own_fields(f, path, config)
        if client == "java":
            _java_names(f, path, config)
        if group in groups:
            f.error((*path, "group"), "consumer group declared twice", group)
            continue
        if MISSING not in (group, topics, members, strategy, commit, isolation):
            groups.add(group)
            consumers.append(ConsumerSpec(group, topics, members, strategy, commit, frozen_map(config),  # type: ignore[arg-type]
                                          isolation))
    pipelines = _pipelines(f, m.get("pipelines"), txn_ids, {p.id for p in producers}, groups)
    if len(f.problems) != before:
        return None
    return WorkloadSpec(tuple(producers), tuple(consumers), pipelines, client, client_version)


def _client(f: Fields, m: dict[str, Any]) -> tuple[Any, str | None]:
    """`client` and `client_version`: the Java client takes any kafka-clients release from 2.8.0 on; librdkafka any
    confluent-kafka release with a wheel for this Python (without a version: the installed one, in process)."""
    client = f.string(m, ("workload",), "client", default="librdkafka", choices=CLIENTS)
    raw = m.get("client_version")
    if raw is None:
        return client, None
    version = f.string(m, ("workload",), "client_version")
    if version is MISSING:
        return client, None
    try:
        (check_librdkafka_version if client == "librdkafka" else check_client_version)(str(version))
    except ConfigError as exc:
        f.error(("workload", "client_version"), str(exc), raw)
        return client, None
    return client, str(version)


def _unique_txn_id(f: Fields, path: Path, txn: Any, seen: set[str]) -> None:
    if isinstance(txn, TransactionSpec):
        if txn.id in seen:
            f.error((*path, "transactions", "id"), "two producers share a transactional id (the second would "
                    "fence the first)", txn.id)
        seen.add(txn.id)


def _pipelines(f: Fields, raw: object, txn_ids: set[str], producer_ids: set[str],
               groups: set[str]) -> tuple[PipelineSpec, ...]:
    out: list[PipelineSpec] = []
    items = f.sequence(("workload", "pipelines"), raw, "pipelines")
    count_items(f, ("workload", "pipelines"), items, MAX_PRODUCERS, "pipelines")
    for i, item in enumerate(items):
        path: Path = ("workload", "pipelines", i)
        p = f.mapping(path, item, ("id", "input", "output", "group", "transactions"), "a pipeline")
        if p is None:
            continue
        pid = _client_name(f, p, path, "id", default=f"pipeline{i}")
        if pid in producer_ids:
            f.error((*path, "id"), "a producer has this id already", pid)
        producer_ids.add(pid)
        source, sink = f.string(p, path, "input"), f.string(p, path, "output")
        if source is not MISSING and source == sink:
            f.error((*path, "output"), "a pipeline writes to another topic than it reads", sink)
        group = _client_name(f, p, path, "group", default=pid)
        if group in groups:
            f.error((*path, "group"), "consumer group declared twice (a pipeline's group is its own)", group)
        groups.add(group)
        if p.get("transactions") is None:
            p = {**p, "transactions": {}}
        txn = _transactions(f, p, path, pid, "all", True)
        if isinstance(txn, TransactionSpec) and txn.abort_rate:
            f.error((*path, "transactions", "abort_rate"), "a pipeline aborts only what fails (no abort_rate)",
                    txn.abort_rate)
        _unique_txn_id(f, path, txn, txn_ids)
        if MISSING not in (pid, source, sink, group, txn):
            out.append(PipelineSpec(pid, source, sink, group, txn))
    return tuple(out)


def _transactions(f: Fields, p: dict[str, Any], path: Path, pid: Any, acks: Any, idem: Any) -> Any:
    """The producer's `transactions:` mapping (None when absent); MISSING after an error."""
    if p.get("transactions") is None:
        return None
    tpath: Path = (*path, "transactions")
    t = f.mapping(tpath, p["transactions"], ("id", "records", "abort_rate", "timeout"), "transactions")
    if t is None:
        return MISSING
    default_id = f"kafka-chaos-{pid}" if isinstance(pid, str) else MISSING
    tid = _client_name(f, t, tpath, "id", default=default_id)
    records = f.integer(t, tpath, "records", default=10, minimum=1, maximum=MAX_TXN_RECORDS,
                        why="records per transaction")
    abort_rate = f.number(t, tpath, "abort_rate", default=0.0)
    if abort_rate is not MISSING and not 0.0 <= abort_rate <= 1.0:
        f.error((*tpath, "abort_rate"), "must be between 0 and 1 (the share of transactions aborted on purpose)",
                t.get("abort_rate"))
        abort_rate = MISSING
    timeout = f.duration(t, tpath, "timeout", default=60.0)
    if timeout is not MISSING and timeout > MAX_TXN_TIMEOUT_S:
        f.error((*tpath, "timeout"), f"must be at most {MAX_TXN_TIMEOUT_S:g}s", t.get("timeout"),
                "Kafka's transaction.max.timeout.ms defaults to 15 minutes")
        timeout = MISSING
    if acks not in ("all", MISSING):
        f.error((*path, "acks"), "a transactional producer needs acks: all (librdkafka enforces it)", acks)
        return MISSING
    if idem is False:
        f.error((*path, "idempotence"), "a transactional producer is idempotent (librdkafka enforces it)", idem)
        return MISSING
    if MISSING in (tid, records, abort_rate, timeout):
        return MISSING
    return TransactionSpec(tid, records, abort_rate, timeout)


LIBRDKAFKA_NAMES = {
    "message.timeout.ms": "delivery.timeout.ms", "queue.buffering.max.ms": "linger.ms",
    "queue.buffering.max.kbytes": "buffer.memory (in bytes)", "queue.buffering.max.messages": None,
    "batch.num.messages": None, "max.in.flight": "max.in.flight.requests.per.connection",
    "message.send.max.retries": "retries", "compression.codec": "compression.type",
    "topic.metadata.refresh.interval.ms": "metadata.max.age.ms", "fetch.wait.max.ms": "fetch.max.wait.ms",
    "enable.partition.eof": None, "statistics.interval.ms": None, "debug": None, "socket.timeout.ms": None,
}
"""librdkafka settings (its CONFIGURATION.md) whose Java client name differs -> that name, or None where the Java client
has none. The Java worker refuses any other name its client does not know when it starts (`Worker.known`)."""


def _java_names(f: Fields, path: Path, config: Any) -> None:
    if not isinstance(config, dict):
        return
    for prop in config:
        if prop in LIBRDKAFKA_NAMES:
            java = LIBRDKAFKA_NAMES[prop]
            f.error((*path, "config", prop), "a librdkafka setting, and this workload runs on the Java client, "
                    + (f"which calls it {java}" if java else "which has no such setting"), config[prop],
                    f"write {java.split(' ')[0]}" if java else "leave it out, or use client: librdkafka")


def _no_own_fields(f: Fields, path: Path, config: Any) -> None:
    if not isinstance(config, dict):
        return
    for prop, own in _OWN_FIELDS.items():
        if prop in config:
            f.error((*path, "config", prop), f"set by the workload's own field `{own}`; write it there", config[prop])


def _client_name(f: Fields, m: dict[str, Any], path: Path, key: str, default: Any = MISSING) -> Any:
    """A producer id, group id or transactional id: a non-empty printable string of at most 249 characters."""
    name = f.string(m, path, key, default=default)
    if name is not MISSING and not (0 < len(name) <= 249 and name.isprintable()):
        f.error((*path, key), "must be 1 to 249 printable characters", name)
        return MISSING
    return name
