"""Transactions from `txn.begin` / `txn.commit` / `txn.abort` events: how each one ended, read the same way from
Spark rows and from the in-process evaluator's parse.

A transaction is named by its producer and its number (`txn`: 0, 1, 2, ... per producer for the whole run,
across client restarts); the records it holds are the `send`, `ack` and `send.error` events carrying the same
producer and `txn`. Its `outcome` is the one its end event states:

- `committed`: commit_transaction returned (the records are definitely in the log, readable by every consumer);
- `aborted`: the workload aborted it, or the commit failed and the abort that followed succeeded (the records
  may be in the log, but a read_committed consumer must never return them);
- `unknown`: the end was indefinite (the producer died or timed out mid-commit), there is no end event (the run
  was cut short), the end events disagree, or a record names a transaction no event describes.

Only `committed` and `aborted` are definite; checks treat `unknown` as Jepsen's `info`: counted, never blamed.

A read-process-write pipeline (src `pipeline:<id>`) is a transactional producer named by its id: its output
records are its transactions' records, and its `txn.commit` also states the input offsets the transaction commits
for its consumer group (`offsets`: [[topic, partition, next offset], ...]; `Transaction.offsets`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"
OUTCOMES = (COMMITTED, ABORTED, UNKNOWN)
BEGIN = "txn.begin"
END_TYPES = ("txn.commit", "txn.abort")
TXN_TYPES = (BEGIN, *END_TYPES)
"""The small event types that describe transactions."""
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"

TxnKey = tuple[str, int]
"""(producer, txn)."""


def producer_name(producer: object, src: object) -> str:
    """The producer an event belongs to: its `producer` field, else its `src` without `producer:`."""
    if producer is not None:
        return str(producer)
    return str(src or "").removeprefix("producer:")


def pipeline_name(pipeline: object, src: object) -> str:
    """The pipeline a `pipe.read` belongs to: its `pipeline` field, else its `src` without `pipeline:`."""
    if pipeline is not None:
        return str(pipeline)
    return str(src or "").removeprefix("pipeline:")


def committed_only(isolation: object) -> bool:
    """Whether a poll's consumer reads committed records only: `isolation` read_committed, or none recorded
    (histories written before the field; librdkafka's default is read_committed)."""
    return isolation is None or isolation == READ_COMMITTED


def _txn_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


@dataclass(frozen=True, slots=True)
class Transaction:
    """One transaction of one producer and how it ended (see the module doc)."""

    producer: str
    txn: int
    transactional_id: str | None
    outcome: str
    ended: bool
    """Whether any end event (txn.commit / txn.abort) was recorded."""
    begin_t: float | None
    end_t: float | None
    end_seq: int | None
    end_type: str | None
    error: str | None = None
    error_detail: str | None = None
    offsets: tuple[tuple[str, int, int], ...] = ()
    """A pipeline's transaction: the (topic, partition, next offset) its end event commits for the group."""

    @property
    def key(self) -> TxnKey:
        return (self.producer, self.txn)

    @property
    def label(self) -> str:
        return f"txn {self.txn} of {self.producer}"


@dataclass(frozen=True, slots=True)
class TransactionIndex:
    """Every transaction the history describes, by (producer, txn)."""

    by_key: Mapping[TxnKey, Transaction] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        """Whether the run had a transactional producer (some transaction event was read)."""
        return bool(self.by_key)

    def outcome(self, producer: str, txn: int | None) -> str | None:
        """The outcome of the transaction a record belongs to; None for a record outside transactions."""
        if txn is None:
            return None
        found = self.by_key.get((producer, txn))
        return found.outcome if found is not None else UNKNOWN

    def get(self, producer: str, txn: int) -> Transaction | None:
        return self.by_key.get((producer, txn))

    def counts(self) -> dict[str, int]:
        """Transactions by outcome (every outcome present, 0 when none), and `unfinished` (no end event)."""
        by = Counter(t.outcome for t in self.by_key.values())
        out = {"transactions": len(self.by_key), **{o: by.get(o, 0) for o in OUTCOMES}}
        out["unfinished"] = sum(1 for t in self.by_key.values() if not t.ended)
        return out

    def table(self) -> list[tuple[str, int, str, float | None]]:
        """(producer, txn, outcome, end_t) per transaction, for a Spark join."""
        return [(t.producer, t.txn, t.outcome, t.end_t) for t in self.by_key.values()]


def _offsets(value: object) -> tuple[tuple[str, int, int], ...]:
    """An end event's `offsets` ([[topic, partition, next offset], ...], numbers possibly as their text, as Spark
    reads them into an array of strings); malformed entries are left out."""
    out: list[tuple[str, int, int]] = []
    for entry in value if isinstance(value, (list, tuple)) else ():
        if not isinstance(entry, (list, tuple)) or len(entry) != 3 or entry[0] is None:
            continue
        partition, offset = _txn_number(entry[1]), _txn_number(entry[2])
        if partition is not None and offset is not None:
            out.append((str(entry[0]), partition, offset))
    return tuple(out)


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def build_transaction_index(events: Sequence[Mapping[str, Any]]) -> TransactionIndex:
    """Pairs each `txn.begin` with its end (`txn.commit` / `txn.abort`) by (producer, txn), events in file order.

    The outcome is the one the end events state when they all state the same definite outcome (committed or
    aborted, and not `definite: false`); anything else is unknown."""
    begins: dict[TxnKey, Mapping[str, Any]] = {}
    ends: dict[TxnKey, list[Mapping[str, Any]]] = {}
    for ev in events:
        kind = ev.get("type")
        txn = _txn_number(ev.get("txn"))
        if kind not in TXN_TYPES or txn is None:
            continue
        key = (producer_name(ev.get("producer"), ev.get("src")), txn)
        if kind == BEGIN:
            begins.setdefault(key, ev)
        else:
            ends.setdefault(key, []).append(ev)
    out: dict[TxnKey, Transaction] = {}
    for key in sorted(set(begins) | set(ends)):
        begin, closing = begins.get(key, {}), ends.get(key, [])
        stated = {str(e.get("outcome") or UNKNOWN).lower() if e.get("definite") is not False else UNKNOWN
                  for e in closing}
        outcome = stated.pop() if len(stated) == 1 else UNKNOWN
        if outcome not in (COMMITTED, ABORTED):
            outcome = UNKNOWN
        last = closing[-1] if closing else {}
        tid = begin.get("transactional_id", last.get("transactional_id"))
        out[key] = Transaction(
            producer=key[0], txn=key[1], transactional_id=None if tid is None else str(tid), outcome=outcome,
            ended=bool(closing), begin_t=_float(begin.get("t")), end_t=_float(last.get("t")),
            end_seq=int(last["seq"]) if last.get("seq") is not None else None,
            end_type=str(last["type"]) if closing else None,
            error=None if last.get("error") is None else str(last.get("error")),
            error_detail=None if last.get("error_detail") is None else str(last.get("error_detail")),
            offsets=_offsets(last.get("offsets")))
    return TransactionIndex(out)
