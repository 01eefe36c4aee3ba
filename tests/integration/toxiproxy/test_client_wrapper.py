"""ToxiproxyClient (typed wrapper over toxiproxy-python) against embedded servers: calls, errors, two servers."""

from __future__ import annotations

import pytest
import toxiproxy.api

from harness.errors import HarnessError
from harness.toxiproxy.client import (
    InvalidRequestError,
    ProxyExistsError,
    ProxyNotFoundError,
    ProxySpec,
    ToxicExistsError,
    ToxicInfo,
    ToxicNotFoundError,
    ToxiproxyClient,
    ToxiproxyClientError,
)
from harness.toxiproxy.server import EmbeddedToxiproxy
from tests.fixtures.toxiproxy import EchoServer, connect

pytestmark = pytest.mark.integration


def test_proxy_lifecycle_create_get_disable_enable_delete(toxiproxy_client: ToxiproxyClient,
                                                           toxiproxy_echo: EchoServer) -> None:
    c = toxiproxy_client
    assert c.wait_ready(5).startswith("2.")
    info = c.create_proxy("client->1", toxiproxy_echo.addr)
    assert info.listen_port > 0 and info.enabled
    assert c.get_proxy("client->1") == info
    assert c.proxies() == {"client->1": info}
    c.disable("client->1")
    assert c.get_proxy("client->1").enabled is False
    c.enable("client->1")
    with connect(c.get_proxy("client->1").listen) as sock:
        sock.sendall(b"a")
        assert sock.recv(1) == b"a"
    c.delete_proxy("client->1")
    assert c.find_proxy("client->1") is None
    c.delete_proxy("client->1", missing_ok=True)


def test_toxic_add_update_list_remove(toxiproxy_client: ToxiproxyClient, toxiproxy_echo: EchoServer) -> None:
    c = toxiproxy_client
    c.create_proxy("p", toxiproxy_echo.addr)
    toxic = c.add_toxic("p", "latency", {"latency": 50}, stream="upstream", toxicity=0.5)
    assert toxic == ToxicInfo("latency_upstream", "latency", "upstream", 0.5, {"latency": 50, "jitter": 0})
    updated = c.update_toxic("p", "latency_upstream", {"jitter": 5}, toxicity=1.0)
    assert updated.attributes == {"latency": 50, "jitter": 5} and updated.toxicity == 1.0
    assert c.toxics("p") == [updated]
    assert c.get_proxy("p").toxics == (updated,)
    c.remove_toxic("p", "latency_upstream")
    c.remove_toxic("p", "latency_upstream", missing_ok=True)
    assert c.toxics("p") == []


def test_errors_are_harness_errors_naming_server_proxy_and_toxic(toxiproxy_client: ToxiproxyClient,
                                                                 toxiproxy_echo: EchoServer) -> None:
    c = toxiproxy_client
    c.create_proxy("p", toxiproxy_echo.addr)
    c.add_toxic("p", "timeout", name="blackhole")
    cases = [
        (lambda: c.create_proxy("p", toxiproxy_echo.addr), ProxyExistsError, "'p'"),
        (lambda: c.get_proxy("nope"), ProxyNotFoundError, "'nope'"),
        (lambda: c.enable("nope"), ProxyNotFoundError, "'nope'"),
        (lambda: c.add_toxic("p", "timeout", name="blackhole"), ToxicExistsError, "'blackhole'"),
        (lambda: c.add_toxic("nope", "latency"), ProxyNotFoundError, "'nope'"),
        (lambda: c.add_toxic("p", "bogus"), InvalidRequestError, "invalid toxic type"),
        (lambda: c.add_toxic("p", "latency", {"latency": -1}), InvalidRequestError, "latency"),
        (lambda: c.update_toxic("p", "ghost", {"timeout": 1}), ToxicNotFoundError, "'ghost'"),
        (lambda: c.remove_toxic("p", "ghost"), ToxicNotFoundError, "'ghost'"),
        (lambda: c.create_proxy("busy", "127.0.0.1:1", listen=toxiproxy_echo.addr), ToxiproxyClientError, "500"),
    ]
    for call, kind, text in cases:
        with pytest.raises(kind) as info:
            call()
        assert isinstance(info.value, HarnessError)
        assert c.url in str(info.value) and text in str(info.value), str(info.value)


def test_populate_uses_server_side_populate_and_keeps_live_proxies(toxiproxy_client: ToxiproxyClient,
                                                                   toxiproxy_echo: EchoServer) -> None:
    c = toxiproxy_client
    first = c.populate([ProxySpec("a", toxiproxy_echo.addr), ProxySpec("b", toxiproxy_echo.addr, enabled=False)])
    assert [p.name for p in first] == ["a", "b"] and first[1].enabled is False
    with connect(first[0].listen) as sock:
        again = c.populate([ProxySpec("a", toxiproxy_echo.addr, listen=first[0].listen)])
        assert again == [first[0]]
        sock.sendall(b"still")  # the live connection was not cut by re-populating an identical proxy
        assert sock.recv(5) == b"still"
    c.reset()
    assert all(p.enabled for p in c.proxies().values())
    c.destroy_all()
    assert c.proxies() == {}


def test_two_clients_address_two_servers_and_library_defaults_are_restored(
        toxiproxy_server: EmbeddedToxiproxy, toxiproxy_echo: EchoServer) -> None:
    before = (toxiproxy.api.APIConsumer.host, toxiproxy.api.APIConsumer.port)
    with EmbeddedToxiproxy(seed=5) as other, ToxiproxyClient(toxiproxy_server.url) as c1, \
            ToxiproxyClient(other.url) as c2:
        c1.create_proxy("only-on-1", toxiproxy_echo.addr)
        c2.create_proxy("only-on-2", toxiproxy_echo.addr)
        assert set(c1.proxies()) == {"only-on-1"}
        assert set(c2.proxies()) == {"only-on-2"}
    assert (toxiproxy.api.APIConsumer.host, toxiproxy.api.APIConsumer.port) == before
