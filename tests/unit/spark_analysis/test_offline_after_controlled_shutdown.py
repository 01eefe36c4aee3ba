"""`partition.offline_replica_leaves_isr` on a run whose only gone broker left every ISR before its
registration vanished (a controlled shutdown): the rule held, so the check passes and says so (it answered
unknown, as if nothing could be judged, in experiments/consumer-scaling.yaml)."""

from __future__ import annotations

from spark_analysis.checks.partition.isr import OfflineReplicaLeavesIsr
from tests.fixtures.histories import Event, python_context


def _state(t: float, isr: list[int], epoch: int) -> Event:
    return {"t": t, "wall": 0, "src": "zk", "type": "partition.state", "topic": "t", "partition": 0, "leader": 1,
            "leader_epoch": epoch, "isr": isr, "replicas": [1, 2, 3], "controller_epoch": 1}


def test_a_broker_that_left_every_isr_before_going_passes_the_check_saying_so() -> None:
    events: list[Event] = [
        *({"t": 0.1, "src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)),
        _state(0.3, [1, 2, 3], 0),
        _state(5.0, [1, 3], 0),
        {"t": 5.1, "src": "zk", "type": "broker.down", "broker": 2},
        {"t": 30.0, "src": "engine", "type": "run.end", "status": "completed"},
    ]
    result = OfflineReplicaLeavesIsr().run(python_context(events))
    assert result.status == "pass", result.summary
    assert result.summary == "every gone broker had left the ISR before it went (1 replica: controlled shutdown)"
    assert result.metrics["out_before_going"] == 1
