"""The containers backend's Docker side: the Docker API client (and the Podman adjustments for
Testcontainers), one `NodeContainer` per node (created through Testcontainers'
`DockerContainer`, then driven with kill / stop / start / pause / unpause), the run's labels, the
atexit fallback that removes a run's containers and network, and `clean_container_leftovers()`.

Every container and the network carry `kafka-chaos.run=<run id>` and `kafka-chaos.owner=<host>/<pid>/
<start time>`. Ryuk (Testcontainers' reaper) removes them on a Docker engine when the harness dies;
where Ryuk is off (Podman), the next run removes those whose owner process is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster.containers_spec import CONF_DIR, LABEL_OWNER, LABEL_RUN, ContainerSpec
from harness.cluster.owners import owner_alive as process_alive
from harness.cluster.owners import this_owner
from harness.errors import BackendError
from harness.waiting import wait_until

_LOG_LINES = 20


def docker_client(timeout_s: float = 10.0) -> Any:
    """A docker SDK client from the environment (DOCKER_HOST or the default socket)."""
    import docker

    try:
        return docker.from_env(timeout=int(timeout_s))
    except Exception as exc:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise BackendError(f"no Docker API at {where}: {exc}; hint: start a Docker engine, or on machines "
                           "without one run compose/podman/setup.sh and export what it prints") from exc


def engine_name(client: Any) -> str:
    """`Docker Engine 27.1.1` / `Podman Engine 4.3.1` (from the version endpoint's first component)."""
    info = client.version()
    comps = info.get("Components") or []
    if comps:
        return f"{comps[0].get('Name', 'Engine')} {comps[0].get('Version', info.get('Version', '?'))}"
    return f"Docker Engine {info.get('Version', '?')}"


def prepare_testcontainers(engine: str) -> None:
    """Under Podman: no Ryuk (it cannot run there; labels + `clean_leftovers` replace it) and the
    docker_host connection mode (the other modes read fields Podman's inspect lacks)."""
    if not engine.startswith("Podman"):
        return
    from testcontainers.core.config import ConnectionMode, testcontainers_config

    testcontainers_config.ryuk_disabled = True
    if testcontainers_config.connection_mode_override is None:
        testcontainers_config.connection_mode_override = ConnectionMode.docker_host


def owner_label() -> str:
    pid, created = this_owner()
    return f"{socket.gethostname()}/{pid}/{created:.3f}"


def owner_alive(label: str) -> bool | None:
    """Whether the harness named by an owner label still runs (None: another host, cannot tell)."""
    host, _, rest = label.partition("/")
    pid_text, _, created = rest.partition("/")
    if host != socket.gethostname():
        return None
    try:
        return process_alive(int(pid_text), float(created))
    except ValueError:
        return False


def volume_map(spec: ContainerSpec, node_dir: Path) -> list[tuple[str, str, str]]:
    """(host path, path inside, mode) of every mount of `spec` whose files live in `node_dir`."""
    volumes = [(m.host, m.container, m.mode) for m in spec.mounts]
    if spec.conf_mount:
        volumes.append((str(node_dir.resolve()), CONF_DIR, "ro"))
    if spec.logs_mount:  # writable, inside the read-only /conf (the engine mounts the parent first)
        (node_dir / "logs").mkdir(exist_ok=True)
        volumes.append((str((node_dir / "logs").resolve()), f"{CONF_DIR}/logs", "rw"))
    return volumes


class NodeContainer:
    """One node's container: created and first started through Testcontainers, then driven directly."""

    def __init__(self, spec: ContainerSpec, network: Any, node_dir: Path, stop_timeout_s: float) -> None:
        self.spec = spec
        self.node_dir = node_dir
        self.stop_timeout_s = stop_timeout_s
        self._network = network
        node_dir.mkdir(parents=True, exist_ok=True)
        for name, text in spec.files.items():
            (node_dir / name).write_text(text, encoding="utf-8")
        self._tc: Any = None  # the Testcontainers DockerContainer, built at the first start
        self._lock = threading.RLock()
        self.starts = 0

    def _build(self) -> Any:
        from testcontainers.core.container import DockerContainer

        spec = self.spec
        tc = DockerContainer(spec.image, name=spec.name)
        if spec.command is not None:
            tc.with_command(list(spec.command))
        tc.with_envs(**dict(spec.env))
        if spec.exposed:
            tc.with_exposed_ports(*spec.exposed)
        for container_port, host_port in spec.published.items():
            tc.with_bind_ports(container_port, host_port)
        for host, inside, mode in volume_map(spec, self.node_dir):
            tc.with_volume_mapping(host, inside, mode)
        tc.with_network(self._network).with_network_aliases(spec.alias)
        # dns_opt: a name lookup the network's DNS misses (e.g. while Podman's aardvark-dns reloads as
        # containers join) is retried after 1 s instead of glibc's default 5 s.
        tc.with_kwargs(labels=dict(spec.labels), hostname=spec.alias, dns_opt=["timeout:1", "attempts:3"])
        return tc

    def __repr__(self) -> str:
        return f"NodeContainer({self.spec.node}, {self.spec.name})"

    @property
    def created(self) -> bool:
        return self._tc is not None and self._tc._container is not None

    def _container(self) -> Any:
        if not self.created:
            raise BackendError(f"{self.spec.node}: container {self.spec.name} was never created")
        return self._tc._container

    def start(self) -> None:
        """Create + start the first time; `docker start` afterwards (same container, same data)."""
        with self._lock:
            try:
                if not self.created:
                    self._tc = self._tc or self._build()
                    self._tc.start()
                else:
                    if self.is_running():
                        raise BackendError(f"{self.spec.node} is already running (container {self.spec.name}); "
                                           "stop or kill it first")
                    self._container().start()
            except BackendError:
                raise
            except Exception as exc:
                raise BackendError(f"{self.spec.node}: cannot start container {self.spec.name} "
                                   f"(image {self.spec.image}): {exc}") from exc
            self.starts += 1

    def status(self) -> str:
        """created / running / paused / exited / removed (Docker's states)."""
        import docker.errors

        if not self.created:
            return "never-created"
        try:
            self._container().reload()
        except docker.errors.NotFound:
            return "removed"
        return str(self._container().status)

    def is_running(self) -> bool:
        return self.status() in ("running", "paused")

    def kill(self) -> None:
        """SIGKILL (`docker kill`); a paused container is unpaused first so the kill lands. No-op if not running."""
        with self._lock:
            state = self.status()
            if state not in ("running", "paused"):
                return
            try:
                if state == "paused":
                    self._container().unpause()
                self._container().kill(signal="SIGKILL")
                self._wait_exited(10.0)
            except Exception as exc:
                raise BackendError(f"{self.spec.node}: docker kill {self.spec.name} failed: {exc}") from exc

    def stop(self) -> bool:
        """SIGTERM, SIGKILL after the stop timeout (`docker stop`). True when it exited on SIGTERM."""
        with self._lock:
            state = self.status()
            if state not in ("running", "paused"):
                return True
            started = time.monotonic()
            try:
                if state == "paused":
                    self._container().unpause()
                self._container().stop(timeout=int(self.stop_timeout_s))
                self._wait_exited(10.0)
            except Exception as exc:
                raise BackendError(f"{self.spec.node}: docker stop {self.spec.name} failed: {exc}") from exc
            code = self.exit_code()
            return not (code == 137 and time.monotonic() - started >= self.stop_timeout_s - 0.5)

    def _wait_exited(self, timeout_s: float) -> None:
        wait_until(f"{self.spec.node} (container {self.spec.name}) to exit after it was told to",
                   lambda: self.status() not in ("running", "paused", "stopping"), timeout_s, poll_s=0.05,
                   last_seen=lambda _: f"state {self.status()}")

    def pause(self) -> None:
        try:
            self._container().pause()
        except Exception as exc:
            raise BackendError(f"{self.spec.node}: docker pause {self.spec.name} failed: {exc}") from exc

    def resume(self) -> None:
        try:
            self._container().unpause()
        except Exception as exc:
            raise BackendError(f"{self.spec.node}: docker unpause {self.spec.name} failed: {exc}") from exc

    def exit_code(self) -> int | None:
        if not self.created:
            return None
        state = self._container().attrs.get("State") or {}
        code = state.get("ExitCode")
        return int(code) if code is not None else None

    def mapped_port(self, port: int) -> int:
        try:
            return int(self._tc.get_exposed_port(port))
        except Exception as exc:
            raise BackendError(f"{self.spec.node}: no host port published for {port}/tcp: {exc}") from exc

    def host_ip(self) -> str:
        host = self._tc.get_container_host_ip()
        return "127.0.0.1" if host in ("localhost", "::1", "") else host

    def tail(self, lines: int = _LOG_LINES) -> str:
        try:
            raw = self._container().logs(tail=lines)
        except Exception as exc:
            return f"<logs of {self.spec.name} unavailable: {exc}>"
        return bytes(raw).decode("utf-8", "replace").rstrip()

    def save_log(self) -> None:
        """Write the container's whole log to `<node dir>/container.log` (before removal)."""
        with contextlib.suppress(Exception):
            raw = self._container().logs()
            (self.node_dir / "container.log").write_bytes(bytes(raw))

    def describe(self) -> dict[str, object]:
        ports: dict[str, int] = {}
        if self.created:
            for p in (*self.spec.exposed, *self.spec.published):
                with contextlib.suppress(Exception):
                    ports[str(p)] = int(self._tc.get_docker_client().port(self._container().id, p))
        return {"container": self.spec.name, "image": self.spec.image, "alias": self.spec.alias,
                "command": list(self.spec.command) if self.spec.command else None, "published": ports,
                "starts": self.starts, "dir": str(self.node_dir)}

    def remove(self) -> None:
        """Force-remove the container (and its anonymous volumes). No-op if never created or gone."""
        import docker.errors

        if not self.created:
            return
        self.save_log()
        with contextlib.suppress(docker.errors.NotFound):
            self._container().remove(force=True, v=True)


@dataclass(frozen=True, slots=True)
class CleanedContainer:
    """A leftover container or network that `clean_container_leftovers()` removed."""

    kind: str
    name: str
    run: str
    owner: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name} (run {self.run}, owner {self.owner})"


def remove_run(client: Any, run_id: str) -> list[tuple[str, BaseException]]:
    """Force-remove every container, then the network, labelled with run `run_id`; failures collected."""
    failures: list[tuple[str, BaseException]] = []
    selector = {"label": f"{LABEL_RUN}={run_id}"}
    try:
        for c in client.containers.list(all=True, filters=selector):
            try:
                c.remove(force=True, v=True)
            except Exception as exc:
                failures.append((f"remove container {c.name}", exc))
        for n in client.networks.list(filters=selector):
            try:
                n.remove()
            except Exception as exc:
                failures.append((f"remove network {n.name}", exc))
    except Exception as exc:
        failures.append((f"list run {run_id}'s containers", exc))
    return failures


def clean_container_leftovers(client: Any) -> list[CleanedContainer]:
    """Remove containers and networks of runs whose harness process is gone (same host only)."""
    cleaned: list[CleanedContainer] = []
    runs: dict[str, str] = {}
    for kind, items in (("container", client.containers.list(all=True, filters={"label": LABEL_RUN})),
                        ("network", client.networks.list(filters={"label": LABEL_RUN}))):
        for item in items:
            labels: Mapping[str, str] = (item.attrs.get("Labels") if kind == "network"
                                         else item.labels) or {}
            owner = labels.get(LABEL_OWNER, "")
            if owner_alive(owner) is not False:
                continue
            runs[labels.get(LABEL_RUN, "?")] = owner
            cleaned.append(CleanedContainer(kind, item.name, labels.get(LABEL_RUN, "?"), owner))
    failures: list[tuple[str, BaseException]] = []
    for run_id in runs:
        failures += remove_run(client, run_id)
    if failures:
        raise BackendError("could not remove leftovers: " + "; ".join(f"{w}: {e}" for w, e in failures))
    return cleaned


# -- atexit fallback: a run whose cluster was never torn down is removed when the harness exits --------
_ACTIVE: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_INSTALLED = False


def track_run(run_id: str, holder: Any) -> None:
    """Remove run `run_id` at interpreter exit unless `untrack_run` was called (holder: the cluster)."""
    global _INSTALLED
    _ACTIVE[run_id] = holder
    if not _INSTALLED:
        _INSTALLED = True
        atexit.register(_remove_active)


def untrack_run(run_id: str) -> None:
    _ACTIVE.pop(run_id, None)


def _remove_active() -> None:
    if not _ACTIVE:
        return
    with contextlib.suppress(Exception):
        client = docker_client()
        for run_id in list(_ACTIVE.keys()):
            remove_run(client, run_id)
        client.close()
