"""ProcessLink's argument handling before anything reaches Toxiproxy (the client is a recording
stand-in here; the real embedded server is exercised in tests/integration/process_backend)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from harness.cluster.base import Link
from harness.cluster.process_toxiproxy import ProcessLink, _version_text
from harness.errors import ConfigError


class _RecordingClient:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def add_toxic(self, proxy: str, type: str, attributes: dict[str, int], **kw: Any) -> Any:
        self.calls.append((proxy, type, attributes, kw))
        return _Named(kw.get("name") or f"{type}_{kw['stream']}")


@dataclass(frozen=True, slots=True)
class _Named:
    """What the client returns, as far as ProcessLink reads it (ToxicInfo.name)."""

    name: str


def test_link_passes_whole_number_attributes_as_ints_with_toxiproxy_defaults() -> None:
    client = _RecordingClient()
    link = ProcessLink("1->2", cast(Any, client))
    assert isinstance(link, Link)
    assert link.add_toxic("latency", {"latency": 250.0, "jitter": 10}) == "latency_downstream"
    assert client.calls == [("1->2", "latency", {"latency": 250, "jitter": 10},
                             {"name": None, "stream": "downstream", "toxicity": 1.0})]


def test_link_rejects_fractional_toxic_attributes_naming_them() -> None:
    client = _RecordingClient()
    with pytest.raises(ConfigError, match=r"latency=2\.5"):
        ProcessLink("client->1", cast(Any, client)).add_toxic("latency", {"latency": 2.5})
    assert client.calls == []


def test_version_answer_is_read_as_json_or_plain_text() -> None:
    assert _version_text(b'{"version": "2.12.0"}\n') == "2.12.0"
    assert _version_text(b"2.1.4\n") == "2.1.4"
