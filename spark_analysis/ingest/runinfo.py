"""What the verifiers know about a run besides its history: `run.json`, read tolerantly.

Owns `RunInfo` (every key optional: a missing key is "unknown", never an error), the verify
selection (`verify.checks`: "all", check ids or families) and the `verify.allow` matching rule
(a full check id, a family, or a check id's last part: `duplicate` -> `delivery.duplicate`),
SLO parsing (seconds as numbers, or strings such as "30s", "500ms", "2m"), and the cluster mode
(`cluster.mode`: "zookeeper", the default when absent, or "kraft") with the checks that apply only
to one mode (`MODE_FAMILIES`) or to the releases that have what their rule is about (`RELEASE_FEATURES`, by
the Apache Kafka release run.json records): a check that does not apply to the run is not selected, so it
is listed under the verdict's `not_selected`, never run and never `unknown`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.history.nodes import voter_ids
from harness.model.promises import Writer
from harness.model.releases import has


class RunInfoError(HarnessError):
    """`run.json` exists but is not a JSON object."""


ZOOKEEPER = "zookeeper"
KRAFT = "kraft"
MODES = (ZOOKEEPER, KRAFT)
MODE_FAMILIES: Mapping[str, tuple[str, ...]] = {"quorum": (KRAFT,)}
"""Check families that apply only to some cluster modes (the Raft quorum exists only in KRaft)."""
RELEASE_FEATURES: Mapping[str, str] = {"txn.verification_retriable": "transaction_verification"}
"""Checks whose rule is about something only some releases do (`harness.model.releases.FEATURES`): on a release
without it the check is not selected (Kafka 3.5 verifies no transaction, so there is nothing to judge)."""

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_seconds(value: object) -> float | None:
    """Seconds from a number or a duration string ("30s", "500ms", "2m"); None when unusable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT[match.group(2)]
    return None


def _truthy(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The run's metadata as far as `run.json` tells it."""

    experiment: str | None = None
    seed: int | None = None
    backend: str | None = None
    backend_reason: str | None = None
    flavour: str | None = None
    version: str | None = None
    bugs: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    started: str | None = None
    ended: str | None = None
    status: str | None = None
    checks: tuple[str, ...] = ("all",)
    allow: tuple[str, ...] = ()
    expect_fail: tuple[str, ...] = ()
    """`verify.expect.fail`: the check ids this run is expected to fail (the experiment's `expect:`)."""
    expect_why: str = ""
    slo: Mapping[str, float] = field(default_factory=dict)
    offsets_topic_partitions: int | None = None
    unclean_election: bool = False
    """The brokers' `unclean.leader.election.enable` (a topic's own setting wins: `unclean_for`)."""
    writers: tuple[Writer, ...] = ()
    """The producers and pipelines with their promise-relevant settings (run.json `workload`; empty before it)."""
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    mode: str = ZOOKEEPER
    """The cluster mode: "zookeeper" (the default, also for run.json files written before the field) or "kraft"."""
    client: str = "librdkafka"
    """The client library the workloads ran on (run.json `client`; librdkafka for runs written before the field)."""
    client_version: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """What was tested, for report titles: Apache Kafka <version>, or the reference broker (+bugs)."""
        if self.flavour == "apache-kafka":
            return f"Apache Kafka {self.version or '(version unknown)'}"
        if self.flavour == "reference":
            text = "reference broker" + (f" {self.version}" if self.version else "")
            if self.bugs:
                text += " with bug flags " + ", ".join(self.bugs)
            return text
        return "unknown broker" + (f" {self.version}" if self.version else "")

    @property
    def client_title(self) -> str:
        """The workloads' client, for report headers: "Java client (kafka-clients 3.9.2)" or "librdkafka 2.16.0"."""
        version = self.client_version or self.versions.get(self.client) or "(version unknown)"
        return f"Java client (kafka-clients {version})" if self.client == "java" else f"librdkafka {version}"

    def unclean_for(self, topic: str) -> bool:
        """`unclean.leader.election.enable` for `topic`: its own config, else the brokers'."""
        own = self.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        return _truthy(own) if own is not None else self.unclean_election

    def writer_of(self, value: int) -> Writer | None:
        """The producer or pipeline that wrote `value` (each writes from its own `value_base` on)."""
        found = [w for w in self.writers if w.value_base is not None and w.value_base <= value]
        return max(found, key=lambda w: w.value_base or 0) if found else None

    def broker_setting(self, name: str, default: int) -> int:
        """An integer broker setting of the experiment's `cluster.broker_config` (as run.json records it), or
        Kafka's default `default` when it is not set or not an integer."""
        cluster = self.raw.get("cluster")
        config = cluster.get("broker_config") if isinstance(cluster, Mapping) else None
        value = config.get(name) if isinstance(config, Mapping) else None
        text = str(value).strip() if value is not None else ""
        return int(text) if text.isdigit() else default

    @property
    def kraft_controller_ids(self) -> frozenset[int]:
        """The dedicated KRaft controllers' node ids (`harness.history.nodes.voter_ids`: 101..100+
        `cluster.controllers`; a ZooKeeper-mode cluster has them only for a migration); empty without any, or when
        the controllers are brokers (combined)."""
        cluster = self.raw.get("cluster")
        if not isinstance(cluster, Mapping) or cluster.get("combined"):
            return frozenset()
        count = cluster.get("controllers")
        return frozenset(voter_ids(count, combined=False)) if isinstance(count, int) else frozenset()

    def is_allowed(self, check_id: str) -> bool:
        """Whether `verify.allow` exempts `check_id` from the run status."""
        return any(_matches(entry, check_id) for entry in self.allow)

    def is_named(self, check_id: str) -> bool:
        """Whether `verify.checks` names `check_id` ("all", the id, its family or its last part)."""
        return any(entry == "all" or _matches(entry, check_id) for entry in self.checks)

    def applies(self, check_id: str) -> bool:
        """Whether `check_id` applies to the run's cluster mode (`MODE_FAMILIES`; every other check applies to both)
        and to its Apache Kafka release (`RELEASE_FEATURES`; an unknown release is taken as the newest)."""
        modes = MODE_FAMILIES.get(check_id.partition(".")[0])
        feature = RELEASE_FEATURES.get(check_id)
        release = self.version if self.flavour == "apache-kafka" else None
        return (modes is None or self.mode in modes) and (feature is None or has(release, feature))

    def is_selected(self, check_id: str) -> bool:
        """Whether `check_id` runs: `verify.checks` names it and it applies to the run's cluster mode
        (a quorum check in a ZooKeeper run is not applicable: not selected, whatever `verify.checks` says)."""
        return self.is_named(check_id) and self.applies(check_id)


def _matches(entry: str, check_id: str) -> bool:
    family, _, last = check_id.partition(".")
    entry = entry.strip()
    return entry in (check_id, family, last)


def _str_tuple(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return ()


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _mode(value: object) -> str:
    """`cluster.mode` as one of MODES: "kraft" (any case) is KRaft, anything else (absent too) ZooKeeper."""
    return KRAFT if isinstance(value, str) and value.strip().lower() == KRAFT else ZOOKEEPER


def _writers(data: Mapping[str, Any]) -> tuple[Writer, ...]:
    workload = data.get("workload") if isinstance(data.get("workload"), Mapping) else {}
    assert isinstance(workload, Mapping)
    out = []
    for entry in [*(workload.get("producers") or []), *(workload.get("pipelines") or [])]:
        if not isinstance(entry, Mapping) or not entry.get("id"):
            continue
        flight, base = entry.get("max_in_flight"), entry.get("value_base")
        out.append(Writer(str(entry["id"]), str(entry.get("topic") or ""), str(entry.get("acks") or "all"),
                          entry.get("idempotence") is not False, entry.get("transactional") is True,
                          flight if isinstance(flight, int) else None, base if isinstance(base, int) else None))
    return tuple(out)


def _topic_configs(data: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    return {str(t["name"]): {str(k): str(v) for k, v in (t.get("config") or {}).items()}
            for t in data.get("topics") or [] if isinstance(t, Mapping) and t.get("name")
            and isinstance(t.get("config") or {}, Mapping)}


def run_info_from_mapping(data: Mapping[str, Any]) -> RunInfo:
    """Build a RunInfo from the parsed `run.json` (every key optional)."""
    broker = data.get("broker") if isinstance(data.get("broker"), Mapping) else {}
    verify = data.get("verify") if isinstance(data.get("verify"), Mapping) else {}
    cluster = data.get("cluster") if isinstance(data.get("cluster"), Mapping) else {}
    assert isinstance(broker, Mapping) and isinstance(verify, Mapping) and isinstance(cluster, Mapping)
    slo_raw = verify.get("slo") if isinstance(verify.get("slo"), Mapping) else {}
    assert isinstance(slo_raw, Mapping)
    slo = {str(k): s for k, v in slo_raw.items() if (s := parse_seconds(v)) is not None}
    broker_config = cluster.get("broker_config") if isinstance(cluster.get("broker_config"), Mapping) else {}
    assert isinstance(broker_config, Mapping)
    otp = cluster.get("offsets_topic_partitions", broker_config.get("offsets.topic.num.partitions"))
    client = data.get("client") if isinstance(data.get("client"), Mapping) else {}
    assert isinstance(client, Mapping)
    versions = data.get("versions") if isinstance(data.get("versions"), Mapping) else {}
    assert isinstance(versions, Mapping)
    seed = data.get("seed")
    checks = _str_tuple(verify.get("checks")) or ("all",)
    expect = verify.get("expect") if isinstance(verify.get("expect"), Mapping) else {}
    assert isinstance(expect, Mapping)
    return RunInfo(
        experiment=_opt_str(data.get("experiment")),
        seed=seed if isinstance(seed, int) else None,
        backend=_opt_str(data.get("backend")),
        backend_reason=_opt_str(data.get("backend_reason")),
        flavour=_opt_str(broker.get("flavour")),
        version=_opt_str(broker.get("version")),
        bugs=_str_tuple(broker.get("bugs")),
        versions={str(k): str(v) for k, v in versions.items()},
        started=_opt_str(data.get("started")),
        ended=_opt_str(data.get("ended")),
        status=_opt_str(data.get("status")),
        checks=checks,
        allow=_str_tuple(verify.get("allow")),
        expect_fail=_str_tuple(expect.get("fail")),
        expect_why=str(expect.get("why") or ""),
        slo=slo,
        offsets_topic_partitions=int(otp) if isinstance(otp, (int, str)) and str(otp).isdigit() else None,
        unclean_election=_truthy(broker_config.get("unclean.leader.election.enable")),
        writers=_writers(data),
        topic_configs=_topic_configs(data),
        mode=_mode(cluster.get("mode")),
        client=str(client.get("name") or "librdkafka"),
        client_version=_opt_str(client.get("version")),
        raw=dict(data),
    )


def load_run_info(run_dir: Path) -> RunInfo:
    """Read `run_dir/run.json`; a missing file gives an all-unknown RunInfo."""
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        return RunInfo()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunInfoError(f"{path}: not readable as JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise RunInfoError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return run_info_from_mapping(data)
