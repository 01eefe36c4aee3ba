"""Teardown of the containers backend: nothing labelled with a run is left on the engine after down(),
after a bring-up interrupted by Ctrl-C, and `clean_leftovers()` removes what a dead harness left."""

from __future__ import annotations

import contextlib
from pathlib import Path

import docker
import pytest

from harness.cluster.base import ClusterSpec
from harness.cluster.containers import ContainersBackend
from harness.cluster.containers_engine import owner_label
from harness.cluster.containers_spec import LABEL_OWNER, LABEL_RUN, LOCAL_IMAGES
from harness.cluster.readiness import BrokerReadiness
from tests.containers.helpers import labelled, owner_leftovers, run_leftovers
from tests.fixtures.podman import DockerEngine

pytestmark = pytest.mark.containers
SMALL = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=60.0)


def test_down_removes_every_container_and_the_network(tmp_path: Path) -> None:
    cluster = ContainersBackend().up(SMALL, tmp_path)
    run = cluster.run_id
    assert len(run_leftovers(run)) == 4  # toxiproxy, zk1, broker1, network
    cluster.down()
    assert run_leftovers(run) == []
    assert (tmp_path / "broker-1" / "container.log").stat().st_size > 0  # logs kept for the run bundle
    if cluster.kafka is not None:  # Apache Kafka in the local image writes its log files there too
        assert (tmp_path / "broker-1" / "logs" / "server.log").stat().st_size > 0


def test_bring_up_interrupted_by_ctrl_c_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(BrokerReadiness, "wait_ready", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ContainersBackend().up(SMALL, tmp_path)
    assert owner_leftovers(owner_label()) == []


def test_clean_leftovers_removes_runs_of_dead_harnesses_only(docker_env: DockerEngine) -> None:
    image = LOCAL_IMAGES["toxiproxy"] if docker_env.local_images else "ghcr.io/shopify/toxiproxy:2.9.0"
    host, pid, created = owner_label().split("/")
    dead = {LABEL_RUN: "dead-run-test", LABEL_OWNER: f"{host}/{pid}/{float(created) - 1000:.3f}"}
    alive = {LABEL_RUN: "live-run-test", LABEL_OWNER: owner_label()}
    client = docker.from_env(timeout=30)
    made = []
    try:
        net = client.networks.create("kc-dead-run-test", labels=dead)
        made.append(net)
        for name, labels in (("kc-dead-run-test-c", dead), ("kc-live-run-test-c", alive)):
            made.append(client.containers.create(image, ["/bin/sh"], name=name, labels=labels))
        cleaned = ContainersBackend().clean_leftovers()
        assert {str(c.name) for c in cleaned} >= {"kc-dead-run-test-c", "kc-dead-run-test"}
        assert labelled(f"{LABEL_RUN}=dead-run-test") == []
        assert labelled(f"{LABEL_RUN}=live-run-test") == ["container kc-live-run-test-c"]
    finally:
        for obj in made:
            with contextlib.suppress(docker.errors.NotFound):
                obj.remove(force=True) if hasattr(obj, "status") else obj.remove()
        client.close()
