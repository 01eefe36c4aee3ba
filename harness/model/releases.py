"""Apache Kafka releases and what changed between them: the one table of release-dependent facts.

Owns `Release` (an exact release such as 3.6.1, ordered), `lowest_release` (the first release a request such as
`3.9` or `4` can resolve to) and `FEATURES`: every capability or rule the harness relies on that some releases
have and others lack, each with the first release that has it (and the first that no longer does), and its
source (KIP, JIRA or commit). The loader refuses an experiment that asks a release for a feature it lacks
(`feature_problem`), the backends render each release's configuration (`has`), and the checks choose a rule
by the release recorded in run.json (`has` again). docs/kafka-behaviour.md §11 lists the same table.

Pure: no I/O. A request that names a line (`3.9`: its newest release) is judged by its lowest release, so a
feature is granted to a line only when every release of the line has it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RELEASE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")


@dataclass(frozen=True, slots=True, order=True)
class Release:
    """An Apache Kafka release: major.minor.patch."""

    major: int
    minor: int = 0
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @staticmethod
    def parse(text: str) -> Release | None:
        """`3.6.1` -> Release(3, 6, 1); a line (`3.9`, `4`) -> its first release; None when not a version."""
        m = _RELEASE.match(text.strip())
        if m is None:
            return None
        return Release(int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0))


IBP = "inter.broker.protocol.version"
"""The ZooKeeper-mode broker property that pins the protocol brokers speak to each other (upgrade notes)."""


def protocol_version(release: str) -> str:
    """The `inter.broker.protocol.version` value of a release: its major.minor (`3.9.2` -> `3.9`)."""
    parsed = Release.parse(release)
    return f"{parsed.major}.{parsed.minor}" if parsed is not None else release


def lowest_release(request: str) -> Release | None:
    """The first release a request (`3.6.1`, a line `3.9`, or `4`) can resolve to."""
    return Release.parse(request)


@dataclass(frozen=True, slots=True)
class Feature:
    """Something Kafka has from `since` on (and, with `until`, no longer from that release on)."""

    name: str
    what: str
    since: Release
    source: str
    until: Release | None = None
    kraft_only: bool = False

    def available(self, release: Release) -> bool:
        return release >= self.since and (self.until is None or release < self.until)

    def why_not(self, release: Release) -> str:
        """Why `release` lacks it (call only when it does)."""
        if release < self.since:
            return f"Apache Kafka {release} has no {self.what}: it came in {self.since} ({self.source})"
        return f"Apache Kafka {release} has no {self.what}: {self.until} removed it ({self.source})"


def _r(text: str) -> Release:
    release = Release.parse(text)
    assert release is not None, text
    return release


FEATURES: dict[str, Feature] = {f.name: f for f in (
    Feature("zookeeper_mode", "ZooKeeper mode", _r("0.8"), "KIP-833: Kafka 4.0 removed ZooKeeper mode",
            until=_r("4.0")),
    Feature("kraft", "production KRaft mode", _r("3.3"), "KIP-833: KRaft marked production ready in 3.3"),
    Feature("kraft_controller_endpoints", "advertised controller listeners (endpoint discovery)", _r("3.9"),
            "KIP-853; before 3.9 a controller refuses advertised.listeners and every node dials the address "
            "in its own controller.quorum.voters", kraft_only=True),
    Feature("format_features", "kafka-storage format --feature", _r("3.8"), "KIP-1022", kraft_only=True),
    Feature("kraft_scram", "SCRAM credentials in KRaft (kafka-storage format --add-scram)", _r("3.5"),
            "KIP-900 (KAFKA-14084: SCRAM support in KRaft, 3.5)", kraft_only=True),
    Feature("describe_topic_partitions", "DescribeTopicPartitions API", _r("3.8"),
            "KIP-966 part 1 (DescribeTopicPartitions, API key 75)"),
    Feature("describe_cluster_fenced", "DescribeCluster listing fenced brokers", _r("4.0"),
            "KIP-1073 (DescribeCluster v2, include_fenced_brokers)", kraft_only=True),
    Feature("check_quorum", "check-quorum resignation of a KRaft leader cut off from the majority", _r("3.7"),
            "KAFKA-15489 (LeaderState.timeUntilCheckQuorumExpires)", kraft_only=True),
    Feature("isr_shrink_keeps_leader_epoch", "KRaft ISR shrink without a leader epoch bump", _r("3.6"),
            "KAFKA-15021 (MetadataVersion 3.6-IV0, isLeaderEpochBumpRequiredOnIsrShrink)", kraft_only=True),
    Feature("transaction_verification", "transaction partition verification (transaction.partition."
            "verification.enable)", _r("3.6"), "KIP-890 part 1"),
    Feature("transactions_v2", "transactions version 2 (transaction.version=2)", _r("4.0"), "KIP-890 part 2"),
    Feature("elr", "eligible leader replicas", _r("4.0"), "KIP-966 (eligible.leader.replicas.version)",
            kraft_only=True),
    Feature("consumer_group_protocol", "consumer group protocol (group.protocol=consumer)", _r("4.0"),
            "KIP-848, generally available in 4.0"),
)}


@dataclass(frozen=True, slots=True)
class Setting:
    """A broker property some releases lack: it came in `since` (and, with `until`, went in that release,
    `instead` naming what replaced it)."""

    name: str
    since: Release
    source: str
    until: Release | None = None
    instead: str = ""

    def problem(self, release: Release) -> str | None:
        """Why `release` ignores this property (Kafka logs unknown properties and goes on), or None."""
        if release < self.since:
            return f"Apache Kafka {release} has no broker setting {self.name}: it came in {self.since} ({self.source})"
        if self.until is not None and release >= self.until:
            return (f"Apache Kafka {release} has no broker setting {self.name}: {self.until} removed it "
                    f"({self.source})" + (f"; write {self.instead}" if self.instead else ""))
        return None


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("transaction.partition.verification.enable", _r("3.6"), "KIP-890 part 1"),
    Setting("log.message.timestamp.before.max.ms", _r("3.6"), "KIP-937"),
    Setting("log.message.timestamp.after.max.ms", _r("3.6"), "KIP-937"),
    Setting("log.message.timestamp.difference.max.ms", _r("0.10.1"), "KIP-937", until=_r("4.0"),
            instead="log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms"),
    Setting("group.consumer.session.timeout.ms", _r("3.5"), "KIP-848"),
    Setting("group.coordinator.rebalance.protocols", _r("3.7"), "KIP-848"),
    Setting("eligible.leader.replicas.enable", _r("3.7"), "KIP-966"),
    Setting("unclean.leader.election.interval.ms", _r("3.9"), "KIP-966"),
)}
"""Broker properties (`cluster.broker_config`) that some releases lack, read from Kafka's sources
(`KafkaConfig`, `ServerConfigs`, `TopicConfig` of each release tag) and upgrade notes."""


def setting_problem(request: str, name: str) -> str | None:
    """Why Kafka `request` (a release or a line, judged by its first release) would ignore broker property
    `name`, or None (a property the table does not know is taken as every release's)."""
    setting, release = SETTINGS.get(name), lowest_release(request)
    return None if setting is None or release is None else setting.problem(release)


def feature(name: str) -> Feature:
    try:
        return FEATURES[name]
    except KeyError as exc:
        raise KeyError(f"no such release feature {name!r} (features: {', '.join(FEATURES)})") from exc


def has(version: str | Release | None, name: str) -> bool:
    """Whether `version` (an exact release, a request or a Release) has feature `name`. An unknown version
    (None, or text that is not one) is taken as the newest: it has every feature not removed."""
    f = feature(name)
    release = version if isinstance(version, Release) else Release.parse(version) if version else None
    if release is None:
        return f.until is None
    return f.available(release)


def feature_problem(request: str, name: str) -> str | None:
    """Why Kafka `request` (a release or a line) cannot give feature `name`, or None when every release it may
    resolve to can."""
    release = lowest_release(request)
    f = feature(name)
    if release is None or f.available(release):
        return None
    if f.until is not None and release >= f.until:
        return f.why_not(release)
    line = request.count(".") < 2
    return f.why_not(release) + (f" (the line {request} starts at {release})" if line else "")
