"""The real Toxiproxy as `install_toxiproxy` leaves it (manifest, version, cache), and the process backend's
`ToxiproxyProcess` driving it the way `TOXIPROXY_BIN` makes it (-host/-port, plain-text /version of 2.5.0)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
from pathlib import Path

import pytest

from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_toxiproxy import ToxiproxyProcess
from harness.install.cache import read_manifest
from harness.install.toxiproxy import DEFAULT_VERSION, PACKAGE, install_toxiproxy, installed_toxiproxy
from harness.toxiproxy.client import ProxySpec
from tests.fixtures.toxiproxy import EchoServer, connect

pytestmark = pytest.mark.integration


@pytest.fixture
def cached_bin(real_toxiproxy_bin: Path) -> Path:
    """The real server when it came from the install cache (not from TOXIPROXY_BIN)."""
    if real_toxiproxy_bin != installed_toxiproxy(DEFAULT_VERSION):
        pytest.skip(f"the real Toxiproxy under test is TOXIPROXY_BIN={real_toxiproxy_bin}, not a cached install")
    return real_toxiproxy_bin


def test_the_install_matches_its_manifest_and_reports_its_version(cached_bin: Path) -> None:
    manifest = read_manifest(cached_bin.parent)
    assert manifest is not None
    assert manifest["version"] == DEFAULT_VERSION and manifest["binary"] == cached_bin.name
    assert manifest["source"] == f"go install {PACKAGE}@v{DEFAULT_VERSION}"
    assert str(manifest["go"]).startswith("go1.")
    assert manifest["sha256"] == hashlib.sha256(cached_bin.read_bytes()).hexdigest()
    assert os.access(cached_bin, os.X_OK) and oct(cached_bin.parent.stat().st_mode & 0o777) == "0o755"
    shown = subprocess.run([str(cached_bin), "-version"], capture_output=True, text=True, timeout=30, check=True)
    assert shown.stdout.strip() == f"toxiproxy-server version {DEFAULT_VERSION}"  # linked as releases are


def test_a_second_install_is_served_from_the_cache_without_go(cached_bin: Path) -> None:
    assert install_toxiproxy(environ={**os.environ, "PATH": ""}) == cached_bin


def test_the_process_backend_runs_the_real_binary(real_toxiproxy_bin: Path, tmp_path: Path,
                                                 toxiproxy_echo: EchoServer) -> None:
    registry = LeftoverRegistry(tmp_path / "leftovers")
    process = ToxiproxyProcess(tmp_path / "toxiproxy", registry, binary=str(real_toxiproxy_bin))
    try:
        process.start(timeout_s=30)
        assert process.version and process.version[0].isdigit()
        assert process.describe()["kind"] == "binary"
        created = process.create_proxies([ProxySpec("client->1", toxiproxy_echo.addr)])
        listen = created["client->1"].listen
        with connect(listen) as sock:
            sock.sendall(b"via")
            assert sock.recv(3) == b"via"
        link = process.link("client->1")
        link.disable()
        host, port = listen.rsplit(":", 1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=2)
        link.enable()
        assert link.add_toxic("latency", {"latency": 1.0}) == "latency_downstream"
        link.remove_toxic("latency_downstream")
        with connect(listen) as sock:
            sock.sendall(b"back")
            assert sock.recv(4) == b"back"
    finally:
        process.close()
        registry.close()
    assert (tmp_path / "toxiproxy" / "toxiproxy.log").stat().st_size > 0  # the server's own log, kept
