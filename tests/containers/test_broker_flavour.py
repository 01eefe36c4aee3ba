"""The broker the local images run, on the real engine: the Apache Kafka image holds byte for byte the jars
and log4j config of the cache's install and is rebuilt when they change."""

from __future__ import annotations

import contextlib
import hashlib
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from harness.cluster.containers_engine import owner_label
from harness.cluster.containers_ready import (
    LABEL_KAFKA_FILES,
    ensure_kafka_image,
    kafka_image,
    kafka_image_files,
    kafka_image_labels,
)
from harness.cluster.containers_spec import LABEL_OWNER, LABEL_RUN, RUNTIME_IMAGE
from harness.install.kafka import KafkaInstall
from tests.containers.helpers import local_kafka
from tests.fixtures.podman import DockerEngine

pytestmark = pytest.mark.containers


@pytest.fixture
def kafka(docker_env: DockerEngine) -> KafkaInstall:
    install = local_kafka(docker_env)
    if install is None:
        pytest.skip(f"{docker_env.name} runs the published images (Kafka is theirs); these tests are about the "
                    "local images (KAFKA_CHAOS_LOCAL_IMAGES=1, compose/podman/setup.sh)")
    return install


@pytest.fixture
def client() -> Iterator[docker.DockerClient]:
    c = docker.from_env(timeout=120)
    yield c
    c.close()


def _files_in_image(client: docker.DockerClient, image: str, path: str) -> dict[str, str]:
    """SHA-256 of every regular file under `path` in `image` (read from a created, never started container)."""
    labels = {LABEL_RUN: "kafka-image-test", LABEL_OWNER: owner_label()}  # clean_leftovers' if this harness dies
    container = client.containers.create(image, ["/bin/true"], labels=labels)
    try:
        stream, _ = container.get_archive(path)
        data = io.BytesIO(b"".join(stream))
    finally:
        container.remove(force=True)
    out: dict[str, str] = {}
    with tarfile.open(fileobj=data) as tar:
        for m in tar:
            if m.isreg():
                out[m.name.split("/", 1)[1]] = hashlib.sha256(tar.extractfile(m).read()).hexdigest()  # type: ignore[union-attr]
    return out


def test_the_kafka_image_holds_the_cache_installs_jars_and_log4j_config(
        kafka: KafkaInstall, client: docker.DockerClient) -> None:
    labels = kafka_image_labels(kafka)
    image_id = ensure_kafka_image(client, kafka_image(kafka), kafka_image_files(kafka), labels, RUNTIME_IMAGE)
    image = client.images.get(kafka_image(kafka))
    assert image.id == image_id and image.labels[LABEL_KAFKA_FILES] == labels[LABEL_KAFKA_FILES]
    inside = _files_in_image(client, kafka_image(kafka), "/opt/kafka")
    expected = {name.removeprefix("opt/kafka/"): hashlib.sha256(host.read_bytes()).hexdigest()
                for host, name in kafka_image_files(kafka)}
    assert inside == expected
    assert len([n for n in inside if n.startswith("libs/")]) == len(list(kafka.libs.glob("*.jar")))


def test_the_kafka_image_is_reused_and_rebuilt_when_the_install_changes(
        kafka: KafkaInstall, client: docker.DockerClient, tmp_path: Path) -> None:
    """A small stand-in install (version 3.9.99, two tiny jars) so the test builds in seconds."""
    home = tmp_path / "kafka-3.9.99"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "config" / "log4j.properties").write_text("log4j.rootLogger=INFO\n")
    (home / "libs" / "kafka_2.13-3.9.99.jar").write_bytes(b"one")
    (home / "libs" / "kafka-clients-3.9.99.jar").write_bytes(b"two")
    fake = KafkaInstall(home=home, version="3.9.99", source="test", log4j=home / "config" / "log4j.properties")
    name = kafka_image(fake)

    def ensure() -> str:
        return ensure_kafka_image(client, name, kafka_image_files(fake), kafka_image_labels(fake), RUNTIME_IMAGE)

    built: list[str] = []
    try:
        built.append(ensure())
        assert ensure() == built[0]  # same files: the image is kept
        (home / "libs" / "kafka_2.13-3.9.99.jar").write_bytes(b"one, changed")
        built.append(ensure())
        assert built[1] != built[0] and client.images.get(name).id == built[1]
        with pytest.raises(docker.errors.ImageNotFound):  # the image that held the tag before is gone
            client.images.get(built[0])
        assert _files_in_image(client, name, "/opt/kafka/libs")["kafka_2.13-3.9.99.jar"] == (
            hashlib.sha256(b"one, changed").hexdigest())
    finally:
        for image_id in reversed(built):
            with contextlib.suppress(docker.errors.APIError):
                client.images.remove(image_id, force=True)
