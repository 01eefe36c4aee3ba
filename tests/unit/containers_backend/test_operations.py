"""Fault -> container / Toxiproxy operation mapping of the containers backend, checked against recording
stand-ins for the Docker container objects and the Toxiproxy API (no Docker engine runs in unit tests;
the real engine path is `tests/containers/`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cluster.base import CLIENT, ClusterSpec, NodeId
from harness.cluster.containers import ContainersBackend, ContainersCluster
from harness.cluster.containers_engine import NodeContainer, owner_alive, owner_label
from harness.cluster.containers_spec import ContainerSpec, container_topology, resolve_images
from harness.cluster.links import LinkGraph
from harness.errors import BackendError
from harness.faults.catalog import CATALOG
from harness.faults.resolve import isolate_links


class RecordingDockerContainer:
    """Stands in for docker SDK's Container: records calls, keeps a status."""

    def __init__(self, calls: list[str], name: str) -> None:
        self.calls, self.name = calls, name
        self.status = "running"
        self.attrs: dict[str, Any] = {"State": {"ExitCode": 0}}
        self.id = name

    def reload(self) -> None:
        pass

    def kill(self, signal: str) -> None:
        self.calls.append(f"kill {self.name} {signal}")
        self.status, self.attrs["State"]["ExitCode"] = "exited", 137

    def stop(self, timeout: int) -> None:
        self.calls.append(f"stop {self.name} timeout={timeout}")
        self.status, self.attrs["State"]["ExitCode"] = "exited", 0

    def start(self) -> None:
        self.calls.append(f"start {self.name}")
        self.status = "running"

    def pause(self) -> None:
        self.calls.append(f"pause {self.name}")
        self.status = "paused"

    def unpause(self) -> None:
        self.calls.append(f"unpause {self.name}")
        self.status = "running"

    def logs(self, tail: int | None = None) -> bytes:
        return b"log line\n"

    def remove(self, force: bool, v: bool) -> None:
        self.calls.append(f"remove {self.name}")


class _Tc:
    def __init__(self, container: RecordingDockerContainer) -> None:
        self._container = container


class RecordingToxiproxy:
    """Stands in for ToxiproxyClient: records proxy operations by name."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def disable(self, name: str) -> None:
        self.calls.append(f"disable {name}")

    def enable(self, name: str) -> None:
        self.calls.append(f"enable {name}")

    def add_toxic(self, proxy: str, kind: str, attrs: dict[str, int], **kw: Any) -> Any:
        self.calls.append(f"toxic {proxy} {kind} {sorted(attrs.items())} {kw['stream']}")
        return type("T", (), {"name": f"{kind}_x"})()

    def remove_toxic(self, proxy: str, name: str) -> None:
        self.calls.append(f"untoxic {proxy} {name}")

    def close(self) -> None:
        pass


def _cluster(tmp_path: Path, calls: list[str]) -> ContainersCluster:
    spec = ClusterSpec(brokers=3, zookeepers=1)
    images = resolve_images(spec, {})
    cluster = ContainersCluster(spec, tmp_path, images, backend=ContainersBackend(environ={}, stop_timeout_s=7))
    for node in cluster.nodes:
        name = f"kc-{node.role}{node.id}"
        nc = NodeContainer(ContainerSpec(name, str(node), "img", name), None, tmp_path / name, 7)
        nc._tc = _Tc(RecordingDockerContainer(calls, name))
        cluster._containers[node] = nc
    cluster.topology = container_topology(3, 1, "127.0.0.1", {1: 1, 2: 2, 3: 3})
    cluster._toxi_client = RecordingToxiproxy(calls)  # type: ignore[assignment]
    return cluster


def test_every_catalogue_fault_kind_has_a_container_operation() -> None:
    for kind in CATALOG.values():
        assert kind.spec.backends["containers"]


def test_kill_is_docker_kill_sigkill_and_start_is_docker_start(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    c.kill(NodeId.broker(2))
    assert calls == ["kill kc-broker2 SIGKILL"] and not c.is_running(NodeId.broker(2))
    c.kill(NodeId.broker(2))  # not running: no-op
    assert calls == ["kill kc-broker2 SIGKILL"]
    c.kill(NodeId.zookeeper(1))
    assert calls[-1] == "kill kc-zookeeper1 SIGKILL"


def test_stop_is_docker_stop_with_the_stop_timeout(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    c.stop(NodeId.broker(1))
    assert calls == ["stop kc-broker1 timeout=7"]


def test_pause_resume_are_docker_pause_unpause_and_paused_counts_as_running(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    c.pause(NodeId.broker(3))
    assert c.is_running(NodeId.broker(3))
    c.resume(NodeId.broker(3))
    assert calls == ["pause kc-broker3", "unpause kc-broker3"]


def test_kill_of_a_paused_node_unpauses_first_so_the_signal_lands(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    c.pause(NodeId.broker(1))
    c.kill(NodeId.broker(1))
    assert calls == ["pause kc-broker1", "unpause kc-broker1", "kill kc-broker1 SIGKILL"]


def test_isolate_zookeeper_disables_the_brokers_zookeeper_proxies(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    for src, dst in isolate_links(NodeId.broker(2), LinkGraph((1, 2, 3), (1,)), zookeeper_only=True):
        c.link(src, dst).disable()
    assert calls == ["disable 2->zk1"]


def test_isolate_disables_every_link_of_the_broker(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    for src, dst in isolate_links(NodeId.broker(1), LinkGraph((1, 2, 3), (1,))):
        c.link(src, dst).disable()
    assert sorted(calls) == sorted(["disable 1->zk1", "disable 1->2", "disable 2->1", "disable 1->3",
                                    "disable 3->1", "disable client->1"])


def test_toxics_go_to_the_links_proxy_with_toxiproxy_attribute_names(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    link = c.link(NodeId.broker(1), NodeId.broker(3))
    name = link.add_toxic("latency", {"latency": 200, "jitter": 50}, stream="upstream")
    link.remove_toxic(name)
    assert calls == ["toxic 1->3 latency [('jitter', 50), ('latency', 200)] upstream", "untoxic 1->3 latency_x"]
    c.link(CLIENT, NodeId.broker(2)).add_toxic("timeout", {"timeout": 0})
    assert calls[-1] == "toxic client->2 timeout [('timeout', 0)] downstream"


def test_links_that_have_no_proxy_are_refused(tmp_path: Path) -> None:
    c = _cluster(tmp_path, [])
    with pytest.raises(Exception, match="no proxy"):
        c.link(NodeId.broker(1), NodeId.broker(1))
    with pytest.raises(Exception, match="ZooKeeper members never open"):
        c.link(NodeId.zookeeper(1), NodeId.broker(1))


def test_unknown_node_and_torn_down_cluster_name_the_node(tmp_path: Path) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls)
    with pytest.raises(BackendError, match="broker:9"):
        c.kill(NodeId.broker(9))
    c.down()
    assert sorted(x for x in calls if x.startswith("remove")) == sorted(
        ["remove kc-broker1", "remove kc-broker2", "remove kc-broker3", "remove kc-zookeeper1"])
    with pytest.raises(BackendError, match="torn down"):
        c.kill(NodeId.broker(1))


def test_owner_label_names_this_live_process_and_a_dead_one_is_seen_dead() -> None:
    label = owner_label()
    assert owner_alive(label) is True
    host, pid, created = label.split("/")
    assert owner_alive(f"{host}/{pid}/{float(created) - 100:.3f}") is False
    assert owner_alive(f"other-host-xyz/{pid}/{created}") is None
