"""Apache Kafka install logic: version requests, the cache, KAFKA_HOME, the tarball route's SHA-512 check
(served by a local HTTP server standing in for the Apache archive, which this machine cannot reach) and
the error that names every source. The Maven route runs for real in the integration tests."""

from __future__ import annotations

import hashlib
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.install.cache import write_manifest
from harness.install.kafka import (
    InstallError,
    _parse_sha512,
    cached_kafka,
    check_request,
    install_kafka,
    installed_kafkas,
    kafka_request,
    matches,
)

DIGEST = "ab" * 64


def test_requests_are_releases_or_lines_and_confluent_7_means_kafka_3() -> None:
    assert check_request("3.9.2") == "3.9.2" and check_request("3.9") == "3.9" and check_request("4") == "4"
    assert kafka_request("7.7.1") == "3.7" and kafka_request(" 3.8 ") == "3.8"
    for bad in ("latest", "3.9.x", "4.", ""):
        with pytest.raises(ConfigError, match="neither a release"):
            kafka_request(bad)


def test_a_line_matches_its_releases_only() -> None:
    assert matches("3.9.2", "3.9") and matches("3.9.2", "3.9.2")
    assert not matches("3.10.0", "3.1") and not matches("3.9.2", "3.9.1") and not matches("3.90.0", "3.9")


def test_a_major_line_matches_every_release_of_that_major() -> None:
    assert matches("4.4.0", "4") and matches("4.0.1", "4")
    assert not matches("40.0.0", "4") and not matches("3.9.2", "4")


def test_both_published_sha512_formats_are_read() -> None:
    gpg = "kafka_2.13-3.9.2.tgz: " + " ".join(DIGEST.upper()[i:i + 8] for i in range(0, 128, 8)) + "\n"
    assert _parse_sha512(gpg) == DIGEST
    assert _parse_sha512(f"{DIGEST}  kafka_2.13-3.9.2.tgz\n") == DIGEST
    with pytest.raises(ConfigError, match="SHA-512"):
        _parse_sha512("not a digest")


def _install_dir(root: Path, version: str, finished: bool = True) -> Path:
    home = root / f"kafka-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / f"kafka_2.13-{version}.jar").write_bytes(b"")
    if finished:
        write_manifest(home, {"version": version, "source": "test", "log4j": "config/x.properties"})
    return home


def test_the_cache_answers_a_line_with_its_newest_finished_install(tmp_path: Path) -> None:
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path), "PATH": "/nonexistent"}
    _install_dir(tmp_path, "3.9.1")
    newest = _install_dir(tmp_path, "3.9.2")
    _install_dir(tmp_path, "3.9.3", finished=False)  # interrupted: no manifest
    assert [k.version for k in installed_kafkas(env)] == ["3.9.1", "3.9.2"]
    found = install_kafka("3.9", environ=env)
    assert found.home == newest and found.version == "3.9.2" and cached_kafka("3.8", env) is None


def test_when_every_source_fails_the_error_names_each_and_why(tmp_path: Path) -> None:
    home = _install_dir(tmp_path / "home", "3.7.1")
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": "/nonexistent", "KAFKA_HOME": str(home),
           "KAFKA_CHAOS_APACHE_MIRROR": "http://127.0.0.1:9"}
    with pytest.raises(InstallError) as caught:
        install_kafka("3.9.2", environ=env)
    text = str(caught.value)
    assert "holds Kafka 3.7.1, not 3.9.2" in text and "the Apache release tarball" in text
    assert "no `mvn` on PATH" in text and "hint:" in text
    assert not list((tmp_path / "cache").glob(".staging-*"))  # nothing half-done left behind


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local stand-in for the Apache archive: serves kafka_2.13-3.9.9.tgz and its .sha512 from a folder."""
    root = tmp_path / "archive"
    (root / "3.9.9").mkdir(parents=True)
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name in ("libs/kafka_2.13-3.9.9.jar", "config/log4j.properties"):
            info = tarfile.TarInfo(f"kafka_2.13-3.9.9/{name}")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    (root / "3.9.9" / "kafka_2.13-3.9.9.tgz").write_bytes(data.getvalue())
    digest = hashlib.sha512(data.getvalue()).hexdigest()
    (root / "3.9.9" / "kafka_2.13-3.9.9.tgz.sha512").write_text(f"{digest}  kafka_2.13-3.9.9.tgz\n")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_the_tarball_is_checked_unpacked_and_cached(tmp_path: Path, archive: tuple[str, Path]) -> None:
    url, _ = archive
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": "/nonexistent", "KAFKA_CHAOS_APACHE_MIRROR": url}
    said: list[str] = []
    found = install_kafka("3.9.9", environ=env, progress=said.append)
    assert found.version == "3.9.9" and found.home == tmp_path / "cache" / "kafka-3.9.9"
    assert "SHA-512 checked" in found.source and (found.libs / "kafka_2.13-3.9.9.jar").is_file()
    assert any("downloading" in s for s in said) and any("installed at" in s for s in said)
    assert install_kafka("3.9.9", environ=env).home == found.home  # from the cache now


def test_a_tarball_whose_digest_does_not_match_is_refused(tmp_path: Path, archive: tuple[str, Path]) -> None:
    url, root = archive
    (root / "3.9.9" / "kafka_2.13-3.9.9.tgz.sha512").write_text(f"{DIGEST}  kafka_2.13-3.9.9.tgz\n")
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": "/nonexistent", "KAFKA_CHAOS_APACHE_MIRROR": url}
    with pytest.raises(InstallError, match="does not match the published"):
        install_kafka("3.9.9", environ=env)
    assert not (tmp_path / "cache" / "kafka-3.9.9").exists()
