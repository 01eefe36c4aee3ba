"""Every implementation of an extension point (backend, cluster, link, observer, workload, operator, the
rolling restart's node cycler, the producer restarter, every fault kind of the catalogue and the injector they act
through) has the members its Protocol declares, with compatible
call signatures."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from harness.cluster.base import Cluster, ClusterBackend, DiskControl, Link, MetadataLogAccess, SecuredAccess
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.cluster.process_toxiproxy import ProcessLink
from harness.faults.catalog import CATALOG
from harness.faults.inject import FaultInjector, MemberControl, ProducerControl
from harness.faults.kafka_operator import KafkaOperator
from harness.faults.kind import FaultEnv, FaultKind
from harness.faults.migration_op import MigrationSwitch
from harness.faults.operations import GroupScaler, NodeCycler, Operator, ProducerRestarter, ReleaseSwitch
from harness.install.java_client import JavaClient
from harness.install.librdkafka_client import LibrdkafkaClient
from harness.observe.admin import AdminObserver
from harness.observe.base import Observer
from harness.observe.isolated import IsolatedAdminObserver
from harness.observe.zookeeper import ZooKeeperObserver
from harness.workload.base import MemberClient, Workload
from harness.workload.consumer import ConsumerGroupWorkload
from harness.workload.java_client import WorkerClient, WorkerMember, WorkerProducerWorkload
from harness.workload.member import Member
from harness.workload.producer import ProducerWorkload

_SKIP = {"__init__", "__subclasshook__", "__class_getitem__", "__init_subclass__", "__weakref__", "__dict__",
         "__module__", "__doc__", "__annotations__", "__parameters__", "__abstractmethods__", "__protocol_attrs__",
         "__non_callable_proto_members__", "__slots__", "__orig_bases__", "__qualname__"}


def _members(proto: type) -> tuple[set[str], set[str]]:
    methods = {n for n, v in vars(proto).items() if callable(v) and n not in _SKIP and not n.startswith("_abc")}
    data = set(getattr(proto, "__annotations__", {})) - methods
    return methods, data


def _declared_data(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        names |= set(getattr(klass, "__annotations__", {}))
        names |= {n for n, v in vars(klass).items() if isinstance(v, property) or not callable(v)}
        names |= set(getattr(klass, "__slots__", ()))
        init = vars(klass).get("__init__")
        if init is not None:
            try:
                source = inspect.getsource(init)
            except (OSError, TypeError):
                continue
            names |= {w.split("=")[0].strip().split(":")[0].strip()[5:] for w in source.split("\n")
                      if w.strip().startswith("self.")}
    return names


CASES: list[tuple[type, Any]] = [
    (ProcessBackend, ClusterBackend),
    (ProcessCluster, Cluster),
    (ProcessCluster, DiskControl),
    (ProcessCluster, SecuredAccess),
    (ProcessCluster, MetadataLogAccess),
    (ProcessLink, Link),
    (ZooKeeperObserver, Observer),
    (AdminObserver, Observer),
    (IsolatedAdminObserver, Observer),
    (ProducerWorkload, Workload),
    (ConsumerGroupWorkload, Workload),
    (KafkaOperator, Operator),
    (ProcessCluster, ReleaseSwitch),
    (ProcessCluster, MigrationSwitch),
    (ConsumerGroupWorkload, GroupScaler),
    (FaultInjector, NodeCycler),
    (ProducerWorkload, ProducerRestarter),
    (ProducerWorkload, ProducerControl),
    (ConsumerGroupWorkload, MemberControl),
    (WorkerProducerWorkload, Workload),
    (WorkerProducerWorkload, ProducerRestarter),
    (WorkerProducerWorkload, ProducerControl),
    (Member, MemberClient),
    (WorkerMember, MemberClient),
    (JavaClient, WorkerClient),
    (LibrdkafkaClient, WorkerClient),
    (FaultInjector, FaultEnv),
    *((kind, FaultKind) for kind in dict.fromkeys(type(k) for k in CATALOG.values())),
]


@pytest.mark.parametrize(("impl", "proto"), CASES, ids=[f"{c.__name__}-{p.__name__}" for c, p in CASES])
def test_implementation_complies_with_its_protocol(impl: type, proto: type) -> None:
    methods, data = _members(proto)
    for name in sorted(methods):
        assert callable(getattr(impl, name, None)), f"{impl.__name__} lacks method {name}()"
        want = inspect.signature(getattr(proto, name))
        have = inspect.signature(getattr(impl, name))
        required = [p.name for p in want.parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
        has = list(have.parameters)
        assert len(has) >= len(required), f"{impl.__name__}.{name}{have} cannot take {proto.__name__}.{name}{want}"
    missing = data - _declared_data(impl)
    assert not missing, f"{impl.__name__} lacks attributes {sorted(missing)} of {proto.__name__}"


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_catalogue_fault_kind_complies_with_fault_kind(name: str) -> None:
    """Its class has `apply`, `heal` and `describe` (above); its instance has the `spec` it is registered by."""
    kind = CATALOG[name]
    assert kind.spec.name == name
    for method in ("apply", "heal", "describe"):
        want = list(inspect.signature(getattr(FaultKind, method)).parameters)[1:]
        assert list(inspect.signature(getattr(kind, method)).parameters) == want, (name, method)
