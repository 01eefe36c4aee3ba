"""The process backend's brokers: render each broker's `server.properties`, start the processes,
and decide readiness (registered in `/brokers/ids/<k>` by this incarnation, and answering a
Metadata request through its own `client->k` proxy).

`reconfigure` sets what a stopped broker starts as next: another release's jars, or other broker properties
(the `upgrade` and `finalize_upgrade` operations), or its phase in the ZooKeeper-to-KRaft migration
(`render_migration.BrokerPhase`): `migrating`, a ZooKeeper-mode broker that also registers with the KRaft
controllers, or `kraft`, a KRaft broker on the same data, ready when Metadata lists it (no ZooKeeper registration).

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

from harness.cluster.base import CLIENT, ClusterSpec, NodeId
from harness.cluster.clocks import faketime_env
from harness.cluster.disks import kafka_log_dirs
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.process_node import ManagedProcess
from harness.cluster.readiness import BrokerReadiness
from harness.cluster.render import Topology, apply_overrides, render_server_properties
from harness.cluster.render_kraft import render_kraft_broker
from harness.cluster.render_migration import HEADER as MIGRATION_HEADER
from harness.cluster.render_migration import BrokerPhase, kraft_overrides, migration_broker_properties
from harness.cluster.security import ClusterSecurity, access
from harness.errors import BackendError

_HINT = "see the broker's log; check zookeeper.connect (via proxies k->zk*) and the listeners in server.properties"


class BrokerNodes:
    """Brokers 1..N of one process cluster: their processes, configs and readiness checks."""

    def __init__(
        self, spec: ClusterSpec, workdir: Path, topology: Topology, launcher: BrokerLauncher,
        registry: LeftoverRegistry, environ: Mapping[str, str], zookeeper_connect: str, stop_timeout_s: float,
        security: ClusterSecurity | None = None,
    ) -> None:
        self.topology = topology
        self.stop_timeout_s = stop_timeout_s
        self.ready_timeout_s = spec.ready_timeout_s
        self.security = security
        self._ready = BrokerReadiness(zookeeper_connect, hint=_HINT, security=access(security, "admin"))
        self._ready_kraft = BrokerReadiness("", hint=_HINT, security=access(security, "admin"))
        """A migrated (`kraft`) broker's readiness: Metadata lists it; it has no ZooKeeper registration."""
        self._procs: dict[int, ManagedProcess] = {}
        self.properties: dict[int, Path] = {}
        self._launchers: dict[int, BrokerLauncher] = {}
        self._config: dict[int, dict[str, str]] = {}
        self._log_dirs: dict[int, str] = {}
        self._phase: dict[int, BrokerPhase] = {}
        """Each broker's launcher (its release), broker properties, log.dirs and migration phase, as `reconfigure`
        left them."""
        for b in topology.brokers:
            k = b.broker_id
            dirs = kafka_log_dirs(workdir, NodeId.broker(k), spec.log_dirs)
            node_dir = dirs[0].parent
            for data in dirs:
                data.mkdir(parents=True, exist_ok=True)
            (node_dir / "logs").mkdir(parents=True, exist_ok=True)
            props = node_dir / "server.properties"
            self._log_dirs[k] = ",".join(map(str, dirs))
            self.properties[k] = props
            self._launchers[k] = launcher
            self._config[k] = dict(spec.broker_config)
            self._write_properties(k)
            self._procs[k] = ManagedProcess(
                f"broker:{k}", launcher.argv(props), cwd=node_dir, log_path=node_dir / "broker.log",
                registry=registry, env=launcher.env(node_dir, environ) | (faketime_env(node_dir) if spec.fake_clocks
                                                                          else {}))

    def process(self, broker_id: int) -> ManagedProcess:
        try:
            return self._procs[broker_id]
        except KeyError as exc:
            raise BackendError(f"broker:{broker_id}: no such broker (brokers {sorted(self._procs)})") from exc

    # -- operations ---------------------------------------------------------------------------------

    def start_all(self, deadline: float) -> None:
        for k, proc in self._procs.items():
            self._ready.forget(k)
            proc.start()
        for k in self._procs:
            self._ready_or_once_more(k, deadline)

    def start(self, broker_id: int, deadline: float) -> None:
        proc = self.process(broker_id)
        if proc.is_running():
            raise BackendError(f"broker:{broker_id} is already running (pid {proc.pid}); stop or kill it first")
        if self._phase.get(broker_id) != "kraft":
            self._ready.wait_stale_gone(broker_id, deadline)
        proc.start()
        self._ready_or_once_more(broker_id, deadline)

    def _ready_or_once_more(self, broker_id: int, deadline: float) -> None:
        """Wait until the broker is ready; a broker that exited while starting is started once more, as the
        containers backend does (`containers_ready.start_until_ready`) and an operator's supervisor would. Seen on a
        loaded make test: ZooKeeper expired a starting 3.9.2 broker's session ("Session expired for /feature") and
        Kafka exited at startup. When the second start fails too, both are reported."""
        proc = self.process(broker_id)
        try:
            self._wait_ready(broker_id, deadline)
        except BackendError as first:
            if proc.is_running() or time.monotonic() >= deadline:
                raise
            logging.getLogger(__name__).warning("broker:%s exited while starting; starting it once more: %s",
                                                broker_id, first)
            if self._phase.get(broker_id) != "kraft":
                self._ready.wait_stale_gone(broker_id, deadline)
            proc.start()
            try:
                self._wait_ready(broker_id, deadline)
            except BackendError as second:
                second.add_note(f"the first start failed too: {first}")
                raise

    def _write_properties(self, broker_id: int) -> None:
        phase = self._phase.get(broker_id, "zookeeper")
        if phase == "kraft":
            text = render_kraft_broker(self.topology, broker_id, log_dirs=self._log_dirs[broker_id],
                                       overrides=kraft_overrides(self._config[broker_id]),
                                       advertise_controllers=self._launchers[broker_id].advertises_controllers,
                                       security=self.security)
        else:
            text = render_server_properties(self.topology, broker_id, log_dirs=self._log_dirs[broker_id],
                                            overrides=self._config[broker_id], security=self.security)
        if phase == "migrating":
            text = apply_overrides(text, migration_broker_properties(self.topology, broker_id, self.security),
                                   f"broker:{broker_id} migration", MIGRATION_HEADER)
        self.properties[broker_id].write_text(text, encoding="utf-8")

    def reconfigure(self, broker_id: int, launcher: BrokerLauncher | None, config: Mapping[str, str], *,
                    phase: BrokerPhase | None = None) -> str:
        """From its next start, the broker runs `launcher`'s release (None: the one it runs) with `config` over its
        broker properties, in migration phase `phase` (None: as it is); server.properties is written again now.
        What it will run, in words. Its data stays."""
        proc = self.process(broker_id)
        if proc.is_running():
            raise BackendError(f"broker:{broker_id} is running (pid {proc.pid}); stop it before it changes release "
                               "or configuration")
        if phase not in (None, "zookeeper") and not self.topology.links.migrating:
            raise BackendError(f"broker:{broker_id}: this cluster has no KRaft controllers to migrate to")
        if launcher is not None:
            self._launchers[broker_id] = launcher
        self._config[broker_id].update(config)
        if phase is not None:
            self._phase[broker_id] = phase
        self._write_properties(broker_id)
        proc.argv = tuple(self._launchers[broker_id].argv(self.properties[broker_id]))
        words = {"zookeeper": "", "kraft": ", a KRaft broker",
                 "migrating": ", migrating to KRaft (ZooKeeper mode and registered with the KRaft controllers)"}
        return f"Apache Kafka {self._launchers[broker_id].kafka.version}" + "".join(
            f", {k}={v}" for k, v in sorted(config.items())) + words[self._phase.get(broker_id, "zookeeper")]

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

    def _wait_ready(self, broker_id: int, deadline: float) -> None:
        proc = self.process(broker_id)
        proxy = str(self.topology.proxy(CLIENT, NodeId.broker(broker_id)).advertised)
        ready = self._ready_kraft if self._phase.get(broker_id) == "kraft" else self._ready
        ready.wait_ready(broker_id, proxy, deadline, who=f"broker:{broker_id} (pid {proc.pid}, log "
                         f"{proc.log_path})", alive=proc.is_running, exited=proc.exit_description, tail=proc.tail)

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
        try:
            self._ready.close()
            self._ready_kraft.close()
        except Exception as exc:
            failures.append(("close the ZooKeeper client watching registrations", exc))
        return failures
