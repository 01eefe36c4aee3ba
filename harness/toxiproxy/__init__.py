"""Toxiproxy for the harness: an embedded Toxiproxy-2.x-API-compatible server and a typed client.

- `EmbeddedToxiproxy` / `ToxiproxyServer` / `main` (server.py): the server, in-process or `serve`.
- `ToxiproxyClient` (client.py): typed calls over toxiproxy-python against any Toxiproxy 2.x API.

Names are imported lazily so `python -m harness.toxiproxy.server` runs without a double import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.toxiproxy.client import (
        InvalidRequestError,
        ProxyExistsError,
        ProxyInfo,
        ProxyNotFoundError,
        ProxySpec,
        ToxicExistsError,
        ToxicInfo,
        ToxicNotFoundError,
        ToxiproxyClient,
        ToxiproxyClientError,
        ToxiproxyUnavailableError,
    )
    from harness.toxiproxy.server import EmbeddedToxiproxy, ToxiproxyServer, main
    from harness.toxiproxy.toxics import TOXIC_TYPES

_WHERE = {
    "InvalidRequestError": "client",
    "ProxyExistsError": "client",
    "ProxyInfo": "client",
    "ProxyNotFoundError": "client",
    "ProxySpec": "client",
    "ToxicExistsError": "client",
    "ToxicInfo": "client",
    "ToxicNotFoundError": "client",
    "ToxiproxyClient": "client",
    "ToxiproxyClientError": "client",
    "ToxiproxyUnavailableError": "client",
    "EmbeddedToxiproxy": "server",
    "ToxiproxyServer": "server",
    "main": "server",
    "TOXIC_TYPES": "toxics",
}

__all__ = [
    "TOXIC_TYPES",
    "EmbeddedToxiproxy",
    "InvalidRequestError",
    "ProxyExistsError",
    "ProxyInfo",
    "ProxyNotFoundError",
    "ProxySpec",
    "ToxicExistsError",
    "ToxicInfo",
    "ToxicNotFoundError",
    "ToxiproxyClient",
    "ToxiproxyClientError",
    "ToxiproxyServer",
    "ToxiproxyUnavailableError",
    "main",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.toxiproxy' has no attribute {name!r}")
    return getattr(importlib.import_module(f"harness.toxiproxy.{module}"), name)
