"""`controller.migration_handover` (docs/kafka-behaviour.md rule M4): in a ZooKeeper-to-KRaft migration, one
controller acts at a time across the hand-over. The KRaft controller takes `/controller` as a persistent znode
carrying its Raft epoch, raising `/controller_epoch` in the same multi-op
(`KafkaZkClient.tryRegisterKRaftControllerAsActiveController`, Kafka 3.9); a ZooKeeper-mode broker's election
creates the ephemeral `/controller`, which then exists, so from the first KRaft registration on no ZooKeeper-mode
broker holds `/controller` again, and every later registration (another KRaft controller after a quorum
failover) comes with a higher controller epoch. Judged over the ZooKeeper observer's `controller` events (src
`zk`: `/controller`'s holder and `/controller_epoch`), the KRaft controllers being the run's dedicated ones
(`RunInfo.kraft_controller_ids`). A run without a `migrate_to_kraft` has nothing to judge. This check reads both
authorities' hand-over, so `result.across_migration` leaves it judged (it is in `MIGRATION_CHECKS`)."""

from __future__ import annotations

from typing import Any

from spark_analysis.checks.shared.common import evidence, plural
from spark_analysis.facts.context import CheckContext
from spark_analysis.result import CheckResult, failed, passed

ZK_SOURCE = "zk"


def handover_breaks(events: list[dict[str, Any]], kraft: frozenset[int]
                    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]], int]:
    """The first KRaft controller's `/controller` event, the events that break the hand-over after it (a
    ZooKeeper-mode broker holding `/controller`, or a KRaft holder change without a higher epoch), each with its
    `problem`, and the number of KRaft registrations seen. `events`: the ZooKeeper observer's `controller` events
    in time order (broker -1, no holder between a delete and a create, is skipped)."""
    first: dict[str, Any] | None = None
    prev: dict[str, Any] | None = None
    breaks: list[dict[str, Any]] = []
    registrations = 0
    for ev in events:
        broker, epoch = ev.get("broker"), ev.get("epoch")
        if broker is None or int(broker) < 0 or (first is None and int(broker) not in kraft):
            continue
        if first is None or prev is None:
            first = prev = ev
            registrations = 1
            continue
        if int(broker) not in kraft:
            breaks.append(evidence(ev, problem=f"ZooKeeper-mode broker {broker} holds /controller (epoch {epoch}) "
                                               f"after KRaft controller {first['broker']} took it"))
        elif int(broker) != int(prev["broker"]) or epoch != prev.get("epoch"):
            registrations += 1
            if epoch is not None and prev.get("epoch") is not None and int(epoch) <= int(prev["epoch"]):
                breaks.append(evidence(ev, problem=f"KRaft controller {broker} holds /controller at epoch {epoch}, "
                                                   f"not above controller {prev['broker']}'s {prev['epoch']}"))
        prev = ev
    return first, breaks, registrations


class ControllerMigrationHandover:
    id = "controller.migration_handover"
    family = "controller"
    needs = frozenset({"controller"})

    def run(self, ctx: CheckContext) -> CheckResult:
        migration = ctx.operations.migration
        if migration is None:
            return passed(self.id, "no migrate_to_kraft in the run (nothing to judge)")
        events = sorted((e for e in ctx.rows("controller") if e.get("src") == ZK_SOURCE),
                        key=lambda e: float(e.get("t") or 0.0))
        first, breaks, registrations = handover_breaks(events, ctx.run.kraft_controller_ids)
        metrics = {"zk_controller_events": len(events), "kraft_registrations": registrations}
        if first is None:
            return passed(self.id, f"no KRaft controller took /controller (the migration, op #{migration.op_id} "
                                   f"from {migration.start:.1f}s, did not reach the copy)", metrics)
        taken = f"KRaft controller {first['broker']} took /controller at {float(first.get('t') or 0.0):.1f}s"
        if breaks:
            return failed(self.id, f"{plural(len(breaks), 'break')} of the hand-over after {taken}: "
                                   f"{breaks[0]['problem']}", [evidence(first), *breaks[:19]], metrics)
        more = "" if registrations == 1 else f"; {registrations} KRaft registrations, each at a higher epoch"
        return passed(self.id, f"{taken}; no ZooKeeper-mode broker held it again{more}", metrics)
