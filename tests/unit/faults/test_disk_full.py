"""`disk_full`: what the kind asks of the cluster and in which order (on a fake cluster that records calls; the
real fill of a tmpfs log directory and Kafka's reaction are in
tests/integration/process_backend/test_faults_below_the_network_on_apache_kafka.py), and what the loader refuses."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster.base import NodeId
from harness.cluster.links import LinkGraph
from harness.errors import HarnessError, ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.cluster_fields import cluster_to_dict
from harness.faults.inject import FaultInjector
from harness.faults.schedule import plan
from harness.history.jsonl import record_of
from harness.history.state import ClusterState
from tests.unit.faults.support import inject_and_heal

EXPERIMENT = """name: d
duration: 30s
topics: [{name: t}]
cluster: {brokers: 3%s}
schedule:
  - {at: 1s, fault: disk_full, target: '%s', duration: 5s}
"""


def _text(cluster_keys: str, target: str = "broker:2", params: str = "") -> str:
    text = EXPERIMENT % (cluster_keys, target)
    return text.replace("duration: 5s}", f"duration: 5s, params: {{{params}}}}}") if params else text


class RecordingDisks:
    """A cluster double that records the disk calls; `exits` says whether the node halted while its disk was full."""

    def __init__(self, exits: bool) -> None:
        self.calls: list[str] = []
        self.exits = exits

    def fill_disk(self, node: NodeId, directory: int = 0) -> int:
        self.calls.append(f"fill {node} dir {directory}")
        return 1

    def free_disk(self, node: NodeId, directory: int = 0) -> None:
        self.calls.append(f"free {node} dir {directory}")

    def stop(self, node: NodeId) -> None:
        self.calls.append(f"stop {node}")

    def is_running(self, node: NodeId) -> bool:
        return not self.exits

    def start(self, node: NodeId) -> None:
        self.calls.append(f"start {node}")


def _inject(cluster: object, cluster_keys: str = ", log_dir_mb: 64", params: str = "") -> list[dict[str, Any]]:
    return inject_and_heal(_text(cluster_keys, params=params), cluster, "d.yaml")


def test_disk_full_fills_the_node_and_the_heal_frees_it_then_starts_the_node_that_halted() -> None:
    cluster = RecordingDisks(exits=True)
    events = _inject(cluster)
    assert cluster.calls == ["fill broker:2 dir 0", "free broker:2 dir 0", "start broker:2"]
    assert events[0]["effect"]["nodes"] == [{"role": "broker", "id": 2}] and events[0]["effect"]["down"] is False
    assert events[-1]["type"] == "fault.end" and not events[-1].get("heal_errors")


def test_a_node_that_kept_running_on_its_other_log_directory_is_restarted_to_bring_the_failed_one_back() -> None:
    """KIP-112: a failed log directory stays offline until the broker restarts."""
    cluster = RecordingDisks(exits=False)
    _inject(cluster, ", log_dirs: 2, log_dir_mb: 64", "dir: 1")
    assert cluster.calls == ["fill broker:2 dir 1", "free broker:2 dir 1", "stop broker:2", "start broker:2"]


def test_a_log_directory_the_nodes_do_not_have_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match=r"schedule\[0\]\.params\.dir: the nodes have 2 log directories"):
        load_experiment_text(_text(", log_dirs: 2, log_dir_mb: 64", params="dir: 2"), "d.yaml")


def test_a_cluster_without_size_limited_log_directories_is_told_why() -> None:
    class Plain:
        def is_running(self, node: NodeId) -> bool:
            return True

    with pytest.raises(HarnessError, match=r"cluster.log_dir_mb; this cluster \(Plain\) has no size-limited"):
        _inject(Plain())


def test_disk_full_without_log_dir_mb_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match=r"d.yaml:6:\d+: schedule\[0\].fault: .*cluster.log_dir_mb"):
        load_experiment_text(EXPERIMENT % ("", "broker:2"), "d.yaml")


def test_a_log_dir_too_small_for_kafka_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"cluster.log_dir_mb: .*at least 32 MB"):
        load_experiment_text(EXPERIMENT % (", log_dir_mb: 8", "broker:2"), "d.yaml")


def test_disk_full_on_a_zookeeper_member_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"schedule\[0\]"):
        load_experiment_text(EXPERIMENT % (", log_dir_mb: 64", "zookeeper:1"), "d.yaml")


def test_log_dir_mb_round_trips_and_is_left_out_when_unset() -> None:
    exp = load_experiment_text(EXPERIMENT % (", log_dirs: 2, log_dir_mb: 64", "broker:2"), "d.yaml")
    assert (exp.cluster.log_dirs, exp.cluster.log_dir_mb) == (2, 64)
    assert (cluster_to_dict(exp.cluster)["log_dirs"], cluster_to_dict(exp.cluster)["log_dir_mb"]) == (2, 64)
    assert not {"log_dirs", "log_dir_mb"} & set(cluster_to_dict(load_experiment_text(
        EXPERIMENT.replace("  - {at: 1s, fault: disk_full, target: '%s', duration: 5s}\n", "  []\n")
        .replace("schedule:\n  []", "schedule: []") % "", "d.yaml").cluster))


def test_at_teardown_disk_full_ends_without_starting_the_halted_node() -> None:
    (fault,) = plan(load_experiment_text(EXPERIMENT % (", log_dir_mb: 64", "broker:2"), "d.yaml"))
    cluster = RecordingDisks(exits=True)
    events: list[dict[str, Any]] = []
    injector = FaultInjector(cluster, ClusterState(), LinkGraph((1, 2, 3), (1,)),  # type: ignore[arg-type]
                             lambda e: events.append(record_of(e)))
    assert injector.inject(fault)
    assert injector.heal_all(teardown=True) == []
    assert cluster.calls == ["fill broker:2 dir 0"] and events[-1]["left_down"] is True
