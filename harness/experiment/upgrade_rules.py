"""Upgrade rules of an experiment: the `upgrade` and `finalize_upgrade` operations its schedule may hold, judged
against Apache Kafka's upgrade notes (docs/upgrade.html, "Upgrading ZooKeeper-based clusters", every release from
2.1 to 3.9; docs/kafka-behaviour.md, rows U1-U3). Every refusal names the file, line and field and the note's rule.

- U1: an upgrade goes to a newer release than the brokers run (the one `cluster.kafka` asks for, or the previous
  upgrade's), and in ZooKeeper mode to a release that still has it (4.0 removed ZooKeeper mode, KIP-833: a
  ZooKeeper cluster migrates to KRaft on 3.9 first, KIP-866). (No broker property of the release table,
  `harness.model.releases.SETTINGS`, goes away before 4.0, so a ZooKeeper-mode upgrade keeps every one it had.)
- U2: in ZooKeeper mode, `cluster.broker_config` pins `inter.broker.protocol.version` to the release the cluster
  starts on, or an older one, before the brokers roll: the notes' first step, so that upgraded and old brokers
  keep speaking the old protocol until every broker runs the new code.
- U3: `finalize_upgrade` (bump the protocol, restart; in KRaft, bump `metadata.version`) comes after an `upgrade`.
- U4: in KRaft mode there is no protocol to pin: the nodes roll (the controllers first), then `metadata.version` is
  bumped ("Upgrading KRaft-based clusters"); the mode itself has been checked against the release
  (`cluster_fields`: KRaft from 3.3).
"""

from __future__ import annotations

from harness.experiment.fields import Fields
from harness.experiment.schema import Experiment
from harness.install.kafka import kafka_request
from harness.model.releases import IBP, Release, feature, lowest_release, protocol_version


def check_upgrades(f: Fields, exp: Experiment) -> None:
    upgrades = sorted((op for op in exp.operations if op.action in ("upgrade", "finalize_upgrade")),
                      key=lambda op: (op.at, op.index))
    if not upgrades:
        return
    start = kafka_request(exp.cluster.kafka_version)
    running = lowest_release(start)
    if start.count(".") != 2:
        f.error(("cluster", "kafka"), "an upgrade starts from an exact release: a line resolves to whichever of its "
                "releases is newest on the day", exp.cluster.kafka_version, 'e.g. kafka: "3.7.0"')
        return
    pinned = exp.cluster.broker_config.get(IBP)
    upgraded = False
    for op in upgrades:
        path = ("schedule", op.index)
        if op.action == "finalize_upgrade":
            if not upgraded:
                what = "metadata.version" if exp.cluster.kraft else IBP
                f.error((*path, "action"), f"finalize_upgrade bumps {what} to the release an `upgrade` rolled the "
                        "brokers onto: schedule an upgrade before it (Kafka's upgrade notes, the last steps)",
                        op.action)
            continue
        target = Release.parse(op.to or "")
        if target is None or running is None:
            continue
        if target <= running:
            f.error((*path, "to"), f"an upgrade goes to a newer release than the brokers run ({running}); Kafka's "
                    "notes call going back a downgrade, possible only before the protocol version is bumped", op.to)
            continue
        zookeeper = feature("zookeeper_mode")
        if not exp.cluster.kraft and not zookeeper.available(target):
            f.error((*path, "to"), zookeeper.why_not(target) + "; a ZooKeeper-mode cluster migrates to KRaft on 3.9 "
                    "first (KIP-866), then upgrades", op.to, 'to: "3.9.2"')
            continue
        if not upgraded and not exp.cluster.kraft:
            pinned_release = Release.parse(pinned) if isinstance(pinned, str) else None
            if pinned_release is None or pinned_release > running:
                where = ("cluster", "broker_config", IBP) if pinned is not None else ("cluster", "broker_config")
                f.error(where, f"before a rolling upgrade, Kafka's upgrade notes pin {IBP} to the release the "
                        f"cluster runs ({protocol_version(str(running))}), so that upgraded and old brokers speak "
                        "the same protocol until every broker runs the new code", pinned,
                        f'cluster.broker_config: {{{IBP}: "{protocol_version(str(running))}"}}')
        upgraded = True
        running = target
