"""The history's columns as the verifiers read them: one explicit, wide, nullable Spark schema.

Owns `HISTORY_SCHEMA` (a column for every field the verifiers read of the event classes of
`harness.history.events`; `tests/unit/history/test_event_schema.py` fails when the two disagree), the Parquet
copy's schema (`PARQUET_SCHEMA`: the unused columns dropped, `_damage`, `seq` and the `tier` partition
column added), and the tiers (each bulk type of `harness.history.bulk`, which also owns the columns Arrow parses
the bulk events with, has its own `tier`; the small types share one). Loading (`spark_analysis.ingest.load`) and the
in-process evaluator (`spark_analysis.ingest.json_read`) and the Python reading of the small events
(`spark_analysis.ingest.side_rows`) all read lines by it.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from harness.history.bulk import BULK_TYPES

CORRUPT = "_corrupt_record"
SMALL_TIER = "small"
UNUSED_COLUMNS = ("wall", "experiment", "backend", "seed", "observer")
"""Parsed (they are in the schema) but not kept in the Parquet copy: no check reads them."""
DAMAGE = "_damage"
"""Parquet column: null for an event; `<kind>:<type>` for a skipped line. Kinds: `torn` (not a
complete JSON object), `ill-typed` (a field of the wrong JSON type), `untyped` (no `type`); the
type is the one the line names (also read from the text of a torn line), or `?`."""
DAMAGE_KINDS = ("torn", "ill-typed", "untyped")
LOOSE_LEADER_TYPES = ("group.state",)
"""`leader` is a broker id (an integer) in every event type but these, where it is a member id."""
INTEGER_TEXT = r"^-?[0-9]{1,18}$"
"""A `leader` text that is a broker id."""
TYPE_IN_TEXT = r'"type"\s*:\s*"([^"\\]{1,80})"'
"""The event type a damaged line names in its text."""
T_IN_TEXT = r'"t"\s*:\s*(-?[0-9][0-9.eE+-]{0,30})'
"""The time a damaged line names in its text."""


def _f(name: str, kind: object) -> StructField:
    return StructField(name, kind, True)  # type: ignore[arg-type]


_S, _L, _D, _B = StringType(), LongType(), DoubleType(), BooleanType()

# Strings accept any JSON value (Spark keeps the raw JSON text of numbers, objects and arrays),
# so fields whose shape varies between observers (fault ids, targets, params, effects, members) are strings.
HISTORY_SCHEMA = StructType(
    [
        _f("t", _D),
        _f("wall", _D),
        _f("src", _S),
        _f("type", _S),
        # run.start / run.end / phase / probe
        _f("experiment", _S),
        _f("backend", _S),
        _f("seed", _L),
        _f("status", _S),
        _f("name", _S),
        _f("ok", _B),
        _f("detail", _S),
        # faults
        _f("fault_id", _S),
        _f("kind", _S),
        _f("target", _S),
        _f("params", _S),
        _f("effect", _S),  # fault.start: what the fault did (nodes, down, unreachable, links, toxics), as JSON text
        _f("took_ms", _L),  # fault.start: how long the fault's action took
        # operations (op.start / op.end): reassignment and op.end's results are lists of objects, kept as JSON text
        _f("op_id", _L),
        _f("action", _S),
        _f("outcome", _S),
        _f("reassignment", _S),
        _f("results", _S),
        _f("description", _S),
        _f("step", _S),  # migrate_to_kraft: the step an op.start/op.end pair under the operation's op_id brackets
        # brokers, controller, partitions
        _f("broker", _L),
        _f("controller", _L),
        _f("epoch", _L),
        _f("topic", _S),
        _f("partition", _L),
        _f("leader", _L),
        _f("leader_epoch", _L),
        _f("isr", ArrayType(_L)),
        _f("replicas", ArrayType(_L)),
        _f("controller_epoch", _L),
        _f("zxid", _L),  # ZooKeeper: partition.state's modification zxid, broker.up's creation zxid
        # KRaft: eligible leader replicas (KIP-966) of partition.state; the quorum observer's quorum.state
        # (voters/observers are lists of objects, kept as their JSON text)
        _f("elr", ArrayType(_L)),
        _f("last_known_elr", ArrayType(_L)),
        _f("leader_fenced", _B),
        _f("voter", _L),
        _f("role", _S),
        _f("high_watermark", _L),
        _f("voters", _S),
        _f("observers", _S),
        # groups
        _f("group", _S),
        _f("state", _S),
        _f("generation", _L),
        _f("coordinator", _L),
        _f("protocol", _S),
        _f("members", ArrayType(_S)),
        _f("group_type", _S),  # classic or consumer (KIP-848): how group.assignment_conforms judges the group
        _f("lost", _B),  # revoke: lost (fenced), not revoked: churn, which a KIP-848 group's stickiness rule skips
        _f("member", _S),
        _f("partitions", ArrayType(ArrayType(_S))),
        # produce / consume
        _f("producer", _S),
        _f("consumer", _S),
        _f("value", _L),
        _f("key", _S),
        _f("offset", _L),
        _f("latency_ms", _D),  # ack and send.error (from a delivery report): produce() to delivery, in ms
        _f("acks", _S),
        _f("error", _S),
        _f("definite", _B),
        _f("fatal", _B),  # send.error and client.error: librdkafka's KafkaError.fatal()
        _f("error_detail", _S),
        # transactions: txn.begin / txn.commit / txn.abort / txn.zombie / txn.fenced, and the send/ack/send.error of a
        # transactional producer (`txn`: the producer's transaction number; `zombie`: written by a fenced client);
        # poll's consumer isolation.level; a read-process-write pipeline's pipe.read (`pipeline`), its output
        # records' `input_value` and its txn.commit's `offsets` ([[topic, partition, next offset]]); (not `source`:
        # a controller event's observer is a string there; test_kraft_checks.py keeps it so)
        _f("txn", _L),
        _f("transactional_id", _S),
        _f("isolation", _S),
        _f("zombie", _B),
        _f("pipeline", _S),
        _f("input_value", _L),
        _f("offsets", ArrayType(ArrayType(_S))),
        # txn.fenced: how long the fenced transaction had been open, and the producer's transaction.timeout.ms
        _f("open_ms", _L),
        _f("timeout_ms", _L),
        # observer errors
        _f("observer", _S),
        _f(CORRUPT, _S),
    ]
)
"""Every column a history event may carry; all nullable. Arrays: isr, replicas, elr, last_known_elr, members,
partitions, offsets."""


PARQUET_SCHEMA = StructType(
    [f for f in HISTORY_SCHEMA.fields if f.name not in UNUSED_COLUMNS]
    + [StructField(DAMAGE, StringType(), True), StructField("seq", LongType(), False),
       StructField("tier", StringType(), True)]
)
"""The Parquet copy: the history columns minus the unused ones, plus `_damage` and `seq`; `tier`
partitions it."""


def tiers_of(types: tuple[str, ...] | list[str]) -> list[str]:
    """The `tier` partitions events of `types` live in (each bulk type has its own; the rest share one)."""
    tiers = {t for t in types if t in BULK_TYPES}
    if any(t not in BULK_TYPES for t in types):
        tiers.add(SMALL_TIER)
    return sorted(tiers)

