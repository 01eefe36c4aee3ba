"""The containers backend's part of a secured bring-up (`cluster.security`): which images can run it, the run's
certificates made for the names the nodes dial inside the network as well as the host's, and the SCRAM credentials
in ZooKeeper before the brokers start, run from the host against ZooKeeper's published port with the release's own
jars (the process backend's steps, `process_security`, with a registry of their own so nothing outlives them).
The node containers mount the certificates read-only at their own path (`containers_spec.security_mounts`); KRaft's
credentials go in when the log directories are formatted (`containers_kraft.format_spec`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.containers_kraft import node_alias
from harness.cluster.containers_spec import TOXIPROXY_HOST, RoleImage
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.process_security import create_zookeeper_users
from harness.cluster.security import ClusterSecurity, issue
from harness.errors import ConfigError


def check_images(spec: ClusterSpec, images: Mapping[str, RoleImage]) -> None:
    """A secured cluster runs Apache Kafka from the cache in the local image (the harness renders its listeners and
    mounts its certificates); a published image's own configuration is refused before anything starts."""
    kafka = images["kafka"]
    if spec.security.enabled and not kafka.local:
        raise ConfigError(f"containers backend: cluster.security ({spec.security.describe()}) needs the local Kafka "
                          f"image (Apache Kafka from the cache), not {kafka.image}; set cluster.images.kafka: local "
                          f"or KAFKA_CHAOS_LOCAL_IMAGES=1")


def secure(spec: ClusterSpec, workdir: Path, nodes: Iterable[NodeId], host_ip: str) -> ClusterSecurity | None:
    """The run's security material under `workdir/security`, each node's certificate valid for the host's address
    (clients on the host, through the published proxies), `toxiproxy` (every node-to-node link) and the node
    aliases; None for a plaintext cluster."""
    if not spec.security.enabled:
        return None
    nodes = tuple(nodes)
    names = (host_ip, TOXIPROXY_HOST, *(node_alias(n) for n in nodes if n.role != "zookeeper"))
    return issue(spec.security, workdir / "security", nodes, kraft=spec.kraft, hosts=names)


def create_users_in_zookeeper(security: ClusterSecurity, launcher: BrokerLauncher, zookeeper_connect: str,
                              workdir: Path, environ: Mapping[str, str], deadline: float) -> None:
    """The SCRAM users in ZooKeeper (`zookeeper_connect`: its published ports), by host processes that a registry
    of their own kills if they outlive the step."""
    registry = LeftoverRegistry()
    try:
        create_zookeeper_users(security, launcher, zookeeper_connect, workdir, registry, environ, deadline)
    finally:
        registry.close()
