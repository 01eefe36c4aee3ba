"""`migrate_to_kraft`'s steps, in Kafka's order ("ZooKeeper to KRaft Migration", docs/ops.html at 3.9; KIP-866):
`controllers` starts the KRaft quorum in migration mode and waits until each voter has caught up; `brokers` rolls
the brokers into the `migrating` phase; `copy` waits for the active controller's metadata copy (`/migration`'s
`kraft_metadata_offset` > 0), after which it holds `/controller` and the cluster is in dual-write, then until every
broker follows the KRaft controller (`migration_brokers`: rolled before that, a broker shuts down uncleanly; at most
`FOLLOW_TIMEOUT_S`, then the step ends anyway and says which brokers were not seen to); `brokers_kraft`
rolls the brokers into KRaft brokers; `controllers_kraft` rolls the controllers out of the migration. The rolls are
the operation runner's rolling restarts over the operation's nodes (`PlannedOperation.nodes`: the brokers, the
brokers again, the controllers), so every restart is a `stop` fault window. Each step is recorded by `record`
(`op.start`/`op.end` with the step's name); the first step that does not end `done` ends the migration there."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from harness.cluster.render_migration import BrokerPhase
from harness.errors import HarnessError
from harness.experiment.schema import MIGRATION_STEPS
from harness.faults.migration_brokers import FOLLOW_TIMEOUT_S
from harness.faults.outcomes import OperationOutcome
from harness.faults.schedule import PlannedOperation
from harness.history.nodes import NodeId
from harness.waiting import Deadline, poll_until


@runtime_checkable
class MigrationSwitch(Protocol):
    """What `migrate_to_kraft` needs besides the stops and starts (the process backend's `ProcessCluster`)."""

    def start(self, node: NodeId) -> None:
        """Start `node` (the migration's KRaft controllers, formatted at bring-up and not started) and wait until
        it is ready."""
        ...

    def migrate(self, node: NodeId, phase: BrokerPhase = "migrating") -> str:
        """From its next start, stopped broker `node` takes migration phase `phase` (a controller: runs without the
        migration); what it will run, in words."""
        ...

    def migration_copied(self) -> str | None:
        """None once the active KRaft controller has copied the metadata from ZooKeeper (`/migration`'s
        `kraft_metadata_offset` > 0), else what `/migration` holds."""
        ...


VIA = "Kafka's ZooKeeper-to-KRaft migration, one step at a time"
Roll = Callable[[str, Callable[[NodeId], str], range], OperationOutcome]
"""A rolling restart over `PlannedOperation.nodes[steps]`: (how, what each node starts as, steps)."""
Record = Callable[[str, OperationOutcome | None, float], None]
"""Records a step's start (outcome None) or its end (with the seconds it took)."""
Await = Callable[[float, threading.Event], str | None]
"""Waits up to the given seconds, or until the event is set: None once what it awaits holds, else what it saw last."""


def run_migration(op: PlannedOperation, switch: MigrationSwitch, roll: Roll,
                  await_voter: Callable[[int, float], str | None], await_brokers: Await, record: Record,
                  abandoned: threading.Event) -> OperationOutcome:
    """The steps `op` asks for (all five by default), each recorded; what the whole migration gave."""
    took: list[str] = []
    for name in op.spec.steps or MIGRATION_STEPS:
        if abandoned.is_set():
            return OperationOutcome("error", VIA, f"abandoned before step {name} (done: {'; '.join(took) or 'none'})")
        record(name, None, 0.0)
        t0 = time.monotonic()
        result = OperationOutcome("error", VIA, "ended by something raised (see the run's log)")
        try:
            result = _step(name, op, switch, roll, await_voter, await_brokers, abandoned)
        finally:
            record(name, result, time.monotonic() - t0)
        if result.outcome != "done":
            return OperationOutcome(result.outcome, VIA, f"step {name}: {result.detail}"
                                    + (f" (done before it: {'; '.join(took)})" if took else ""))
        took.append(f"{name} {time.monotonic() - t0:.1f}s")
    return OperationOutcome("done", VIA, "; ".join(took))


def _step(name: str, op: PlannedOperation, switch: MigrationSwitch, roll: Roll,
          await_voter: Callable[[int, float], str | None], await_brokers: Await,
          abandoned: threading.Event) -> OperationOutcome:
    timeout = op.spec.timeout
    brokers, controllers = len(op.brokers), len(op.controllers)
    if name == "controllers":
        for c in op.controllers:
            switch.start(NodeId.controller(c))
        for c in op.controllers:
            seen = await_voter(c, timeout)
            if seen is not None:
                return OperationOutcome("timeout", "controllers started in migration mode",
                                        f"awaited controller {c} caught up with the quorum leader within "
                                        f"{timeout:g}s; last seen: {seen}")
        return OperationOutcome("done", "controllers started in migration mode",
                                f"controllers {', '.join(map(str, op.controllers))}")
    if name == "brokers":
        return roll("graceful stop, start with the migration settings, one broker at a time",
                    lambda node: switch.migrate(node, "migrating"), range(1, brokers + 1))
    if name == "copy":
        deadline = Deadline.after(timeout)
        last: list[str | None] = [None]

        def copied() -> bool:
            try:
                last[0] = switch.migration_copied()
            except HarnessError as exc:  # ZooKeeper briefly out of reach (a fault may cut it): asked again
                last[0] = str(exc)
                return False
            return last[0] is None

        if poll_until(copied, deadline=deadline, poll_s=0.5, stop=abandoned):
            behind = await_brokers(min(FOLLOW_TIMEOUT_S, deadline.remaining()), abandoned)
            return OperationOutcome("done", "/migration in ZooKeeper, then each broker's Metadata",
                                    "the metadata copy ended (dual-write); " + (
                                        "every broker follows the KRaft controller" if behind is None else
                                        "not every broker was seen following the KRaft controller within "
                                        f"{FOLLOW_TIMEOUT_S:g}s: {behind}"))
        return OperationOutcome("timeout", "/migration in ZooKeeper", f"awaited the metadata copy's end "
                                f"(/migration kraft_metadata_offset > 0) within {timeout:g}s; last seen: {last[0]}; "
                                "the active controller's controller.log says what it waits for")
    if name == "brokers_kraft":
        return roll("graceful stop, start as a KRaft broker, one broker at a time",
                    lambda node: switch.migrate(node, "kraft"), range(brokers + 1, 2 * brokers + 1))
    return roll("graceful stop, start without the migration, one controller at a time",
                lambda node: switch.migrate(node), range(2 * brokers + 1, 2 * brokers + controllers + 1))
