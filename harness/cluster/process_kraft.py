"""The process backend's KRaft nodes (Apache Kafka 3.3+ / 4.x): dedicated controllers 101..100+C and
brokers 1..N (or combined voters, brokers 1..C with `process.roles=broker,controller`).

Owns their rendered `server.properties` (`render_kraft`), the one-off `kafka.tools.StorageTool format`
of every node's log directory with the cluster id of the spec (run in parallel, before the first
start, as `kafka-storage format` does), their processes, and readiness:
- a controller is ready when its own controller listener accepts connections (the quorum then elects a
  leader within `controller.quorum.election.timeout.ms`);
- a broker is ready when it answers Metadata through its own `client->k` proxy listing itself: KRaft
  lists only registered, unfenced brokers, so this also says the quorum has a leader that accepted it.
A restart needs no wait for a stale registration (KRaft brokers register with a new incarnation id).

In the ZooKeeper-to-KRaft migration's cluster (`ClusterSpec.migrating`) it owns the controllers only, rendered for
the migration (`render_migration`), formatted with the id the cluster writes to ZooKeeper's `/cluster/id`, and
started by whoever migrates, not at bring-up; the brokers are `process_brokers`'.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.cluster.base import CLIENT, ClusterSpec, NodeId
from harness.cluster.clocks import faketime_env
from harness.cluster.disks import kafka_log_dirs
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.process_node import ManagedProcess
from harness.cluster.readiness import BrokerReadiness
from harness.cluster.render import Topology
from harness.cluster.render_kraft import (
    kraft_cluster_id,
    render_kraft_broker,
    render_kraft_controller,
    storage_format_args,
)
from harness.cluster.render_migration import render_migration_controller
from harness.cluster.security import ClusterSecurity, access
from harness.errors import BackendError
from harness.waiting import wait_until

_HINT = ("see the node's log (broker.log / controller.log); check controller.quorum.voters (via the proxies "
         "k->101...) and the listeners in server.properties")
FORMAT_TIMEOUT_S = 120.0


class KraftNodes:
    """Every KRaft node of one process cluster: configs, storage format, processes, readiness."""

    def __init__(self, spec: ClusterSpec, workdir: Path, topology: Topology, launcher: BrokerLauncher,
                 registry: LeftoverRegistry, environ: Mapping[str, str], stop_timeout_s: float,
                 security: ClusterSecurity | None = None) -> None:
        self.topology = topology
        self.security = security
        self.launcher = launcher
        self.stop_timeout_s = stop_timeout_s
        self.cluster_id = spec.cluster_id or kraft_cluster_id(0)
        self.features = spec.features
        self._registry = registry
        self._environ = environ
        self._fake_clocks = spec.fake_clocks
        self._ready = BrokerReadiness("", hint=_HINT, security=access(security, "admin"))
        self._procs: dict[NodeId, ManagedProcess] = {}
        self.properties: dict[NodeId, Path] = {}
        self._launchers: dict[NodeId, BrokerLauncher] = {}
        """The nodes an upgrade put on another release (`reconfigure`)."""
        self._log_dirs: dict[NodeId, str] = {}
        self._overrides = spec.broker_config
        render_controller = render_migration_controller if spec.migrating else render_kraft_controller
        for c in topology.controllers:
            if c.node.role == "controller":
                self._add(c.node, kafka_log_dirs(workdir, c.node, spec.log_dirs), render_controller,
                          spec.broker_config)
        for b in () if spec.migrating else topology.brokers:
            node = NodeId.broker(b.broker_id)
            self._add(node, kafka_log_dirs(workdir, node, spec.log_dirs), render_kraft_broker, spec.broker_config)

    def _add(self, node: NodeId, dirs: tuple[Path, ...], render: Callable[..., str],
             overrides: Mapping[str, str]) -> None:
        node_dir = dirs[0].parent
        for data in dirs:
            data.mkdir(parents=True, exist_ok=True)
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        props = node_dir / "server.properties"
        self._log_dirs[node] = ",".join(map(str, dirs))
        text = render(self.topology, node.id, log_dirs=self._log_dirs[node], overrides=overrides,
                      advertise_controllers=self.launcher.advertises_controllers, security=self.security)
        props.write_text(text, encoding="utf-8")
        self.properties[node] = props
        log = node_dir / ("controller.log" if node.role == "controller" else "broker.log")
        env = self.launcher.env(node_dir, self._environ) | (faketime_env(node_dir) if self._fake_clocks else {})
        self._procs[node] = ManagedProcess(str(node), self.launcher.argv(props), cwd=node_dir, log_path=log,
                                           registry=self._registry, env=env)

    def reconfigure(self, node: NodeId, launcher: BrokerLauncher | None) -> str:
        """From its next start, `node` runs `launcher`'s release (an upgrade's) with the same properties and data;
        what it will run, in words."""
        proc = self.process(node)
        if proc.is_running():
            raise BackendError(f"{node} is running (pid {proc.pid}); stop it before it changes release")
        if launcher is not None:
            self._launchers[node] = launcher
            proc.argv = tuple(launcher.argv(self.properties[node]))
        return f"Apache Kafka {self._launchers.get(node, self.launcher).kafka.version}"

    def end_migration(self, node: NodeId) -> str:
        """From its next start, a migration's controller `node` runs without the migration and ZooKeeper (Kafka's
        migration docs, the last step: it then finalizes the migration); what it will run, in words."""
        proc = self.process(node)
        if proc.is_running():
            raise BackendError(f"{node} is running (pid {proc.pid}); stop it before it leaves the migration")
        props = self.properties[node]
        props.write_text(render_kraft_controller(
            self.topology, node.id, log_dirs=self._log_dirs[node], overrides=self._overrides,
            advertise_controllers=self.launcher.advertises_controllers, security=self.security), encoding="utf-8")
        return f"Apache Kafka {self._launchers.get(node, self.launcher).kafka.version}, KRaft only (migration ended)"

    def process(self, node: NodeId) -> ManagedProcess:
        try:
            return self._procs[node]
        except KeyError as exc:
            raise BackendError(f"{node}: no such KRaft node (nodes {', '.join(map(str, self._procs))})") from exc

    # -- bring-up ---------------------------------------------------------------------------------

    def format_storage(self, deadline: float) -> None:
        """`StorageTool format -t <cluster id> -c <properties>` for every node at once; an error names the
        node and shows the end of the tool's output."""
        tools: list[tuple[NodeId, ManagedProcess]] = []
        failed: list[str] = []
        try:
            for node, props in self.properties.items():
                argv = self.launcher.tool_argv(props.parent / "logs",
                                               *storage_format_args(self.cluster_id, str(props), self.features,
                                                                    self.security))
                tool = ManagedProcess(f"format {node}", argv, cwd=props.parent, log_path=props.parent / "format.log",
                                      registry=self._registry, env=self.launcher.env(props.parent, self._environ))
                tools.append((node, tool))
                tool.start()
            for node, tool in tools:
                code = tool.wait(max(1.0, min(FORMAT_TIMEOUT_S, deadline - time.monotonic())))
                if code != 0:
                    what = "did not finish in time" if code is None else f"exited {code}"
                    failed.append(f"{node}: kafka-storage format {what}; {tool.log_path} ends with:\n{tool.tail(8)}")
        finally:
            for _, tool in tools:
                tool.kill()
        if failed:
            raise BackendError("formatting the KRaft log directories failed:\n" + "\n".join(failed))

    def start_all(self, deadline: float) -> None:
        """Controllers first (the brokers register with them), then the brokers; wait until all are ready."""
        for node, proc in self._procs.items():
            if node.role == "controller":
                proc.start()
        for node, proc in self._procs.items():
            if node.role == "broker":
                proc.start()
        for node in self._procs:
            self._wait_ready(node, deadline)

    # -- operations ---------------------------------------------------------------------------------

    def start(self, node: NodeId, deadline: float) -> None:
        proc = self.process(node)
        if proc.is_running():
            raise BackendError(f"{node} is already running (pid {proc.pid}); stop or kill it first")
        proc.start()
        self._wait_ready(node, deadline)

    def kill(self, node: NodeId) -> None:
        self.process(node).kill()

    def stop(self, node: NodeId) -> None:
        proc = self.process(node)
        if not proc.is_running():
            return
        if not proc.terminate(self.stop_timeout_s):
            raise BackendError(
                f"{node} did not exit within {self.stop_timeout_s:g}s of SIGTERM (controlled shutdown), so it "
                f"was SIGKILLed; log {proc.log_path} ends with:\n{proc.tail()}")

    def _wait_ready(self, node: NodeId, deadline: float) -> None:
        proc = self.process(node)
        who = f"{node} (pid {proc.pid}, log {proc.log_path})"
        if node.role == "controller":
            voter = next(c for c in self.topology.controllers if c.node == node)
            _wait_listening(who, voter.own.host, voter.own.port, deadline, proc)
            return
        proxy = str(self.topology.proxy(CLIENT, node).advertised)
        self._ready.wait_ready(node.id, proxy, deadline, who=who, alive=proc.is_running,
                                  exited=proc.exit_description, tail=proc.tail)

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for node, proc in self._procs.items():
            entry: dict[str, object] = {
                "pid": proc.pid, "running": proc.is_running(), "starts": proc.starts,
                "config": str(self.properties[node]), "log": str(proc.log_path), "argv": list(proc.argv)}
            if node.role == "broker":
                b = self.topology.broker(node.id)
                entry["ports"] = dict(b.ports)
                entry["advertised"] = {n: str(a) for n, a in self.topology.advertised_listeners(node.id).items()}
            voter = next((c for c in self.topology.controllers if c.node == node), None)
            if voter is not None:
                entry["controller_listeners"] = {f"CTRL{d.id}": str(a)
                                                 for d, a in self.topology.controller_advertised(voter).items()}
                entry["voters"] = {str(k): str(v) for k, v in self.topology.voter_addresses(node).items()}
            out[str(node)] = entry
        return out

    def close(self) -> list[tuple[str, BaseException]]:
        """Kill every node (SIGKILL: teardown needs no controlled shutdown)."""
        failures: list[tuple[str, BaseException]] = []
        for node, proc in self._procs.items():
            try:
                proc.kill()
            except Exception as exc:
                failures.append((f"kill {node}", exc))
        return failures


def _wait_listening(who: str, host: str, port: int, deadline: float, proc: ManagedProcess) -> None:
    def listening() -> bool:
        if not proc.is_running():
            raise BackendError(f"{who} exited while starting ({proc.exit_description()}); its log ends with:\n"
                               f"{proc.tail()}\nhint: {_HINT}")
        with socket.create_connection((host, port), timeout=1.0):
            return True

    wait_until(f"{who} to accept connections on its CONTROLLER listener {host}:{port}", listening, deadline=deadline,
               retry_on=(OSError,), last_seen=lambda last: f"{last}; its log ends with:\n{proc.tail()}", hint=_HINT)
