"""Seeded draws of the embedded Toxiproxy: same seed, proxy, connection and toxic → same numbers."""

from __future__ import annotations

import asyncio

from harness.toxiproxy.proxy import Proxy, join_hostport, split_hostport
from harness.toxiproxy.toxics import Toxic


def _proxy(seed: int, name: str = "p") -> Proxy:
    return Proxy(asyncio.new_event_loop(), name, "127.0.0.1:0", "127.0.0.1:1", seed, "127.0.0.1")


def test_draws_depend_only_on_seed_proxy_connection_and_toxic() -> None:
    toxic = Toxic("lat", "latency", "downstream", 0.5, {"latency": 1, "jitter": 10})
    a, b = _proxy(42), _proxy(42)
    try:
        seq_a = [a.rng_for(i, toxic, "toxicity").random() for i in range(5)]
        assert seq_a == [b.rng_for(i, toxic, "toxicity").random() for i in range(5)]
        assert len(set(seq_a)) == 5
        other = _proxy(43)
        assert other.rng_for(0, toxic, "toxicity").random() != seq_a[0]
        renamed = _proxy(42, "q")
        assert renamed.rng_for(0, toxic, "toxicity").random() != seq_a[0]
        for proxy in (other, renamed):
            proxy.loop.close()
    finally:
        a.loop.close()
        b.loop.close()


def test_host_port_parsing_and_formatting() -> None:
    assert split_hostport("127.0.0.1:0", "x") == ("127.0.0.1", 0)
    assert split_hostport(":9092", "127.0.0.1") == ("127.0.0.1", 9092)
    assert split_hostport("[::1]:80", "x") == ("::1", 80)
    assert join_hostport("::1", 80) == "[::1]:80"
    for bad in ("nohost", "h:port", "h:70000"):
        try:
            split_hostport(bad, "x")
        except ValueError as exc:
            assert repr(bad) in str(exc)
        else:
            raise AssertionError(f"{bad!r} accepted")
