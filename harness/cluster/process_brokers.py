"""The process backend's brokers: render each broker's `server.properties`, start the processes,
and decide readiness (registered in `/brokers/ids/<k>` by this incarnation, and answering a
Metadata request through its own `client->k` proxy).

Restart after a kill: the killed broker's ephemeral `/brokers/ids/<k>` lives until its ZooKeeper
session expires, and Kafka refuses to start while another session owns it (NodeExists). So
`start()` first waits for a stale registration to vanish (at most the session timeout), then
launches the broker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster.base import CLIENT, ClusterSpec, NodeId
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.process_node import ManagedProcess
from harness.cluster.render import Topology, render_server_properties
from harness.errors import BackendError, HarnessTimeout

_QUIET = logging.getLogger("harness.cluster.process.clients")
_QUIET.setLevel(logging.CRITICAL)
_HINT = "see the broker's log; check zookeeper.connect (via proxies k->zk*) and the listeners in server.properties"


class BrokerNodes:
    """Brokers 1..N of one process cluster: their processes, configs and readiness checks."""

    def __init__(
        self, spec: ClusterSpec, workdir: Path, topology: Topology, launcher: BrokerLauncher,
        registry: LeftoverRegistry, environ: Mapping[str, str], zookeeper_connect: str, stop_timeout_s: float,
    ) -> None:
        self.topology = topology
        self.stop_timeout_s = stop_timeout_s
        self.ready_timeout_s = spec.ready_timeout_s
        self._zookeeper_connect = zookeeper_connect
        self._zk: KazooClient | None = None
        self._procs: dict[int, ManagedProcess] = {}
        self._czxid: dict[int, int | None] = {}
        self.properties: dict[int, Path] = {}
        for b in topology.brokers:
            k = b.broker_id
            node_dir = workdir / f"broker-{k}"
            (node_dir / "data").mkdir(parents=True, exist_ok=True)
            (node_dir / "logs").mkdir(parents=True, exist_ok=True)
            props = node_dir / "server.properties"
            props.write_text(render_server_properties(
                topology, k, log_dirs=str(node_dir / "data"), overrides=spec.broker_config,
                reference_bugs=spec.reference_bugs), encoding="utf-8")
            self.properties[k] = props
            self._procs[k] = ManagedProcess(
                f"broker:{k}", launcher.argv(props), cwd=node_dir, log_path=node_dir / "broker.log",
                registry=registry, env=launcher.env(node_dir, environ))

    def process(self, broker_id: int) -> ManagedProcess:
        try:
            return self._procs[broker_id]
        except KeyError as exc:
            raise BackendError(f"broker:{broker_id}: no such broker (brokers {sorted(self._procs)})") from exc

    # -- ZooKeeper view -----------------------------------------------------------------------------

    def _zookeeper(self) -> KazooClient:
        if self._zk is None:
            zk = KazooClient(hosts=self._zookeeper_connect, timeout=10.0, logger=_QUIET)
            try:
                zk.start(timeout=15.0)
            except KazooTimeoutError as exc:
                zk.close()
                raise BackendError(f"cannot connect to ZooKeeper at {self._zookeeper_connect} to watch "
                                   "broker registrations") from exc
            self._zk = zk
        return self._zk

    def _registration(self, broker_id: int) -> int | None:
        """czxid of `/brokers/ids/<id>` (None when absent). Raises KazooException when ZooKeeper is away."""
        stat = self._zookeeper().exists(f"/brokers/ids/{broker_id}")
        return None if stat is None else int(stat.czxid)

    # -- operations ---------------------------------------------------------------------------------

    def start_all(self, deadline: float) -> None:
        for k, proc in self._procs.items():
            self._czxid[k] = None
            proc.start()
        for k in self._procs:
            self._wait_ready(k, deadline)

    def start(self, broker_id: int, deadline: float) -> None:
        proc = self.process(broker_id)
        if proc.is_running():
            raise BackendError(f"broker:{broker_id} is already running (pid {proc.pid}); stop or kill it first")
        stale = self._wait_stale_registration_gone(broker_id, deadline)
        self._czxid[broker_id] = stale
        proc.start()
        self._wait_ready(broker_id, deadline)

    def kill(self, broker_id: int) -> None:
        self.process(broker_id).kill()

    def stop(self, broker_id: int) -> None:
        proc = self.process(broker_id)
        if not proc.is_running():
            return
        if not proc.terminate(self.stop_timeout_s):
            raise BackendError(
                f"broker:{broker_id} did not exit within {self.stop_timeout_s:g}s of SIGTERM (controlled "
                f"shutdown), so it was SIGKILLed; log {proc.log_path} ends with:\n{proc.tail()}")

    def _wait_stale_registration_gone(self, broker_id: int, deadline: float) -> int | None:
        """Wait until a registration left by a killed incarnation expires; returns its czxid if it never
        went (then readiness requires a newer one)."""
        last: int | None = None
        while time.monotonic() < deadline:
            try:
                last = self._registration(broker_id)
            except KazooException:
                return last
            if last is None:
                return None
            time.sleep(0.1)
        return last

    def _wait_ready(self, broker_id: int, deadline: float) -> None:
        proc = self.process(broker_id)
        proxy = str(self.topology.proxy(CLIENT, NodeId.broker(broker_id)).advertised)
        timeout = max(0.0, deadline - time.monotonic())
        admin: AdminClient | None = None
        last = "not registered in /brokers/ids yet"
        registered = False
        while True:
            if not proc.is_running():
                raise BackendError(
                    f"broker:{broker_id} exited while starting ({proc.exit_description()}); "
                    f"log {proc.log_path} ends with:\n{proc.tail()}\nhint: {_HINT}")
            if not registered:
                try:
                    czxid = self._registration(broker_id)
                    registered = czxid is not None and czxid != self._czxid.get(broker_id)
                    if czxid is not None and not registered:
                        last = "/brokers/ids still holds the previous incarnation's registration"
                except KazooException as exc:
                    last = f"ZooKeeper unavailable: {type(exc).__name__}"
            if registered:
                admin = admin or AdminClient(cast(dict[str, Any], {
                    "bootstrap.servers": proxy, "socket.timeout.ms": 5000, "reconnect.backoff.ms": 100,
                    "reconnect.backoff.max.ms": 500, "logger": _QUIET}))
                try:
                    md = admin.list_topics(timeout=1.0)
                    if (md.orig_broker_name or "").startswith(proxy) and broker_id in md.brokers:
                        return
                    last = f"Metadata answered by {md.orig_broker_name} listing brokers {sorted(md.brokers)}"
                except KafkaException as exc:
                    last = f"registered; Metadata via {proxy} failed: {exc}"
            if time.monotonic() >= deadline:
                raise HarnessTimeout(
                    f"broker:{broker_id} (pid {proc.pid}) to register in /brokers/ids and answer Metadata via "
                    f"proxy client->{broker_id} ({proxy})", timeout,
                    last_seen=f"{last}; log {proc.log_path} ends with:\n{proc.tail()}", hint=_HINT)
            time.sleep(0.1)

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for b in self.topology.brokers:
            proc = self._procs[b.broker_id]
            out[str(NodeId.broker(b.broker_id))] = {
                "pid": proc.pid, "running": proc.is_running(), "starts": proc.starts,
                "ports": dict(b.ports),
                "advertised": {n: str(a) for n, a in self.topology.advertised_listeners(b.broker_id).items()},
                "config": str(self.properties[b.broker_id]), "log": str(proc.log_path),
                "argv": list(proc.argv),
            }
        return out

    def close(self) -> list[tuple[str, BaseException]]:
        """Kill every broker (SIGKILL: teardown needs no controlled shutdown) and drop the ZooKeeper view."""
        failures: list[tuple[str, BaseException]] = []
        for k, proc in self._procs.items():
            try:
                proc.kill()
            except Exception as exc:
                failures.append((f"kill broker:{k}", exc))
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception as exc:
                failures.append(("close the ZooKeeper client watching registrations", exc))
            self._zk = None
        return failures
