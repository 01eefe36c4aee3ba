"""ToxiproxyClient behaviour that needs no server: URL parsing, JSON→dataclasses, unavailable server."""

from __future__ import annotations

import socket

import pytest
import toxiproxy.api

from harness.errors import HarnessError
from harness.toxiproxy.client import (
    ProxyInfo,
    ToxiproxyClient,
    ToxiproxyClientError,
    ToxiproxyUnavailableError,
)
from harness.toxiproxy.server import main


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_url_forms_are_parsed_and_bad_ones_name_the_url() -> None:
    assert ToxiproxyClient("127.0.0.1:8474").url == "http://127.0.0.1:8474"
    assert ToxiproxyClient("http://localhost:9000/").port == 9000
    with pytest.raises(ToxiproxyClientError, match="no-port"):
        ToxiproxyClient("http://no-port")


def test_proxy_json_becomes_typed_info_with_listen_host_and_port() -> None:
    info = ProxyInfo.from_json({
        "name": "1->2", "listen": "127.0.0.1:4321", "upstream": "127.0.0.1:9092", "enabled": True,
        "toxics": [{"name": "t", "type": "latency", "stream": "upstream", "toxicity": 0.5,
                    "attributes": {"latency": 10, "jitter": 0}}],
    })
    assert (info.listen_host, info.listen_port, info.toxics[0].attributes["latency"]) == ("127.0.0.1", 4321, 10)


def test_unreachable_server_raises_unavailable_naming_url_and_proxy_and_restores_library_state() -> None:
    before = (toxiproxy.api.APIConsumer.host, toxiproxy.api.APIConsumer.port, toxiproxy.api.requests)
    port = _closed_port()
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(ToxiproxyUnavailableError) as info:
        client.add_toxic("client->1", "latency", {"latency": 1})
    assert isinstance(info.value, HarnessError)
    assert f"127.0.0.1:{port}" in str(info.value) and "'client->1'" in str(info.value)
    assert not client.running()
    after = (toxiproxy.api.APIConsumer.host, toxiproxy.api.APIConsumer.port, toxiproxy.api.requests)
    assert after == before


def test_serve_main_rejects_bad_arguments_with_exit_code_2() -> None:
    assert main(["--port", "70000"]) == 2
    assert main(["--no-such-flag"]) == 2
