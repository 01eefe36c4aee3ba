"""JSON helpers shared by the znode codecs: compact encoding and tolerant, error-naming decoding."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from harness.errors import HarnessError


class ZnodeDecodeError(HarnessError):
    """A znode's data is not what ZooKeeper-mode Kafka writes there."""

    def _init__(self, what: str, problem: str, data: bytes | str | None) -> None:
        shown = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        if shown is not None and len(shown) > 300:
            shown = shown[:300] + "..."
        super().__init__(f"cannot decode {what}: {problem} (data: {shown!r})")


def now_ms() -> int:
    return int(time.time() * 1000)


def dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def loads(what: str, data: bytes | str | None) -> dict[str, Any]:
    if data is None or (isinstance(data, (bytes, str)) and not data.strip()):
        raise ZnodeDecodeError(what, "empty znode data", data)
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise ZnodeDecodeError(what, f"not JSON: {exc}", data) from exc
    if not isinstance(obj, dict):
        raise ZnodeDecodeError(what, "expected a JSON object", data)
    return obj


def int_field(what: str, obj: Mapping[str, Any], key: str, data: bytes | str | None, default: int | None = None) -> int:
    value = obj.get(key, default)
    if value is None:
        raise ZnodeDecodeError(what, f"missing {key!r}", data)
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(value)
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ZnodeDecodeError(what, f"{key!r} is not an integer: {value!r}", data) from exc


def int_list(what: str, value: object, key: str, data: bytes | str | None) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ZnodeDecodeError(what, f"{key!r} is not a list: {value!r}", data)
    try:
        return tuple(int(v) for v in value if not isinstance(v, bool))
    except (TypeError, ValueError) as exc:
        raise ZnodeDecodeError(what, f"{key!r} holds a non-integer: {value!r}", data) from exc


def opt_timestamp(obj: Mapping[str, Any]) -> int | None:
    value = obj.get("timestamp")
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def topic_partitions(what: str, value: object, data: bytes | str | None) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, list):
        raise ZnodeDecodeError(what, f"'partitions' is not a list: {value!r}", data)
    out: list[tuple[str, int]] = []
    for item in value:
        if not isinstance(item, dict) or "topic" not in item or "partition" not in item:
            raise ZnodeDecodeError(what, f"partition entry needs topic and partition: {item!r}", data)
        out.append((str(item["topic"]), int_field(what, item, "partition", data)))
    return tuple(out)
