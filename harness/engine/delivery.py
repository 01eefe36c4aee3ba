"""What the drain waits for: which acked values the consumers and pipelines have not read yet."""

from __future__ import annotations

import threading

from harness.history.events import Ack, HistoryEvent, PipeRead, Poll, TxnAbort, TxnCommit


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
