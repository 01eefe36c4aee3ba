"""The real toxiproxy-python 0.1.1 client, used directly, against the embedded server and the real Toxiproxy
(`any_toxiproxy`: parametrized "embedded" / "real"): every call works on both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from tests.fixtures.toxiproxy import EchoServer, ToxiproxyUnderTest, connect

pytestmark = pytest.mark.integration


@pytest.fixture
def lib(any_toxiproxy: ToxiproxyUnderTest) -> Iterator[toxiproxy.Toxiproxy]:
    """toxiproxy-python pointed at the server under test (class-level host/port restored afterwards)."""
    saved = (APIConsumer.host, APIConsumer.port)
    server = toxiproxy.Toxiproxy()
    server.update_api_consumer(any_toxiproxy.host, any_toxiproxy.port)
    try:
        yield server
    finally:
        APIConsumer.host, APIConsumer.port = saved


def test_running_version_create_list_get_destroy(lib: toxiproxy.Toxiproxy, toxiproxy_echo: EchoServer,
                                                 any_toxiproxy: ToxiproxyUnderTest) -> None:
    assert lib.running() is True
    # JSON since Toxiproxy 2.6.0; the bare version string before (api.go Version)
    expected = b'"version"' if any_toxiproxy.version_at_least(2, 6) else any_toxiproxy.version.encode()
    assert expected in lib.version()
    proxy = lib.create(upstream=toxiproxy_echo.addr, name="client->1")
    assert proxy.enabled is True and not proxy.listen.endswith(":0")
    assert set(lib.proxies()) == {"client->1"}
    assert lib.get_proxy("client->1").listen == proxy.listen
    with pytest.raises(ProxyExists):
        lib.create(upstream=toxiproxy_echo.addr, name="client->1")
    assert lib.destroy(proxy) is True
    assert lib.get_proxy("client->1") is None
    with pytest.raises(NotFound):
        proxy.destroy()


def test_toxics_add_list_get_destroy_and_errors(lib: toxiproxy.Toxiproxy, toxiproxy_echo: EchoServer) -> None:
    proxy = lib.create(upstream=toxiproxy_echo.addr, name="p")
    proxy.add_toxic(type="latency", attributes={"latency": 5, "jitter": 1})
    proxy.add_toxic(type="bandwidth", stream="upstream", name="bw", toxicity=0.5, attributes={"rate": 10})
    toxics = proxy.toxics()
    assert set(toxics) == {"latency_downstream", "bw"}
    latency = proxy.get_toxic("latency_downstream")
    assert (latency.type, latency.stream, latency.toxicity, latency.attributes) == (
        "latency", "downstream", 1.0, {"latency": 5, "jitter": 1})
    assert toxics["bw"].toxicity == 0.5
    with pytest.raises(ProxyExists):  # the library maps every 409, toxics included, to ProxyExists
        proxy.add_toxic(type="latency")
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="no_such_toxic")
    assert proxy.destroy_toxic("bw") is True
    with pytest.raises(NotFound):
        proxy.destroy_toxic("bw")
    assert set(proxy.toxics()) == {"latency_downstream"}


def test_disable_enable_down_and_reset(lib: toxiproxy.Toxiproxy, toxiproxy_echo: EchoServer) -> None:
    proxy = lib.create(upstream=toxiproxy_echo.addr, name="p")
    proxy.disable()
    assert lib.get_proxy("p").enabled is False
    proxy.enable()
    assert lib.get_proxy("p").enabled is True
    with proxy.down():
        assert lib.get_proxy("p").enabled is False
    assert lib.get_proxy("p").enabled is True
    proxy.add_toxic(type="timeout", attributes={"timeout": 0})
    proxy.disable()
    assert lib.reset() is True
    assert lib.get_proxy("p").enabled is True and proxy.toxics() == {}
    with connect(lib.get_proxy("p").listen) as sock:
        sock.sendall(b"hi")
        assert sock.recv(2) == b"hi"


def test_library_populate_and_destroy_all(lib: toxiproxy.Toxiproxy, toxiproxy_echo: EchoServer) -> None:
    created = lib.populate([
        {"name": "a", "upstream": toxiproxy_echo.addr, "listen": "127.0.0.1:0"},
        {"name": "b", "upstream": toxiproxy_echo.addr, "listen": "127.0.0.1:0"},
    ])
    assert sorted(p.name for p in created) == ["a", "b"]
    lib.destroy_all()
    assert lib.proxies() == {}
