"""Toxic values of the embedded Toxiproxy: the toxic types, their attributes, and API input parsing.

Owns the JSON shape of a toxic (`{"name","type","stream","toxicity","attributes"}`), the defaults
Toxiproxy 2.x applies (stream `downstream`, toxicity 1.0, name `<type>_<stream>`, attributes 0), and
the 400/409-style `ApiError`s its API returns for bad input. No I/O here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from harness.errors import HarnessError

STREAMS: tuple[str, str] = ("upstream", "downstream")

# Toxic type -> its integer attributes, in Toxiproxy's order. Units: latency/jitter/delay(slow_close)/
# timeout in ms; rate in KB/s (1 KB = 1000 bytes, as Toxiproxy computes it); slicer delay in µs;
# average_size/size_variation/bytes in bytes.
TOXIC_TYPES: dict[str, tuple[str, ...]] = {
    "latency": ("latency", "jitter"),
    "bandwidth": ("rate",),
    "slow_close": ("delay",),
    "timeout": ("timeout",),
    "reset_peer": ("timeout",),
    "slicer": ("average_size", "size_variation", "delay"),
    "limit_data": ("bytes",),
}


class ApiError(HarnessError):
    """An error the Toxiproxy API answers with: JSON `{"error": message, "status": status}`."""

    def __init__(self, message: str, status: int) -> None:
        self.message = message
        self.status = status
        super().__init__(f"{status} {message}")

    def to_json(self) -> dict[str, object]:
        return {"error": self.message, "status": self.status}


def bad_body(detail: str) -> ApiError:
    return ApiError(f"bad request body: {detail}", 400)


ERR_INVALID_STREAM = "stream was invalid, can be either upstream or downstream"
ERR_INVALID_TOXIC_TYPE = "invalid toxic type"
ERR_TOXIC_EXISTS = "toxic already exists"
ERR_TOXIC_NOT_FOUND = "toxic not found"


@dataclass(frozen=True, slots=True)
class Toxic:
    """One toxic on a proxy. `seq` orders toxics in the chain (creation order); it is not in the JSON."""

    name: str
    type: str
    stream: str
    toxicity: float
    attributes: Mapping[str, int] = field(default_factory=dict)
    seq: int = 0

    def attr(self, key: str) -> int:
        return int(self.attributes.get(key, 0))

    def to_json(self) -> dict[str, object]:
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
        }


def _as_int(key: str, value: object) -> int:
    """Go decodes attributes into int fields: only integral JSON numbers are accepted."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_body(f"json: cannot unmarshal {type(value).__name__} into attribute {key!r} of type int")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise bad_body(f"json: cannot unmarshal number {value!r} into attribute {key!r} of type int")
        value = int(value)
    if value < 0:
        # Real Toxiproxy accepts some negatives and misbehaves on others (rand.Intn panics); refuse all.
        raise bad_body(f"attribute {key!r} must be >= 0, got {value}")
    return value


def _parse_attributes(toxic_type: str, raw: object, base: Mapping[str, int]) -> dict[str, int]:
    if raw is None:
        return dict(base)
    if not isinstance(raw, dict):
        raise bad_body(f"json: cannot unmarshal {type(raw).__name__} into field attributes of type object")
    out = dict(base)
    for key in TOXIC_TYPES[toxic_type]:
        if key in raw:
            out[key] = _as_int(key, raw[key])
    return out  # unknown keys are ignored, as Go's decoder does


def _parse_toxicity(raw: object, default: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise bad_body(f"json: cannot unmarshal {raw!r} into field toxicity of type float32")
    return float(raw)


def _expect_str(body: Mapping[str, object], key: str, default: str) -> str:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise bad_body(f"json: cannot unmarshal {type(value).__name__} into field {key} of type string")
    return value


def parse_new_toxic(body: object, seq: int) -> Toxic:
    """Parse a POST /proxies/{p}/toxics body into a `Toxic`, applying Toxiproxy's defaults.

    Check order follows Toxiproxy: body → stream → name default → type; the caller checks 409.
    """
    if not isinstance(body, dict):
        raise bad_body("json: cannot unmarshal non-object into toxic")
    stream = _expect_str(body, "stream", "downstream")
    if stream.lower() not in STREAMS:
        raise ApiError(ERR_INVALID_STREAM, 400)
    stream = stream.lower()
    toxic_type = _expect_str(body, "type", "")
    name = _expect_str(body, "name", "") or f"{toxic_type}_{stream}"
    if toxic_type not in TOXIC_TYPES:
        raise ApiError(ERR_INVALID_TOXIC_TYPE, 400)
    toxicity = _parse_toxicity(body.get("toxicity"), 1.0)
    defaults = {key: 0 for key in TOXIC_TYPES[toxic_type]}
    attributes = _parse_attributes(toxic_type, body.get("attributes"), defaults)
    return Toxic(name=name, type=toxic_type, stream=stream, toxicity=toxicity, attributes=attributes, seq=seq)


def parse_toxic_update(existing: Toxic, body: object) -> Toxic:
    """Apply a POST/PATCH /proxies/{p}/toxics/{t} body: only `attributes` (partial) and `toxicity` change."""
    if not isinstance(body, dict):
        raise bad_body("json: cannot unmarshal non-object into toxic")
    attributes = _parse_attributes(existing.type, body.get("attributes"), existing.attributes)
    toxicity = _parse_toxicity(body.get("toxicity"), existing.toxicity)
    return replace(existing, attributes=attributes, toxicity=toxicity)


def slice_sizes(total: int, average: int, variation: int, randrange: object) -> list[int]:
    """Split `total` bytes into slice sizes around `average` ± `variation` (Toxiproxy's slicer halving).

    `randrange` is a `random.Random.randrange`-like callable. Always returns positive sizes summing to
    `total`; never recurses endlessly even for variation >= average (midpoints are clamped).
    """
    assert callable(randrange)
    if average <= 0 or total <= 0:
        return [total] if total > 0 else []
    sizes: list[int] = []
    stack = [(0, total)]
    while stack:
        start, end = stack.pop()
        if (end - start) - average <= variation:
            sizes.append(end - start)
            continue
        offset = randrange(-variation, variation) if variation > 0 else 0
        mid = min(max(start + (end - start) // 2 + offset, start + 1), end - 1)
        stack.append((mid, end))  # right half after the left (stack is LIFO)
        stack.append((start, mid))
    return sizes
