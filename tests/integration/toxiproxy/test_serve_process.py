"""`python -m harness.toxiproxy.server` (what `kafka-chaos toxiproxy serve` runs) as a real child process."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from harness.toxiproxy.client import ToxiproxyClient
from tests.fixtures.toxiproxy import REPO_ROOT, EchoServer, ToxiproxyProcess, connect

pytestmark = pytest.mark.integration


def test_serve_answers_the_api_proxies_traffic_and_exits_0_on_sigterm(toxiproxy_echo: EchoServer) -> None:
    proc = ToxiproxyProcess(seed=7)
    try:
        with ToxiproxyClient(proc.url) as client:
            assert client.wait_ready(10).startswith("2.")
            listen = client.create_proxy("client->1", toxiproxy_echo.addr).listen
            client.add_toxic("client->1", "latency", {"latency": 1})
            with connect(listen) as sock:
                sock.sendall(b"through a child process")
                assert sock.recv(64) == b"through a child process"
    finally:
        code = proc.stop()
    assert code == 0


def test_serve_exits_1_naming_the_address_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "harness.toxiproxy.server", "--port", str(port)],
            capture_output=True, text=True, timeout=30, cwd=str(REPO_ROOT),
        )
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr


def test_process_fixture_yields_url_host_and_port(toxiproxy_process: ToxiproxyProcess) -> None:
    assert toxiproxy_process.url == f"http://{toxiproxy_process.host}:{toxiproxy_process.port}"
    with ToxiproxyClient(toxiproxy_process.url) as client:
        assert client.proxies() == {}
