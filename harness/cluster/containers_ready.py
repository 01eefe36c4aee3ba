"""What must be ready: the images before the containers start, and each node after, seen from the host (as
the process backend sees its own).

- Images: present, else pulled (`ensure_image`); the local Apache Kafka image is built when missing or
  built from other files (`ensure_kafka_image`: the runtime image's root file system plus the install's
  jars and log4j config, imported as one layer and labelled with their digest).
- Toxiproxy: its API answers `GET /version` on the published port (`start_toxiproxy`); then every proxy is
  created (`create_proxies`) before any node starts.
- ZooKeeper member: `srvr` reports a mode on the published client port (when a majority runs), else
  the port accepts connections.
- Broker: `harness.cluster.readiness.BrokerReadiness` (shared with the process backend).
- KRaft controller: answers ApiVersions on its published CONTROLLER port (a published port accepts
  connections on the host before anything listens in the container, so a connect alone says nothing).

A timeout names the node, the container, what was last seen, the container's last log lines and a hint.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import socket
import ssl
import struct
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.cluster.base import CLIENT, NodeId
from harness.cluster.containers_engine import NodeContainer
from harness.cluster.containers_spec import (
    KAFKA_IMAGE_REPO,
    KAFKA_IN_IMAGE,
    RUNTIME_IMAGE,
    TOXIPROXY_API_PORT,
    RoleImage,
    proxy_port,
)
from harness.cluster.render import ProxyRoute
from harness.errors import BackendError, ConfigError
from harness.install.kafka import KafkaInstall
from harness.install.kafka_files import runnable_jars
from harness.toxiproxy.client import ProxySpec, ToxiproxyClient
from harness.waiting import wait_until
from harness.zk.fourletter import server_mode

BROKER_HINT = ("see the container log; check zookeeper.connect (via proxies k->zk* on the toxiproxy container), "
               "the listeners in server.properties and the published client->k port")

log = logging.getLogger("harness.cluster.containers")
LABEL_KAFKA_VERSION, LABEL_KAFKA_FILES = "kafka-chaos.kafka.version", "kafka-chaos.kafka.files"


class ImageUnavailableError(BackendError):
    """An image is neither present on the engine nor pullable (e.g. no registry reachable)."""


def ensure_image(client: Any, image: str, role: str) -> str:
    """The image's id, pulling it if absent; `ImageUnavailableError` names the role and a hint."""
    import docker.errors

    try:
        return str(client.images.get(image).id)
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.APIError as exc:
        raise BackendError(f"cannot inspect image {image} ({role}): {exc}") from exc
    try:
        return str(client.images.pull(image).id)
    except Exception as exc:
        local = "localhost/kafka-chaos-" in image
        hint = ("run compose/podman/setup.sh (it builds the local images)" if local else
                "no registry reachable? use the local images: KAFKA_CHAOS_LOCAL_IMAGES=1 after "
                "compose/podman/setup.sh, or cluster.images: {zookeeper: local, kafka: local, toxiproxy: local}")
        raise ImageUnavailableError(f"image {image} for {role} is not present and cannot be pulled: "
                                    f"{type(exc).__name__}: {str(exc)[:300]}; hint: {hint}") from exc


def kafka_image(kafka: KafkaInstall) -> str:
    """The local Apache Kafka image of an install: `localhost/kafka-chaos-kafka:<version>`."""
    return f"{KAFKA_IMAGE_REPO}:{kafka.version}"


def kafka_image_files(kafka: KafkaInstall) -> list[tuple[Path, str]]:
    """(host file, path in the image) of everything the Kafka image adds to the runtime image: the install's
    runnable `libs/*.jar` (`runnable_jars`) under /opt/kafka/libs and its log4j configuration under
    /opt/kafka/config."""
    jars = runnable_jars(kafka.libs)
    if not jars:
        raise ConfigError(f"{kafka.libs} holds no jars: not a usable Apache Kafka install")
    inside = str(KAFKA_IN_IMAGE).lstrip("/")
    return [*((j, f"{inside}/libs/{j.name}") for j in jars), (kafka.log4j, f"{inside}/config/{kafka.log4j.name}")]


def kafka_image_labels(kafka: KafkaInstall) -> dict[str, str]:
    """The Kafka image's labels: its version and a SHA-256 over the names and bytes of `kafka_image_files`, so
    an image built from other jars under the same tag is seen and rebuilt."""
    digest = hashlib.sha256()
    for path, inside in kafka_image_files(kafka):
        digest.update(inside.encode() + b"\0")
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return {LABEL_KAFKA_VERSION: kafka.version, LABEL_KAFKA_FILES: f"sha256:{digest.hexdigest()}"}


def ensure_images(client: Any, images: Mapping[str, RoleImage], kafka: KafkaInstall | None) -> dict[str, str]:
    """Every role's image present: pulled when absent, or for the local Apache Kafka image of `kafka` built
    from the install (`ensure_kafka_image`). Returns that image's labels ({} when there is none)."""
    built: dict[str, str] = {}
    for role, image in images.items():
        if role == "kafka" and kafka is not None and image.image == kafka_image(kafka):
            built = kafka_image_labels(kafka)
            ensure_kafka_image(client, image.image, kafka_image_files(kafka), built, RUNTIME_IMAGE)
        else:
            ensure_image(client, image.image, role)
    return built


def ensure_kafka_image(client: Any, image: str, files: Sequence[tuple[Path, str]], labels: Mapping[str, str],
                       base: str) -> str:
    """`image` (repo:tag) labelled `labels`: kept when present with those labels, else built as one layer (the
    root file system of `base` plus `files`, (host file, path inside)) by `docker import`, tagged, and the
    image that held the tag before removed when unused. Returns the image id."""
    import docker.errors

    old = None
    with contextlib.suppress(docker.errors.ImageNotFound):
        have = client.images.get(image)
        if all(have.labels.get(k) == v for k, v in labels.items()):
            return str(have.id)
        old = str(have.id)
    try:
        root = client.images.get(base)
    except docker.errors.ImageNotFound as exc:
        raise ImageUnavailableError(f"{base}, the base of {image}, is missing; hint: run compose/podman/setup.sh "
                                    "(it builds the local images)") from exc
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-image-") as tmp:
        saved, merged = Path(tmp) / "base.tar", Path(tmp) / "rootfs.tar"
        with saved.open("wb") as f:
            for chunk in root.save():
                f.write(chunk)
        with tarfile.open(saved) as archive, tarfile.open(merged, "w", dereference=True) as out:
            for layer_name in json.load(archive.extractfile("manifest.json"))[0]["Layers"]:  # type: ignore[arg-type]
                with tarfile.open(fileobj=archive.extractfile(layer_name)) as layer:
                    for m in layer:
                        out.addfile(m, layer.extractfile(m) if m.isreg() else None)
            for d in sorted({str(p) for _, inside in files for p in Path(inside).parents if str(p) != "."}):
                out.addfile(_root_owned(tarfile.TarInfo(d), tarfile.DIRTYPE))
            for host, inside in files:
                out.add(host, inside, recursive=False, filter=_root_owned)
        changes = ["ENV PATH=/bin:/usr/bin:/usr/local/bin", 'CMD ["/bin/sh"]',
                   *(f"LABEL {k}={v}" for k, v in labels.items())]
        reply = str(client.api.import_image_from_file(str(merged), changes=changes))
    image_id = str(json.loads(reply.strip().splitlines()[-1]).get("status", ""))
    repo, _, tag = image.rpartition(":")
    if not image_id.startswith("sha256:") or not client.images.get(image_id).tag(repo, tag):
        raise BackendError(f"building {image} from {base}: the engine answered {reply[:300]!r}")
    if old not in (None, image_id):
        with contextlib.suppress(docker.errors.APIError):  # still used by a container of another run
            client.images.remove(old)
    return image_id


def _root_owned(info: tarfile.TarInfo, kind: bytes | None = None) -> tarfile.TarInfo:
    info.type = kind or info.type
    info.uid, info.gid, info.uname, info.gname = 0, 0, "root", "root"
    info.mode = 0o755 if info.isdir() else info.mode | 0o444
    return info


def start_until_ready(node: NodeContainer, wait: Callable[[], None], deadline: float) -> None:
    """`docker start` a stopped/killed node and `wait()` until it is ready. A restarted container can fail to
    reach its peers through the toxiproxy container while the engine's network (its DNS, on Podman) settles,
    and the node then exits, as Kafka does: it is started once more, and if that fails too both are reported."""
    node.start()
    try:
        wait()
    except BackendError as first:
        if node.is_running() or time.monotonic() >= deadline:
            raise
        log.warning("%s exited while starting; starting it once more: %s", node.spec.node, first)
        node.start()
        try:
            wait()
        except BackendError as second:
            second.add_note(f"the first start failed too: {first}")
            raise


def _exited(node: NodeContainer, what: str) -> BackendError:
    return BackendError(f"{node.spec.node} (container {node.spec.name}) exited while {what} "
                        f"(exit code {node.exit_code()}); its log ends with:\n{node.tail()}")


def start_toxiproxy(node: NodeContainer, brokers: int, deadline: float) -> tuple[ToxiproxyClient, str, dict[int, int]]:
    """Start the toxiproxy container and wait until its API answers: (its API client, the version it reports,
    broker j -> the host-mapped port of its `client->j` proxy)."""
    node.start()
    url = f"http://{node.host_ip()}:{node.mapped_port(TOXIPROXY_API_PORT)}"
    version = wait_toxiproxy(node, url, deadline)
    return ToxiproxyClient(url), version, {j: node.mapped_port(proxy_port(CLIENT, NodeId.broker(j)))
                                           for j in range(1, brokers + 1)}


def create_proxies(client: ToxiproxyClient, proxies: Sequence[ProxyRoute]) -> None:
    """Every link's proxy on the toxiproxy container, before any node starts."""
    created = client.populate([ProxySpec(p.name, str(p.upstream), listen=str(p.listen)) for p in proxies])
    missing = sorted({p.name for p in proxies} - {c.name for c in created})
    if missing:
        raise BackendError(f"toxiproxy at {client.url} did not create proxies {missing}")


def wait_toxiproxy(node: NodeContainer, url: str, deadline: float) -> str:
    """Wait until the API answers; returns the version it reports."""
    version = ""

    def probe() -> str | None:
        nonlocal version
        with urllib.request.urlopen(f"{url}/version", timeout=1.0) as resp:
            text = resp.read().decode("utf-8", "replace").strip()
        try:
            data = json.loads(text)
            version = str(data.get("version", text)) if isinstance(data, dict) else text
        except ValueError:
            version = text
        return None

    _wait_until(node, probe, deadline, what=f"answer GET /version at {url}", poll_s=0.1,
                hint="the toxiproxy image must serve the Toxiproxy 2.x API on port 8474")
    return version


def _wait_until(node: NodeContainer, probe: Callable[[], str | None], deadline: float, *, what: str, hint: str,
                poll_s: float) -> None:
    """Poll `probe` (None: done; else what it saw) until it succeeds, the node's container exits (BackendError)
    or `deadline` passes (HarnessTimeout naming `what`, the last thing seen and the end of the log)."""
    last: object = "no answer yet"

    def ready() -> bool:
        nonlocal last
        if not node.is_running():
            raise _exited(node, "starting")
        try:
            last = probe()
        except OSError as exc:
            last = exc
        return last is None

    wait_until(f"{node.spec.node} (container {node.spec.name}) to {what}", ready, deadline=deadline, poll_s=poll_s,
               last_seen=lambda _: f"{last}; log ends with:\n{node.tail()}", hint=hint)


def wait_zookeeper(node: NodeContainer, host: str, port: int, deadline: float, *, quorum: bool) -> None:
    """With `quorum`: until `srvr` reports a mode; otherwise until the client port accepts connections."""
    def probe() -> str | None:
        if quorum:
            return None if server_mode(host, port, timeout_s=1.0) else "srvr answered without a mode (no quorum yet?)"
        with socket.create_connection((host, port), timeout=1.0):
            return None

    _wait_until(node, probe, deadline, what=f"serve on {host}:{port}", poll_s=0.1,
                hint="check the member's log; an ensemble needs a majority of members running")


_API_VERSIONS_V0 = struct.pack(">ihhih", 2 + 2 + 4 + 2 + 5, 18, 0, 1, 5) + b"ready"
"""A framed ApiVersions v0 request (api key 18, correlation id 1, client id `ready`): every Kafka answers it."""


def answers_api_versions(host: str, port: int, timeout_s: float = 2.0, tls: ssl.SSLContext | None = None) -> bool:
    """Whether a Kafka listener at host:port answers ApiVersions (its reply carries correlation id 1); over TLS
    with `tls` (a SASL listener answers ApiVersions before the SASL handshake, KIP-35)."""
    raw = socket.create_connection((host, port), timeout=timeout_s)
    try:
        sock = tls.wrap_socket(raw, server_hostname=host) if tls is not None else raw  # owns raw's descriptor
    except BaseException:
        raw.close()
        raise
    with sock:
        sock.sendall(_API_VERSIONS_V0)
        head = b""
        while len(head) < 8:
            chunk = sock.recv(8 - len(head))
            if not chunk:
                return False
            head += chunk
    size, correlation = struct.unpack(">ii", head)
    return size >= 4 and correlation == 1


def wait_kafka_api(node: NodeContainer, host: str, port: int, deadline: float, *, hint: str,
                   tls: ssl.SSLContext | None = None) -> None:
    """Wait until the node's listener published at host:port answers ApiVersions (over TLS with `tls`)."""
    def probe() -> str | None:
        if answers_api_versions(host, port, tls=tls):
            return None
        return "the connection closed before an ApiVersions answer"

    _wait_until(node, probe, deadline, what=f"answer ApiVersions on {host}:{port}", hint=hint, poll_s=0.2)
