"""Toxic JSON parsing, defaults and validation of the embedded Toxiproxy (no sockets)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.toxiproxy.toxics import (
    TOXIC_TYPES,
    ApiError,
    Toxic,
    parse_new_toxic,
    parse_toxic_update,
    slice_sizes,
)


def test_new_toxic_gets_toxiproxy_defaults_name_stream_toxicity_and_zero_attributes() -> None:
    toxic = parse_new_toxic({"type": "latency"}, seq=1)
    assert toxic.to_json() == {
        "attributes": {"latency": 0, "jitter": 0},
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1.0,
    }


def test_default_name_uses_the_given_stream() -> None:
    assert parse_new_toxic({"type": "bandwidth", "stream": "Upstream"}, 1).name == "bandwidth_upstream"


@pytest.mark.parametrize("toxic_type", sorted(TOXIC_TYPES))
def test_every_toxic_type_accepts_its_integer_attributes(toxic_type: str) -> None:
    attrs = {key: 7 for key in TOXIC_TYPES[toxic_type]}
    toxic = parse_new_toxic({"type": toxic_type, "attributes": {**attrs, "unknown": "ignored"}}, 1)
    assert dict(toxic.attributes) == attrs


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"type": "nope"}, "invalid toxic type"),
        ({"type": "latency", "stream": "sideways"}, "stream was invalid, can be either upstream or downstream"),
        ({"type": "latency", "attributes": {"latency": "100"}}, "bad request body"),
        ({"type": "latency", "attributes": {"latency": 1.5}}, "bad request body"),
        ({"type": "latency", "attributes": {"latency": -1}}, "bad request body"),
        ({"type": "latency", "attributes": [1]}, "bad request body"),
        ({"type": "latency", "toxicity": "high"}, "bad request body"),
        ([1, 2], "bad request body"),
    ],
)
def test_bad_toxic_bodies_are_400_with_toxiproxy_messages(body: object, message: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_new_toxic(body, 1)
    assert info.value.status == 400
    assert info.value.message.startswith(message)


def test_update_changes_only_given_attributes_and_toxicity() -> None:
    toxic = Toxic("l", "latency", "downstream", 1.0, {"latency": 100, "jitter": 5}, seq=3)
    updated = parse_toxic_update(toxic, {"attributes": {"jitter": 9}, "name": "ignored", "stream": "upstream"})
    assert (updated.name, updated.stream, updated.seq) == ("l", "downstream", 3)
    assert dict(updated.attributes) == {"latency": 100, "jitter": 9}
    assert parse_toxic_update(toxic, {"toxicity": 0.25}).toxicity == 0.25


@given(st.integers(0, 20_000), st.integers(1, 500), st.integers(0, 600), st.integers(0, 2**32))
def test_slicer_sizes_are_positive_and_sum_to_the_chunk(total: int, average: int, variation: int,
                                                        seed: int) -> None:
    sizes = slice_sizes(total, average, variation, random.Random(seed).randrange)
    assert sum(sizes) == total
    assert all(size > 0 for size in sizes)
    if variation < average:
        assert all(size <= average + variation for size in sizes)
