"""Shared helpers of the containers suite: the Apache Kafka the local images run, waiting on a condition,
Metadata through one proxy, and the containers/networks a run (or this harness) left on the engine."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

import docker
from confluent_kafka.admin import AdminClient, ClusterMetadata

from harness.cluster.containers_spec import LABEL_OWNER, LABEL_RUN
from harness.install.kafka import KafkaInstall
from tests.fixtures.podman import DockerEngine
from tests.fixtures.process_cluster import apache_kafka

T = TypeVar("T")
_QUIET = logging.getLogger("tests.containers.clients")
_QUIET.setLevel(logging.CRITICAL)


def local_kafka(engine: DockerEngine) -> KafkaInstall | None:
    """The Apache Kafka the local images run (installed into the cache when missing, or a skip quoting every
    source that failed); None where the published images run (they bring their own Kafka)."""
    return apache_kafka() if engine.local_images else None


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float, interval_s: float = 0.1) -> T:
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        try:
            value = probe()
            if value is not None and value is not False:
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last error: {last})")
        time.sleep(interval_s)


def metadata(address: str, timeout_s: float = 3.0) -> ClusterMetadata:
    """Metadata from exactly the broker behind `address` (a client->j proxy)."""
    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": address, "socket.timeout.ms": 3000,
                                              "reconnect.backoff.max.ms": 500, "logger": _QUIET}))
    return admin.list_topics(timeout=timeout_s)


def labelled(label: str) -> list[str]:
    """Names of the containers and networks on the engine carrying `label` (`key=value`)."""
    client = docker.from_env(timeout=10)
    try:
        return ([f"container {c.name}" for c in client.containers.list(all=True, filters={"label": label})]
                + [f"network {n.name}" for n in client.networks.list(filters={"label": label})])
    finally:
        client.close()


def run_leftovers(run_id: str) -> list[str]:
    return labelled(f"{LABEL_RUN}={run_id}")


def owner_leftovers(owner: str) -> list[str]:
    return labelled(f"{LABEL_OWNER}={owner}")
