"""Runs scheduled operations (`action:` entries: reassign, elect_preferred, add_partitions, scale_consumers,
restart_producer, rolling_restart, upgrade, finalize_upgrade, migrate_to_kraft) in the background and records them:
`op.start` when one begins, `op.end` with its outcome (`done`, `timeout` or `error`), how it was carried out and
what each partition answered. Faults keep firing while an operation runs (a broker killed in the middle of a
reassignment is the point). The work itself is an `Operator`'s (for `scale_consumers` the group workload's, a
`GroupScaler`; for `restart_producer` the producer workload's, a `ProducerRestarter`; for `rolling_restart`'s stops
and starts a `NodeCycler`, the fault injector, so each stop is a `stop` fault window the verifiers know; for what an
upgrade's brokers start as a `ReleaseSwitch`, the process cluster; for a migration's phases a `MigrationSwitch`, the
same, with its steps in `migration_op`): the runner receives those and nothing else."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from harness.faults.migration_op import MigrationSwitch, run_migration
from harness.faults.outcomes import OperationOutcome
from harness.faults.schedule import PlannedFault, PlannedOperation
from harness.history.events import OpEnd, OpStart, ReassignmentEntry
from harness.history.jsonl import EventSink
from harness.history.nodes import NodeId
from harness.model.releases import IBP, protocol_version
from harness.waiting import Deadline, poll_until


class Operator(Protocol):
    """Carries out operations on a running cluster; each call returns when the operation is done, has
    failed, or `timeout_s` has passed (never raises for those: the outcome says so)."""

    def reassign(self, topic: str, replicas: Mapping[int, Sequence[int]], timeout_s: float) -> OperationOutcome: ...

    def elect_preferred(self, topic: str | None, partitions: Sequence[int], timeout_s: float) -> OperationOutcome: ...

    def add_partitions(self, topic: str, count: int, timeout_s: float) -> OperationOutcome: ...

    def finalize_metadata(self, timeout_s: float) -> OperationOutcome:
        """KRaft: bump metadata.version to the newest level every node supports (`kafka-features upgrade`)."""
        ...

    def await_voter(self, voter: int, timeout_s: float) -> str | None:
        """None once KRaft voter `voter` answers and has caught up with the quorum leader, else what was seen
        last when `timeout_s` ran out."""
        ...

    def await_in_sync(self, broker: int, timeout_s: float) -> str | None:
        """Wait until `broker` is registered and every partition's ISR holds all its replicas: None once so,
        else (after `timeout_s`) what was seen last."""
        ...

    def await_brokers_follow_kraft(self, timeout_s: float, stop: threading.Event) -> str | None:
        """A migration in dual-write: None once every broker's Metadata shows it follows the KRaft controller
        (`migration_brokers`), else what each broker named when `timeout_s` ran out or `stop` was set."""
        ...


class GroupScaler(Protocol):
    """What a consumer-group workload offers to `scale_consumers`."""

    def scale_to(self, members: int, *, abrupt: bool = False) -> str:
        """Grow or shrink to `members` live members; what changed, in words."""
        ...


class ProducerRestarter(Protocol):
    """What a producer workload offers to `restart_producer`."""

    def restart(self, *, abrupt: bool = False, timeout_s: float = 30.0, zombie: bool = False) -> str:
        """A new client session (`zombie`: the old one kept alive to write once fenced); what happened, in words."""
        ...


class NodeCycler(Protocol):
    """What `rolling_restart` needs for each broker: the `stop` fault applied (recorded as a fault window;
    False if it named nothing) and healed (the broker started again)."""

    def inject(self, fault: PlannedFault) -> bool: ...

    def heal(self, fault: PlannedFault) -> None: ...


@runtime_checkable
class ReleaseSwitch(Protocol):
    """What `upgrade` and `finalize_upgrade` need besides the stops and starts: what a stopped broker starts as
    next (the process backend's `ProcessCluster.reconfigure`)."""

    def reconfigure(self, node: NodeId, *, kafka: str | None = None, config: Mapping[str, str] | None = None) -> str:
        """From its next start, `node` (a broker, or a KRaft controller) runs release `kafka` (None: the one it runs)
        with `config` over its properties; what it will run, in words."""
        ...


class OperationRunner:
    """Starts each operation in a thread of its own; `join` waits for all of them (the heal phase)."""

    def __init__(self, operator: Operator, sink: EventSink, groups: Mapping[str, GroupScaler] | None = None,
                 nodes: NodeCycler | None = None, producers: Mapping[str, ProducerRestarter] | None = None,
                 releases: ReleaseSwitch | None = None, migration: MigrationSwitch | None = None) -> None:
        self.operator = operator
        self.sink = sink
        self.groups = dict(groups or {})
        self.nodes = nodes
        self.producers = dict(producers or {})
        self.releases = releases
        self.migration = migration
        self.steps: list[dict[str, object]] = []
        """A migration's steps as they ended: step, started (UTC), elapsed_s, outcome (run.json's `migration`)."""
        self._abandoned = threading.Event()
        """Set by `abandon`: a rolling restart stops no further broker."""
        self._threads: list[threading.Thread] = []
        self._open: dict[int, tuple[PlannedOperation, float]] = {}
        """Started and not yet ended: the operation and its start (monotonic)."""
        self._open_steps: dict[int, tuple[str, float]] = {}
        """A migration's step under way, by operation: its name and start (monotonic)."""
        self.step_began: dict[str, float] = {}
        """When each migration step began (`time.monotonic()`): the moment the faults timed `during` it count from."""
        self._closed = False
        self._upgraded_to: str | None = None
        """The release the last finished upgrade rolled every broker onto."""
        self._lock = threading.Lock()

    def start(self, op: PlannedOperation) -> None:
        topic = op.spec.topic
        self.sink(OpStart(op_id=op.index, action=op.spec.action, topic=topic, group=op.spec.group,
                          partitions=tuple((topic, str(p)) for p in op.partitions) if topic is not None else (),
                          reassignment=tuple(ReassignmentEntry(p, tuple(r)) for p, r in op.replicas),
                          brokers=(op.brokers if op.spec.action == "migrate_to_kraft"
                                   else tuple(int(t.id or 0) for t in op.nodes)) or None, producer=op.spec.producer,
                          timeout_s=op.spec.timeout, description=op.describe()))
        with self._lock:
            self._open[op.index] = (op, time.monotonic())
        thread = threading.Thread(target=self._run, args=(op,), name=f"op-{op.index}-{op.spec.action}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self, op: PlannedOperation) -> None:
        result = OperationOutcome("error", "", "ended by something raised that is no Exception (a client library's "
                                  "error object; see the run's log)")
        try:
            if op.spec.action == "reassign":
                assert op.spec.topic is not None
                result = self.operator.reassign(op.spec.topic, dict(op.replicas), op.spec.timeout)
            elif op.spec.action == "add_partitions":
                assert op.spec.topic is not None and op.spec.count is not None
                result = self.operator.add_partitions(op.spec.topic, op.spec.count, op.spec.timeout)
            elif op.spec.action == "scale_consumers":
                result = self._scale(op)
            elif op.spec.action == "rolling_restart":
                result = self._rolling_restart(op)
            elif op.spec.action in ("upgrade", "finalize_upgrade"):
                result = self._upgrade(op)
            elif op.spec.action == "restart_producer":
                result = self._restart_producer(op)
            elif op.spec.action == "migrate_to_kraft":
                result = self._migrate(op)
            else:
                result = self.operator.elect_preferred(op.spec.topic, op.partitions, op.spec.timeout)
        except Exception as exc:  # an operator bug or an unexpected client error: recorded, never lost
            result = OperationOutcome("error", "", f"{type(exc).__name__}: {exc}")
        finally:  # whatever ended it, the operation ends: op.end is recorded
            self._end(op.index, result)

    def _scale(self, op: PlannedOperation) -> OperationOutcome:
        via = "consumer clients"
        scaler = self.groups.get(str(op.spec.group))
        if scaler is None or op.spec.members is None:
            return OperationOutcome("error", via, f"no consumer group {op.spec.group!r} runs in this experiment")
        return OperationOutcome("done", via, scaler.scale_to(op.spec.members, abrupt=op.spec.abrupt))

    def _restart_producer(self, op: PlannedOperation) -> OperationOutcome:
        via = "a new client session"
        producer = self.producers.get(str(op.spec.producer))
        if producer is None:
            return OperationOutcome("error", via, f"no producer {op.spec.producer!r} runs in this experiment")
        return OperationOutcome("done", via, producer.restart(abrupt=op.spec.abrupt, timeout_s=op.spec.timeout,
                                                              zombie=op.spec.zombie))

    def _upgrade(self, op: PlannedOperation) -> OperationOutcome:
        """An upgrade: a rolling restart whose brokers start on release `to`. A finalize_upgrade: first waits
        (within its timeout) for every running upgrade to end, then a rolling restart whose brokers start with
        inter.broker.protocol.version at the release they run (Kafka's upgrade notes, the last two steps)."""
        releases = self.releases
        if releases is None:
            return OperationOutcome("error", "", "this backend cannot start a broker on another release or "
                                    "configuration (the process backend can)")
        if op.spec.action == "upgrade":
            to = str(op.spec.to)
            return self._rolling_restart(op, f"graceful stop, start on Apache Kafka {to}, one node at a time",
                                         lambda node: releases.reconfigure(node, kafka=to))
        deadline = Deadline.after(op.spec.timeout)
        poll_until(lambda: not self._upgrading(op.index), deadline=deadline, poll_s=0.5, stop=self._abandoned)
        if self._upgrading(op.index):
            return OperationOutcome("timeout", "", f"an upgrade was still running after {op.spec.timeout:g}s: "
                                    "the protocol is bumped once every broker runs the new release")
        with self._lock:
            finished = self._upgraded_to
        if finished is None:
            return OperationOutcome("error", "", "no upgrade finished before it: nothing to finalize")
        if not op.nodes:  # KRaft: metadata.version, through the controllers; no restart
            return self.operator.finalize_metadata(max(1.0, deadline.remaining()))
        config = {IBP: protocol_version(finished)}
        return self._rolling_restart(op, f"{IBP}={config[IBP]}, graceful stop and start, one broker at a time",
                                     lambda node: releases.reconfigure(node, config=config))

    def _migrate(self, op: PlannedOperation) -> OperationOutcome:
        """migrate_to_kraft: its steps (`migration_op`), each recorded as `op.start`/`op.end` with its name."""
        switch = self.migration
        if switch is None:
            return OperationOutcome("error", "", "this backend cannot migrate a cluster to KRaft (the process "
                                    "backend can)")

        def roll(via: str, while_stopped: Callable[[NodeId], str], steps: range) -> OperationOutcome:
            return self._rolling_restart(op, via, while_stopped, steps)

        def record(step: str, result: OperationOutcome | None, elapsed_s: float) -> None:
            with self._lock:
                if self._closed:
                    return
                if result is None:
                    self._open_steps[op.index] = (step, time.monotonic())
                    self.sink(OpStart(op_id=op.index, action=op.spec.action, topic=None, partitions=(),
                                      reassignment=(), brokers=op.brokers, timeout_s=op.spec.timeout,
                                      description=f"{op.describe()}: {step}", step=step))
                    # after its op.start is stamped, so a fault timed `during` it lands at least `at` after that event
                    self.step_began[step] = time.monotonic()
                else:
                    self._open_steps.pop(op.index, None)
                    self._step_ended(op, step, result, elapsed_s)

        return run_migration(op, switch, roll, self.operator.await_voter, self.operator.await_brokers_follow_kraft,
                             record, self._abandoned)

    def _upgrading(self, before: int) -> bool:
        with self._lock:
            return any(o.spec.action == "upgrade" and o.index != before for o, _ in self._open.values())

    def _rolling_restart(self, op: PlannedOperation, via: str = "graceful stop and start, one broker at a time",
                         while_stopped: Callable[[NodeId], str] | None = None,
                         steps: range | None = None) -> OperationOutcome:
        """Each node in turn (an upgrade's KRaft controllers first), within the per-node timeout: every ISR full
        (a controller: caught up with the quorum leader), stop (graceful), start, the same again. Ends at the first
        node that does not come back, or when the run is torn down (`abandon`) before the next node. It may go on
        into the heal phase, which waits for it. `while_stopped` (upgrades) sets what each node starts as, between
        its stop and its start. `steps` (a migration's rolls): which of `op.nodes` (1-based), all by default."""
        if self.nodes is None:
            return OperationOutcome("error", via, "no node control in this run")
        timeout = op.spec.timeout
        took: list[str] = []
        for step in steps or range(1, len(op.nodes) + 1):
            target = op.nodes[step - 1]
            node = NodeId("controller" if target.role == "controller" else "broker", int(target.id or 0))
            if self._abandoned.is_set():
                return OperationOutcome("error", via, f"abandoned before {_name(node)} (restarted: "
                                        f"{'; '.join(took) or 'none'})")
            t0 = time.monotonic()
            seen = self._await(node, timeout)
            if seen is not None:
                return OperationOutcome("timeout", via, f"before stopping {_name(node)}, awaited {_awaited(node)} "
                                        f"within {timeout:g}s; last seen: {seen}")
            fault = op.restart_step(step)
            if not self.nodes.inject(fault):
                return OperationOutcome("error", via, f"{_name(node)} could not be stopped (see fault.skipped)")
            became = ""
            try:
                became = f" as {while_stopped(node)}" if while_stopped is not None else ""
            finally:  # started again whatever the switch did: a node is never left stopped
                self.nodes.heal(fault)
            seen = self._await(node, max(0.0, timeout - (time.monotonic() - t0)))
            if seen is not None:
                return OperationOutcome("timeout", via, f"{_name(node)} {_not_back(node)} within its {timeout:g}s; "
                                        f"last seen: {seen}")
            took.append(f"{_name(node)}{became} {time.monotonic() - t0:.1f}s")
        if op.spec.action == "upgrade":
            with self._lock:
                self._upgraded_to = op.spec.to
        return OperationOutcome("done", via, "; ".join(took))

    def _await(self, node: NodeId, timeout_s: float) -> str | None:
        if node.role == "controller":
            return self.operator.await_voter(node.id, timeout_s)
        return self.operator.await_in_sync(node.id, timeout_s)

    def _end(self, index: int, result: OperationOutcome) -> None:
        """Records `op.end` once per operation, and never after `abandon`."""
        with self._lock:
            if self._closed or index not in self._open:
                return
            op, t0 = self._open.pop(index)
            self.sink(OpEnd(op_id=op.index, action=op.spec.action, topic=op.spec.topic, group=op.spec.group,
                            outcome=result.outcome, via=result.via, detail=result.detail,
                            elapsed_s=round(time.monotonic() - t0, 3),
                            results=tuple(p.as_result() for p in result.partitions), description=op.describe()))

    def abandon(self, reason: str) -> None:
        """Every operation still running ends now as an error naming `reason`; nothing is recorded after, and
        a rolling restart stops no further broker."""
        self._abandoned.set()
        with self._lock:
            pending = sorted(self._open)
            steps = dict(self._open_steps)
        for index in pending:
            if index in steps:  # a migration's step under way ends first, as the operation does
                self._end_step(index, *steps[index], reason)
            self._end(index, OperationOutcome("error", "", reason))
        with self._lock:
            self._closed = True

    def _end_step(self, index: int, step: str, t0: float, reason: str) -> None:
        """A migration's step still under way at `abandon` ends as an error naming `reason`."""
        with self._lock:
            if self._closed or index not in self._open or self._open_steps.pop(index, None) is None:
                return
            self._step_ended(self._open[index][0], step, OperationOutcome("error", "", reason), time.monotonic() - t0)

    def _step_ended(self, op: PlannedOperation, step: str, result: OperationOutcome, elapsed_s: float) -> None:
        """Records a migration step's end (`op.end` with `step`; run.json's `migration`); the lock is held."""
        self.steps.append({"step": step, "started": _utc(time.time() - elapsed_s), "elapsed_s": round(elapsed_s, 3),
                           "outcome": result.outcome})
        self.sink(OpEnd(op_id=op.index, action=op.spec.action, topic=None, outcome=result.outcome, via=result.via,
                        detail=result.detail, elapsed_s=round(elapsed_s, 3), results=(),
                        description=f"{op.describe()}: {step}", step=step))

    @property
    def running(self) -> list[str]:
        return [t.name for t in self._threads if t.is_alive()]

    def join(self, timeout_s: float) -> list[str]:
        """Wait up to `timeout_s` in all for every operation to end; the names of those still running."""
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return self.running


def _utc(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat()


def _name(node: NodeId) -> str:
    return f"{node.role} {node.id}"


def _awaited(node: NodeId) -> str:
    return "it caught up with the quorum leader" if node.role == "controller" else "every ISR full"


def _not_back(node: NodeId) -> str:
    if node.role == "controller":
        return "did not catch up with the quorum leader"
    return "did not come back into every ISR"
