"""EmbeddedToxiproxy as a resource: clean teardown, clear startup errors, per-connection toxicity."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from harness.errors import BackendError
from harness.toxiproxy.client import ToxiproxyClient
from harness.toxiproxy.server import EmbeddedToxiproxy
from tests.fixtures.toxiproxy import EchoServer, connect

pytestmark = pytest.mark.integration


def _refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_stop_closes_api_proxies_live_connections_and_the_thread(toxiproxy_echo: EchoServer) -> None:
    threads_before = set(threading.enumerate())
    server = EmbeddedToxiproxy(seed=3).start()
    with ToxiproxyClient(server.url) as client:
        listen = client.create_proxy("p", toxiproxy_echo.addr).listen
    live = connect(listen)
    live.sendall(b"x")
    assert live.recv(1) == b"x"
    server.stop()
    with contextlib.suppress(ConnectionResetError):  # closed: FIN or RST
        assert live.recv(1) == b""
    live.close()
    host, port = listen.rsplit(":", 1)
    assert _refused(host, int(port)) and _refused(server.host, server.port)
    assert not [t for t in set(threading.enumerate()) - threads_before if t.name == "embedded-toxiproxy"]


def test_start_on_a_taken_port_raises_backend_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BackendError, match=f"127.0.0.1:{port}"):
            EmbeddedToxiproxy(port=port).start()


def test_toxicity_is_drawn_once_per_connection_not_per_chunk(toxiproxy_client: ToxiproxyClient,
                                                            toxiproxy_echo: EchoServer) -> None:
    listen = toxiproxy_client.create_proxy("p", toxiproxy_echo.addr).listen
    toxiproxy_client.add_toxic("p", "latency", {"latency": 60}, toxicity=0.5)
    outcomes = []
    for _ in range(6):
        with connect(listen) as sock:
            slow = []
            for _ in range(3):
                start = time.perf_counter()
                sock.sendall(b"?")
                assert sock.recv(1) == b"?"
                slow.append(time.perf_counter() - start >= 0.05)
            assert len(set(slow)) == 1, slow  # every round trip of a connection agrees
            outcomes.append(slow[0])
    assert len(set(outcomes)) == 2  # seed 1234 hits some connections and spares others
