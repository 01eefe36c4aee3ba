"""The process backend's part of a secured bring-up (`cluster.security`; its ZooKeeper users and ACL steps are the
containers backend's too, `containers_security`): the run's certificates and users
(`harness.cluster.security.issue`) before any node is rendered, the SCRAM credentials in ZooKeeper before the
brokers start (ZooKeeper mode: Kafka's `kafka-configs --zookeeper`, run with the release's own jars, as Kafka's
docs prescribe for the credentials inter-broker SASL needs), and the workloads' ACLs once the brokers answer
(`authorizer: true`). KRaft's credentials go in when the log directories are formatted (`render_kraft`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.process_node import ManagedProcess
from harness.cluster.security import ClusterSecurity, client_acls, issue
from harness.errors import BackendError

TOOL_TIMEOUT_S = 60.0


def secure(spec: ClusterSpec, workdir: Path, nodes: Iterable[NodeId]) -> ClusterSecurity | None:
    """The run's security material under `workdir/security`, or None for a plaintext cluster."""
    if not spec.security.enabled:
        return None
    return issue(spec.security, workdir / "security", nodes, kraft=spec.kraft)


def create_zookeeper_users(security: ClusterSecurity, launcher: BrokerLauncher, zookeeper_connect: str,
                           workdir: Path, registry: LeftoverRegistry, environ: Mapping[str, str],
                           deadline: float) -> None:
    """Each SCRAM user's credential in ZooKeeper (`kafka.admin.ConfigCommand --zookeeper`), one after another;
    a failure names the user and shows the end of the tool's output."""
    logs = workdir / "security" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for args in security.zookeeper_scram_args(zookeeper_connect):
        user = args[-1]
        tool = ManagedProcess(f"kafka-configs {user}", launcher.tool_argv(logs, *args), cwd=logs,
                              log_path=logs / f"scram-{user}.log", registry=registry,
                              env=launcher.env(logs, environ))
        try:
            tool.start()
            code = tool.wait(max(1.0, min(TOOL_TIMEOUT_S, deadline - time.monotonic())))
        finally:
            tool.kill()
        if code != 0:
            what = "did not finish in time" if code is None else f"exited {code}"
            raise BackendError(f"creating the SCRAM credential of user {user!r} in ZooKeeper ({zookeeper_connect}) "
                               f"failed: kafka-configs {what}; {tool.log_path} ends with:\n{tool.tail(8)}")


def grant_client(security: ClusterSecurity, bootstrap_servers: str, deadline: float) -> None:
    """Under the authorizer, the workloads' user gets its ACLs (`security.client_acls`) through the admin."""
    if not security.spec.authorizer:
        return
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap_servers,
                                                   **security.access("admin").librdkafka()}
    try:
        client_acls(config, security.client.username, max(5.0, deadline - time.monotonic()))
    except Exception as exc:
        raise BackendError(f"granting user {security.client.username!r} its ACLs via {bootstrap_servers} failed: "
                           f"{exc}") from exc
