"""The reference broker's wiring complies with the Protocols its components declare (what each needs of the
others): `Broker` with every handler module's host Protocol and `TopicHost`, `FetcherManager` with the replica
manager's `Followers`; members present, call signatures compatible, as `tests/unit/test_protocols.py` checks
the harness's extension points. mypy checks the same statically where `Broker` hands itself to the handlers."""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import pytest

from harness.broker.fetcher import FetcherManager
from harness.broker.handlers_admin import AdminHost
from harness.broker.handlers_controller import ControllerHost
from harness.broker.handlers_data import DataHost
from harness.broker.handlers_group import GroupHost
from harness.broker.handlers_partitions import PartitionsHost
from harness.broker.replica import Followers
from harness.broker.server import Broker
from harness.broker.topic_admin import TopicHost
from tests.unit.test_protocols import _SKIP, _declared_data


def _members(proto: type) -> tuple[set[str], set[str]]:
    """(methods, data members incl. properties) of `proto` and the Protocols it extends."""
    methods: set[str] = set()
    data: set[str] = set()
    for klass in proto.__mro__:
        if klass in (Protocol, object) or not getattr(klass, "_is_protocol", False):
            continue
        for name, value in vars(klass).items():
            if name in _SKIP or name.startswith("_"):
                continue
            if isinstance(value, property):
                data.add(name)
            elif callable(value):
                methods.add(name)
        data |= set(getattr(klass, "__annotations__", {}))
    return methods, data - methods


CASES: list[tuple[type, Any]] = [
    (Broker, TopicHost),
    (Broker, AdminHost),
    (Broker, DataHost),
    (Broker, GroupHost),
    (Broker, PartitionsHost),
    (Broker, ControllerHost),
    (FetcherManager, Followers),
]


@pytest.mark.parametrize(("impl", "proto"), CASES, ids=[f"{c.__name__}-{p.__name__}" for c, p in CASES])
def test_broker_component_complies_with_the_protocol_its_user_declares(impl: type, proto: type) -> None:
    methods, data = _members(proto)
    assert methods | data, f"{proto.__name__} declares nothing"
    for name in sorted(methods):
        have_member = getattr(impl, name, None)
        assert callable(have_member), f"{impl.__name__} lacks method {name}()"
        want = inspect.signature(getattr(proto, name))
        have = inspect.signature(have_member)
        assert list(have.parameters) == list(want.parameters), f"{impl.__name__}.{name}{have} vs {want}"
        assert inspect.iscoroutinefunction(have_member) == inspect.iscoroutinefunction(getattr(proto, name)), name
    missing = data - _declared_data(impl)
    assert not missing, f"{impl.__name__} lacks attributes {sorted(missing)} of {proto.__name__}"
