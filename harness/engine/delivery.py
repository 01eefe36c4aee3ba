"""What the drain waits for: which acked values the consumers and pipelines have not read yet, and whether any more
can come (`nothing_more_to_read`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from harness.history.events import Ack, HistoryEvent, PipeRead, Poll, TxnAbort, TxnCommit
from harness.workload.base import ReadsToTheEnd, Settles, Workload


def nothing_more_to_read(producers: Sequence[Workload], readers: Sequence[Workload]) -> bool:
    """Whether acked values still unseen can no longer be read, so the drain may end before its time: every producer
    delivered all it held (none outstanding: no write is acknowledged later) and every reader has read to the end
    of the partitions it reads, confirmed against their leaders (`ReadsToTheEnd`). Such values are then not in the
    log the consumers read (truncated by an unclean election, or never written where they were acknowledged), and
    `delivery.lost_write` judges them as the drain's end would. Waiting on would only spend the drain's time (on
    Apache Kafka 3.9.2, weak-isr: 25 s per run that lost writes, a third of it). False when any workload cannot
    say (a pipeline, a producer of another kind): the drain then waits as before."""
    return (all(isinstance(p, Settles) and p.settled for p in producers) and bool(readers)
            and all(isinstance(r, ReadsToTheEnd) for r in readers)
            and all(r.read_to_the_end() for r in readers if isinstance(r, ReadsToTheEnd)))


class DeliveryCount:
    """Counts acked values and the ones consumers (and pipelines) have read, so the drain can stop early. A
    transactional record counts as acked once its transaction commits (an aborted one is never readable)."""

    def __init__(self) -> None:
        self.acked: set[int] = set()
        self.polled: set[int] = set()
        self._in_txn: dict[tuple[str, int], set[int]] = {}
        self._lock = threading.Lock()

    def __call__(self, typed: HistoryEvent) -> None:
        with self._lock:
            if isinstance(typed, Ack) and isinstance(typed.value, int):
                if typed.txn is None:
                    self.acked.add(typed.value)
                else:
                    self._in_txn.setdefault((typed.producer, typed.txn), set()).add(typed.value)
            elif isinstance(typed, (Poll, PipeRead)) and isinstance(typed.value, int):
                self.polled.add(typed.value)
            elif isinstance(typed, (TxnCommit, TxnAbort)) and typed.txn is not None:
                values = self._in_txn.pop((typed.producer, typed.txn), set())
                if typed.outcome == "committed":
                    self.acked |= values

    def unseen(self) -> int:
        with self._lock:
            return len(self.acked - self.polled)
