"""Migration rules of an experiment: the `migrate_to_kraft` operation and the cluster it needs, judged against
Kafka's "ZooKeeper to KRaft Migration" (docs/ops.html at 3.9, KIP-866; docs/kafka-behaviour.md, rows M1-M3). Every
refusal names the file, line and field and the rule.

- M1: a migration starts from ZooKeeper mode on Apache Kafka 3.9, the bridge release: the last with ZooKeeper mode
  (KIP-833) and the one whose KRaft controllers Kafka's docs migrate with (3.9.x, exact, as an upgrade's start).
- M2: `cluster.controllers` in ZooKeeper mode is the KRaft quorum the migration starts, and only a migration has one;
  a migration needs it (dedicated controllers: the docs' procedure has no combined nodes).
- M3: one migration per experiment, and no `upgrade`/`finalize_upgrade` beside it (the release is the bridge's).

Also a fault's `during:` (a step its `at` counts from): it names a step the run's migration takes.
"""

from __future__ import annotations

from harness.experiment.fields import Fields
from harness.experiment.schema import MIGRATION_STEPS, Experiment
from harness.install.kafka import kafka_request

BRIDGE = "3.9"
"""The release line a ZooKeeper-mode cluster migrates on."""


def check_migration(f: Fields, exp: Experiment) -> None:
    migrations = [op for op in exp.operations if op.action == "migrate_to_kraft"]
    taken = (migrations[0].steps or MIGRATION_STEPS) if migrations else ()
    for fault in exp.schedule:
        if fault.during is not None and fault.during not in taken:
            f.error(("schedule", fault.index, "during"), "`during` names a step of the run's migrate_to_kraft, and "
                    + (f"its steps are {', '.join(taken)}" if taken else "this schedule has none"), fault.during,
                    "a step the migration takes, or `at` from the chaos phase's start without `during`")
    cluster = exp.cluster
    if not migrations:
        if not cluster.kraft and cluster.controllers:
            f.error(("cluster", "controllers"), "in ZooKeeper mode, controllers is the KRaft quorum a "
                    "`migrate_to_kraft` starts, and this schedule has none", cluster.controllers,
                    "schedule `- {at: 10s, action: migrate_to_kraft}`, or remove controllers")
        return
    first = ("schedule", migrations[0].index, "action")
    if cluster.kraft:
        f.error(first, "migrate_to_kraft moves a ZooKeeper-mode cluster to KRaft, and this one runs KRaft already",
                "migrate_to_kraft", "cluster.mode: zookeeper")
        return
    release = kafka_request(cluster.kafka_version)
    if not release.startswith(BRIDGE + ".") or release.count(".") != 2:
        f.error(("cluster", "kafka"), f"a migration to KRaft runs on Apache Kafka {BRIDGE}, the bridge release "
                "(the last with ZooKeeper mode, KIP-833), from an exact release", cluster.kafka_version,
                'kafka: "3.9.2"')
    if not cluster.controllers:
        f.error(("cluster", "controllers"), "migrate_to_kraft starts a KRaft controller quorum: say how many "
                "dedicated controllers it has", None, "cluster.controllers: 3")
    for op in migrations[1:]:
        f.error(("schedule", op.index, "action"), "one migration per experiment: a cluster migrates once",
                op.action)
    for op in exp.operations:
        if op.action in ("upgrade", "finalize_upgrade"):
            f.error(("schedule", op.index, "action"), f"an {op.action} beside a migration: the migration runs on "
                    f"the bridge release {BRIDGE}; upgrade in an experiment of its own", op.action)
