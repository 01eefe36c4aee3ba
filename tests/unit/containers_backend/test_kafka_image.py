"""The local Apache Kafka image without a Docker engine: what it holds (the install's jars and log4j config
under /opt/kafka, on top of the runtime image's root file system), its labels (a digest of those files), and
when it is rebuilt; the engine is a recording stand-in (the real one: tests/containers/test_broker_flavour.py)."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from harness.cluster.containers_ready import (
    LABEL_KAFKA_FILES,
    LABEL_KAFKA_VERSION,
    ImageUnavailableError,
    ensure_kafka_image,
    kafka_image,
    kafka_image_files,
    kafka_image_labels,
)
from harness.errors import ConfigError
from harness.install.kafka import KafkaInstall


def _install(tmp_path: Path, version: str = "3.9.2") -> KafkaInstall:
    home = tmp_path / f"kafka-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    log4j = home / "config" / "kafka-chaos-log4j.properties"
    log4j.write_text("log4j.rootLogger=INFO\n")
    (home / "libs" / f"kafka_2.13-{version}.jar").write_bytes(b"kafka classes")
    (home / "libs" / f"kafka-clients-{version}.jar").write_bytes(b"client classes")
    (home / "libs" / "README").write_text("not a jar")
    return KafkaInstall(home=home, version=version, source="test", log4j=log4j)


def _saved_base() -> bytes:
    """A `docker save` archive of a one-layer image holding bin/busybox and tmp/."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        d = tarfile.TarInfo("tmp")
        d.type, d.mode = tarfile.DIRTYPE, 0o1777
        t.addfile(d)
        f = tarfile.TarInfo("bin/busybox")
        f.size, f.mode = 4, 0o755
        t.addfile(f, io.BytesIO(b"busy"))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as t:
        for name, data in (("abc/layer.tar", layer.getvalue()),
                           ("manifest.json", json.dumps([{"Layers": ["abc/layer.tar"]}]).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


class _Image:
    def __init__(self, engine: FakeEngine, image_id: str, labels: dict[str, str]) -> None:
        self.engine, self.id, self.labels = engine, image_id, labels

    def save(self) -> Iterator[bytes]:
        data = _saved_base()
        yield data[:1000]
        yield data[1000:]

    def tag(self, repo: str, tag: str) -> bool:
        self.engine.tags[f"{repo}:{tag}"] = self.id
        return True


class FakeEngine:
    """Images by id and tag; `api.import_image_from_file` keeps the imported tar's members and the changes."""

    def __init__(self) -> None:
        self.images = self
        self.api = self
        self.by_id: dict[str, _Image] = {"sha256:base": _Image(self, "sha256:base", {})}
        self.tags = {"localhost/kafka-chaos-runtime:latest": "sha256:base"}
        self.imported: list[tuple[dict[str, bytes | None], list[str]]] = []
        self.removed: list[str] = []
        self.modes: dict[str, tuple[int, int]] = {}

    def get(self, name: str) -> _Image:
        image_id = self.tags.get(name, name)
        if image_id not in self.by_id:
            raise docker.errors.ImageNotFound(name)
        return self.by_id[image_id]

    def remove(self, image_id: str) -> None:
        self.removed.append(image_id)

    def import_image_from_file(self, path: str, changes: list[str]) -> str:
        with tarfile.open(path) as t:
            members = {m.name: (t.extractfile(m).read() if m.isreg() else None) for m in t}  # type: ignore[union-attr]
            modes = {m.name: (m.uid, m.mode) for m in t}
        image_id = f"sha256:{len(self.by_id)}"
        labels = dict(c.removeprefix("LABEL ").split("=", 1) for c in changes if c.startswith("LABEL "))
        self.by_id[image_id] = _Image(self, image_id, labels)
        self.imported.append((members, changes))
        self.modes = modes
        return json.dumps({"status": image_id, "id": image_id}) + "\n"


def _ensure(engine: Any, kafka: KafkaInstall) -> str:
    return ensure_kafka_image(engine, kafka_image(kafka), kafka_image_files(kafka), kafka_image_labels(kafka),
                              "localhost/kafka-chaos-runtime:latest")


def test_the_image_adds_the_installs_jars_and_log4j_config_under_opt_kafka(tmp_path: Path) -> None:
    kafka = _install(tmp_path)
    assert kafka_image(kafka) == "localhost/kafka-chaos-kafka:3.9.2"
    assert [inside for _, inside in kafka_image_files(kafka)] == [
        "opt/kafka/libs/kafka-clients-3.9.2.jar", "opt/kafka/libs/kafka_2.13-3.9.2.jar",
        "opt/kafka/config/kafka-chaos-log4j.properties"]
    engine = FakeEngine()
    image_id = _ensure(engine, kafka)
    assert engine.tags["localhost/kafka-chaos-kafka:3.9.2"] == image_id
    (members, changes), = engine.imported
    assert members["bin/busybox"] == b"busy" and members["tmp"] is None  # the runtime image's root file system
    assert members["opt/kafka/libs/kafka_2.13-3.9.2.jar"] == b"kafka classes"
    assert members["opt/kafka/config/kafka-chaos-log4j.properties"] == b"log4j.rootLogger=INFO\n"
    assert "opt/kafka/libs/README" not in members
    assert [n for n in members if n.startswith("opt")][:3] == ["opt", "opt/kafka", "opt/kafka/config"]
    assert all(engine.modes[n][0] == 0 for n in members if n.startswith("opt"))  # owned by root
    assert engine.modes["opt/kafka/libs"][1] == 0o755
    assert 'CMD ["/bin/sh"]' in changes
    assert f"LABEL {LABEL_KAFKA_VERSION}=3.9.2" in changes


def test_the_image_is_reused_while_its_files_are_the_same_and_rebuilt_when_a_jar_changes(tmp_path: Path) -> None:
    kafka = _install(tmp_path)
    engine = FakeEngine()
    first = _ensure(engine, kafka)
    assert _ensure(engine, kafka) == first and len(engine.imported) == 1
    before = kafka_image_labels(kafka)[LABEL_KAFKA_FILES]
    (kafka.libs / "kafka_2.13-3.9.2.jar").write_bytes(b"other classes")
    assert kafka_image_labels(kafka)[LABEL_KAFKA_FILES] != before
    second = _ensure(engine, kafka)
    assert second != first and len(engine.imported) == 2
    assert engine.tags["localhost/kafka-chaos-kafka:3.9.2"] == second and engine.removed == [first]


def test_no_jars_or_no_runtime_image_is_an_error_with_a_hint(tmp_path: Path) -> None:
    kafka = _install(tmp_path)
    engine = FakeEngine()
    del engine.tags["localhost/kafka-chaos-runtime:latest"]
    with pytest.raises(ImageUnavailableError, match=r"compose/podman/setup\.sh"):
        _ensure(engine, kafka)
    for jar in kafka.libs.glob("*.jar"):
        jar.unlink()
    with pytest.raises(ConfigError, match="holds no jars"):
        kafka_image_files(kafka)
