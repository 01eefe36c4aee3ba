"""Picks the backend: `auto` takes containers where a Docker API answers, otherwise the process
backend (Apache Kafka from KAFKA_HOME or the cache, installed when missing), and says why."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable

from harness.cluster.base import ClusterBackend, ClusterSpec
from harness.errors import BackendError

BACKENDS = ("auto", "containers", "process")


def docker_api() -> tuple[bool, str]:
    """Whether a Docker API answers a ping (DOCKER_HOST or the default socket), and what was tried."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # any failure means: no usable Docker API here
        return False, f"no Docker API answers at {where} ({type(exc).__name__})"
    return True, f"a Docker API answers at {where}"


def _containers_backend(progress: Callable[[str], None] | None) -> ClusterBackend | None:
    if importlib.util.find_spec("harness.cluster.containers") is None:
        return None
    from harness.cluster.containers import ContainersBackend

    backend: ClusterBackend = ContainersBackend(progress=progress)
    return backend


def _process_backend(progress: Callable[[str], None] | None) -> ClusterBackend:
    from harness.cluster.process_backend import ProcessBackend

    return ProcessBackend(progress=progress)


def process_only(spec: ClusterSpec) -> str:
    """What of `spec` only the process backend offers (`choose_backend`'s `process_only`), or ""."""
    if spec.migrating:
        return "cluster.controllers in ZooKeeper mode (the migration's KRaft quorum)"
    return "cluster.log_dir_mb (the disk faults)" if spec.log_dir_mb else ""


def prefers_process(spec: ClusterSpec) -> str:
    """What of `spec` `auto` runs on the process backend (`choose_backend`'s `prefer_process`), or "": a secured
    cluster, which the containers backend runs only in its local images (`containers_security.check_images`)."""
    return f"cluster.security ({spec.security.describe()})" if spec.security.enabled else ""


def choose_backend(name: str = "auto", progress: Callable[[str], None] | None = None,
                   process_only: str = "", prefer_process: str = "") -> tuple[ClusterBackend, str]:
    """The backend to use and a one-line reason (recorded in run.json and printed). `progress` hears the
    steps of an Apache Kafka install, where the process backend needs one. `process_only` names what only the
    process backend offers (e.g. `cluster.log_dir_mb`): `auto` then takes the process backend, and `containers`
    is refused; `prefer_process` names what `auto` runs on the process backend, which `containers` also runs."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name == "containers" and process_only:
        raise BackendError(f"{process_only} needs the process backend; use --backend process (or auto)")
    if name == "auto" and process_only:
        name, why = "process", f"auto: {process_only} needs the process backend"
    elif name == "auto" and prefer_process:
        name, why = "process", f"auto: {prefer_process} runs on the process backend unless --backend containers"
    elif name in ("auto", "containers"):
        answers, why = docker_api()
        containers = _containers_backend(progress) if answers else None
        if containers is not None:
            return containers, f"containers: {why}"
        if name == "containers":
            if not answers:
                raise BackendError(f"the containers backend needs a Docker API: {why}; "
                                   "use --backend process, or set DOCKER_HOST")
            raise BackendError("the containers backend is not part of this build yet; use --backend process")
        why = why if not answers else f"{why}, but the containers backend is not part of this build yet"
    elif name == "process":
        why = "asked for with --backend process"
    process = _process_backend(progress)
    ok, detail = process.available()
    if not ok:
        raise BackendError(f"no backend can run here: {why}; process backend: {detail}")
    return process, f"process ({detail}): {why}"
