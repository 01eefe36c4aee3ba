"""`partition.dual_write_agrees` (docs/kafka-behaviour.md rule M5): from a ZooKeeper-to-KRaft migration's metadata
copy until it is finalized, the KRaft controller is the one authority over partitions and writes each change to
ZooKeeper as well: its `KRaftMigrationDriver` enters `DUAL_WRITE` once the copy is done, and
`KRaftMigrationZkWriter.handleTopicsDelta` calls `ZkTopicMigrationClient.updateTopicPartitions`, which sets
`/brokers/topics/<t>/partitions/<p>/state` from the KRaft partition registration (Kafka 3.9.0-rc3; KIP-866; the
docs' "hybrid" and "dual-write" phases: "the KRaft controller is continuing to write to ZK" until "finalized").
The brokers serve the same registration. So once both have settled, what ZooKeeper holds for a partition and what
the brokers answer name the same leader and the same ISR.

Judged over that span (until the controllers' restart out of the migration, step `controllers_kraft`, begins, or
the history ends), on the ZooKeeper observer's `partition.state` (src `zk`) and the admin observer's (src `admin`,
Metadata answers): through every stretch of at least `SETTLE_S` in which neither view of a partition changed, both
name the same leader and ISR (a change still on its way to one of them is no disagreement). Where the history
holds the KRaft controllers' metadata log (`src: log`, rule M7: what the KRaft controller decided, before it wrote
ZooKeeper), ZooKeeper is held to it the same way: the write to ZooKeeper is the dual write itself. That write
follows the log closely (on 3.9.2, each of 72 changes of the whole migration's dual-write was in ZooKeeper 0.08-0.11 s
after the log had it), so a stretch of `LOG_SETTLE_S` settles them, away from the faults that could hold the write
back (`touches_metadata`: a KRaft controller or ZooKeeper stopped, or a link of theirs cut, and `SETTLE_S` after it:
the KRaft controller keeps deciding while it cannot write ZooKeeper, and catches up after). The brokers' roll into
KRaft mode falls in dual-write and changes every partition, so on a lightly loaded machine no partition stays still
for `SETTLE_S` in both the brokers' and ZooKeeper's view (3.9.2: dual-write 63.3-92.3 s, all 12 never settled),
while the log's comparison still concludes; the check is unknown only when neither does. A run whose
migration did not finish its metadata copy (`copy` step done) has no dual-write to judge. This check reads both
authorities, so `result.across_migration` leaves it judged (it is in `MIGRATION_CHECKS`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spark_analysis.checks.shared.common import evidence, plural
from spark_analysis.facts.context import CheckContext
from spark_analysis.facts.fault_effect import FaultEffect
from spark_analysis.result import CheckResult, failed, passed, unknown

SETTLE_S = 10.0
"""How long neither view of a partition may change for the states they hold through it to be compared: several of
the admin observer's polls and of ZooKeeper's watch re-registrations."""
BROKERS = ("zk", "admin")
"""ZooKeeper's view against the brokers' Metadata answers."""
LOG = ("zk", "log")
"""ZooKeeper's view against the KRaft controllers' metadata log."""
_NAMES = {"admin": "the brokers answered", "log": "the KRaft controller's metadata log had"}
LOG_SETTLE_S = 2.0
"""How long neither ZooKeeper's view nor the metadata log may change for their states to be compared: 20 times the
longest lag of ZooKeeper's write behind the log measured on 3.9.2 (0.11 s)."""
METADATA_ROLES = ("controller", "zookeeper")


def dual_write_span(events: Iterable[Mapping[str, Any]], op_id: int, end_of_history: float
                    ) -> tuple[float, float] | None:
    """When the migration `op_id` was writing to both: from its `copy` step's successful end to the start of its
    `controllers_kraft` step, which finalizes it (or the end of the history); None if the copy never finished."""
    start = end = None
    for ev in events:
        if ev.get("op_id") != op_id:
            continue
        if ev.get("type") == "op.end" and ev.get("step") == "copy" and ev.get("outcome") == "done":
            start = float(ev.get("t") or 0.0)
        elif ev.get("type") == "op.start" and ev.get("step") == "controllers_kraft" and end is None:
            end = float(ev.get("t") or 0.0)
    if start is None:
        return None
    return start, end if end is not None and end >= start else end_of_history


def _state(ev: Mapping[str, Any]) -> tuple[int | None, tuple[int, ...]]:
    leader = ev.get("leader")
    return (int(leader) if leader is not None and int(leader) >= 0 else None,
            tuple(sorted(int(b) for b in ev.get("isr") or [])))


def touches_metadata(effect: FaultEffect) -> bool:
    """Whether a fault stops or cuts off a KRaft controller or a ZooKeeper member, or cuts a link of one: what can
    hold back the KRaft controller's write to ZooKeeper."""
    return (any(role in METADATA_ROLES for role, _id in effect.nodes)
            or any(str(end).split(":", 1)[0] in METADATA_ROLES for link in effect.links
                   for end in (link.get("src"), link.get("dst"))))


def _clear(lo: float, hi: float, excluded: Iterable[tuple[float, float]]) -> float:
    """The longest part of [lo, hi] outside every `excluded` interval."""
    pieces = [(lo, hi)]
    for a, b in excluded:
        pieces = [p for x, y in pieces for p in ((x, min(y, a)), (max(x, b), y)) if p[1] > p[0]]
    return max((y - x for x, y in pieces), default=0.0)


def _settled_intervals(timeline: list[Mapping[str, Any]], span: tuple[float, float], views: tuple[str, str],
                       settle: float, excluded: tuple[tuple[float, float], ...]
                       ) -> Iterable[tuple[float, float, Mapping[str, Any], Mapping[str, Any]]]:
    """Each stretch of `span` with at least `settle` outside `excluded` in which neither view of one partition
    changed, with the state of each of the two `views` in force through it. `timeline`: that partition's states of
    both views, in time order."""
    now: dict[str, Mapping[str, Any]] = {}
    for k, ev in enumerate(timeline):
        now[str(ev.get("src"))] = ev
        t = float(ev.get("t") or 0.0)
        following = float(timeline[k + 1].get("t") or 0.0) if k + 1 < len(timeline) else span[1]
        lo, hi = max(t, span[0]), min(following, span[1])
        if len(now) == len(views) and _clear(lo, hi, excluded) >= settle:
            yield lo, hi, now[views[0]], now[views[1]]


def disagreements(states: Iterable[Mapping[str, Any]], span: tuple[float, float], views: tuple[str, str] = BROKERS,
                  settle: float = SETTLE_S, excluded: tuple[tuple[float, float], ...] = ()
                  ) -> tuple[list[dict[str, Any]], int, int]:
    """The partitions whose states in the two `views` (`src`s: ZooKeeper's first) differ through a stretch of `span`
    in which neither changed for `settle` outside `excluded` (the first such stretch of each, with its `problem`),
    the number of partitions compared (a settled stretch in both views), and the number never settled. `states`:
    `partition.state` events."""
    timelines: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for ev in sorted(states, key=lambda e: float(e.get("t") or 0.0)):
        if ev.get("src") in views and float(ev.get("t") or 0.0) <= span[1] and not ev.get("error"):
            timelines.setdefault((str(ev.get("topic")), int(ev.get("partition") or 0)), []).append(ev)
    out: list[dict[str, Any]] = []
    compared = settling = 0
    for (topic, partition), timeline in sorted(timelines.items()):
        if {str(ev.get("src")) for ev in timeline} != set(views):
            continue
        stretches = list(_settled_intervals(timeline, span, views, settle, excluded))
        if not stretches:
            settling += 1
            continue
        compared += 1
        for lo, hi, zk, other in stretches:
            (zl, zisr), (al, aisr) = _state(zk), _state(other)
            if (zl, zisr) != (al, aisr):
                out.append(evidence(zk, problem=(
                    f"{topic}/{partition}: from {lo:.1f}s to {hi:.1f}s ZooKeeper held leader {zl}, ISR {list(zisr)}; "
                    f"{_NAMES[views[1]]} leader {al}, ISR {list(aisr)}")))
                break
    return out, compared, settling


class PartitionDualWriteAgrees:
    id = "partition.dual_write_agrees"
    family = "partition"
    needs = frozenset({"partition.state"})

    def run(self, ctx: CheckContext) -> CheckResult:
        migration = ctx.operations.migration
        if migration is None:
            return passed(self.id, "no migrate_to_kraft in the run (nothing to judge)")
        ops = sorted(ctx.rows("op.start", "op.end"), key=lambda e: float(e.get("t") or 0.0))
        span = dual_write_span(ops, migration.op_id, ctx.end_t)
        if span is None:
            return passed(self.id, f"the migration (op #{migration.op_id}) did not finish its metadata copy: no "
                                   "dual-write phase to judge")
        bad, compared, settling = disagreements(ctx.rows("partition.state"), span)
        metrics = {"dual_write_from_s": round(span[0], 3), "dual_write_until_s": round(span[1], 3),
                   "partitions_compared": compared, "partitions_never_settled": settling}
        phase = f"dual-write {span[0]:.1f}s-{span[1]:.1f}s"
        logged = ctx.metadata_log().rows("partition.state")
        held_back = tuple((w.start, (ctx.end_t if w.end is None else w.end) + SETTLE_S)
                          for w in ctx.faults.windows if touches_metadata(w.effect))
        log_bad, log_compared, _ = disagreements([*ctx.rows("partition.state"), *logged], span, LOG, LOG_SETTLE_S,
                                                 held_back)
        if logged:
            metrics["partitions_compared_with_log"] = log_compared
        if bad or log_bad:
            who = "the brokers" if bad else "the KRaft controller's metadata log"
            return failed(self.id, f"{plural(len(bad or log_bad), 'partition')} where ZooKeeper and {who} disagree "
                                   f"while settled in {phase}: {(bad or log_bad)[0]['problem']}",
                          (bad + log_bad)[:20], metrics)
        if compared == 0 and log_compared == 0:
            return unknown(self.id, f"cannot conclude: no partition stayed still for {SETTLE_S:g}s in both views in "
                                    f"{phase} ({settling} never settled)", metrics)
        said = ([f"ZooKeeper and the brokers named the same leader and ISR whenever settled, for "
                 f"{plural(compared, 'partition')}"] if compared else [])
        if log_compared:
            said.append(f"ZooKeeper and the KRaft controller's metadata log did too, for "
                        f"{plural(log_compared, 'partition')}" if compared else
                        f"ZooKeeper and the KRaft controller's metadata log named the same leader and ISR whenever "
                        f"settled, for {plural(log_compared, 'partition')} (none stayed still for {SETTLE_S:g}s in "
                        f"the brokers' and ZooKeeper's views: {settling} never settled)")
        return passed(self.id, f"{phase}: {'; '.join(said)}", metrics)
