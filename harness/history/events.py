"""The history's event types: one frozen dataclass per `type`, with typed fields and structured targets.

The classes live in `events_engine` (the run, faults, operations), `events_cluster` (the observers) and
`events_client` (producers, consumers, transactions, pipelines), on the machinery of `events_base`; this module
gathers them: `EVENT_CLASSES` (type name -> class) and `parse_event`, which reads a record back into its class.
docs/design.md's history reference is generated from them (`python -m harness.history.reference`), and
tests/unit/history/test_event_schema.py checks them against the verifiers' Spark schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness.history.events_base import (
    UNSET,
    HistoryEvent,
    JsonRecord,
    JsonValue,
    Unset,
    to_json_value,
)
from harness.history.events_client import (
    CLIENT_EVENTS,
    Ack,
    Assign,
    ClientCrash,
    ClientError,
    Commit,
    CommitError,
    ConsumerError,
    GroupDrain,
    PipeRead,
    Poll,
    Revoke,
    Send,
    SendError,
    TxnAbort,
    TxnBegin,
    TxnCommit,
    TxnFenced,
    TxnZombie,
)
from harness.history.events_cluster import (
    CLUSTER_EVENTS,
    BrokerDown,
    BrokerFenced,
    BrokerUnfenced,
    BrokerUp,
    Controller,
    ControllerView,
    GroupMember,
    GroupState,
    ObserverError,
    PartitionState,
    QuorumReplica,
    QuorumState,
)
from harness.history.events_engine import (
    ENGINE_EVENTS,
    FaultEnd,
    FaultError,
    FaultSkipped,
    FaultStart,
    OpEnd,
    OpStart,
    PartitionResult,
    Phase,
    Probe,
    ReassignmentEntry,
    RunEnd,
    RunError,
    RunStart,
    Signal,
)
from harness.history.nodes import ClientRef, LinkRef, NodeId, Target, parse_target

EVENT_CLASSES: Mapping[str, type[HistoryEvent]] = MappingProxyType(
    {cls.TYPE: cls for cls in ENGINE_EVENTS + CLUSTER_EVENTS + CLIENT_EVENTS})
"""Every event type the harness records -> its class (in the order of docs/design.md's reference)."""


def parse_event(record: Mapping[str, Any]) -> HistoryEvent | None:
    """The typed event a record holds (unknown fields ignored), or None for a type no class declares, or a record
    whose values do not fit its class (a tolerant reader: such a record is no event, never an error)."""
    cls = EVENT_CLASSES.get(str(record.get("type")))
    if cls is None:
        return None
    try:
        return cls.from_json(record)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


def as_event(event: HistoryEvent | Mapping[str, Any]) -> HistoryEvent | None:
    """`event` typed: as it is, or parsed from its record (see `parse_event`)."""
    return event if isinstance(event, HistoryEvent) else parse_event(event)


__all__ = [
    "EVENT_CLASSES",
    "UNSET",
    "Ack",
    "Assign",
    "BrokerDown",
    "BrokerFenced",
    "BrokerUnfenced",
    "BrokerUp",
    "ClientCrash",
    "ClientError",
    "ClientRef",
    "Commit",
    "CommitError",
    "ConsumerError",
    "Controller",
    "ControllerView",
    "FaultEnd",
    "FaultError",
    "FaultSkipped",
    "FaultStart",
    "GroupDrain",
    "GroupMember",
    "GroupState",
    "HistoryEvent",
    "JsonRecord",
    "JsonValue",
    "LinkRef",
    "NodeId",
    "ObserverError",
    "OpEnd",
    "OpStart",
    "PartitionResult",
    "PartitionState",
    "Phase",
    "PipeRead",
    "Poll",
    "Probe",
    "QuorumReplica",
    "QuorumState",
    "ReassignmentEntry",
    "Revoke",
    "RunEnd",
    "RunError",
    "RunStart",
    "Send",
    "SendError",
    "Signal",
    "Target",
    "TxnAbort",
    "TxnBegin",
    "TxnCommit",
    "TxnFenced",
    "TxnZombie",
    "Unset",
    "as_event",
    "parse_event",
    "parse_target",
    "to_json_value",
]
