"""Which guarantees a configuration asks Kafka for: one definition per promise, read by every check that judges it.

Kafka keeps a delivery guarantee only under the settings that ask for it (docs/kafka-behaviour.md §3, §6, R3-R7):
- **stored once** (R5): an idempotent producer (`enable.idempotence`, which a transactional one implies) has every
  record stored once; without it a retry after a lost response stores a record twice, as Kafka documents;
- **per-key order** (R7): an idempotent producer keeps its send order through retries, and so does one with at
  most one request in flight (`max.in.flight.requests.per.connection=1`); librdkafka's default without
  idempotence is 1,000,000 requests in flight, so a retried batch may land after a later one;
- **acknowledged writes survive** (R3): an `acks=all` write is acknowledged once the whole ISR has it, and a clean
  election elects from the ISR; `unclean.leader.election.enable` (the topic's setting, else the broker's) lets a
  replica outside the ISR lead, and then what only the old ISR held is truncated away: the lost writes, the
  offsets that come to hold another value, and the reads that go back are what Kafka trades for availability
  (KIP-106 made it off by default). A write acknowledged with `acks=1` or `0` was never promised to survive.

Each function answers with the setting that withdraws the promise, as the report names it, or None when the
configuration asks for it. Pure: the checks pass in what run.json recorded.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Writer:
    """A producer or pipeline as its promise-relevant settings stand (run.json `workload`)."""

    id: str
    topic: str
    acks: str = "all"
    idempotence: bool = True
    transactional: bool = False
    max_in_flight: int | None = None
    """`max.in.flight.requests.per.connection` as configured; None: librdkafka's default (1,000,000)."""
    value_base: int | None = None


def once_withdrawn(w: Writer) -> str | None:
    """Why `w`'s records may be stored twice (R5), or None."""
    if w.idempotence or w.transactional:
        return None
    return f"enable.idempotence=false (producer {w.id})"


def order_withdrawn(w: Writer) -> str | None:
    """Why `w`'s records of one key may be stored out of send order (R7), or None."""
    if w.idempotence or w.transactional or w.max_in_flight == 1:
        return None
    flight = w.max_in_flight if w.max_in_flight is not None else "1000000 (librdkafka's default)"
    return f"enable.idempotence=false with max.in.flight.requests.per.connection={flight} (producer {w.id})"


def ack_withdrawn(w: Writer) -> str | None:
    """Why a write `w` had acknowledged may be gone or overwritten though every election was clean, or None."""
    return None if w.acks == "all" else f"acks={w.acks} (producer {w.id})"


def unclean_permits(enabled: bool, leader: int, t: float, partition: str) -> str | None:
    """The setting under which an unclean election on `partition` truncates acknowledged data, or None when the
    election broke the rule (`partition.unclean_only_when_enabled` judges that)."""
    if not enabled:
        return None
    return f"unclean.leader.election.enable=true (an unclean election of broker {leader} at {t:.3f}s on {partition})"
