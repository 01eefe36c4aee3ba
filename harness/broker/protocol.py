"""The Kafka wire protocol as this broker speaks it: supported APIs/versions, request decoding, response encoding.

Owns the table of APIs the broker answers and the (non-flexible) version ranges it advertises,
the request-header peek (api key, version, correlation id), a handler's `Ctx` (that head, the
listener, the client), decoding with kafka-python 3.x's generated message classes
(`Req.decode(frame, version=v, header=True)`), encoding responses with header v0
(`Resp(...).with_header(correlation_id=c)` then `.encode(header=True, framed=True)`), and the
ApiVersions negotiation (every API is advertised at non-flexible versions only, except
DescribeCluster, which exists only flexible): a request newer than we advertise (librdkafka opens with v3) is
answered with UNSUPPORTED_VERSION in a v0 body listing our ranges, and the client retries with v0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse

from harness.errors import ProtocolError

_PEEK = struct.Struct(">hhi")
UNSUPPORTED_VERSION = 35


@dataclass(frozen=True, slots=True)
class Api:
    """One API this broker answers, with the version range it advertises (all non-flexible)."""

    key: int
    name: str
    request: Any
    response: Any
    min_version: int
    max_version: int


APIS: dict[int, Api] = {a.key: a for a in (
    Api(0, "Produce", ProduceRequest, ProduceResponse, 3, 8),
    Api(1, "Fetch", FetchRequest, FetchResponse, 4, 11),
    Api(2, "ListOffsets", ListOffsetsRequest, ListOffsetsResponse, 1, 5),
    Api(3, "Metadata", MetadataRequest, MetadataResponse, 0, 8),
    Api(8, "OffsetCommit", OffsetCommitRequest, OffsetCommitResponse, 2, 7),
    Api(9, "OffsetFetch", OffsetFetchRequest, OffsetFetchResponse, 1, 5),
    Api(10, "FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse, 0, 2),
    Api(11, "JoinGroup", JoinGroupRequest, JoinGroupResponse, 0, 5),
    Api(12, "Heartbeat", HeartbeatRequest, HeartbeatResponse, 0, 3),
    Api(13, "LeaveGroup", LeaveGroupRequest, LeaveGroupResponse, 0, 3),
    Api(14, "SyncGroup", SyncGroupRequest, SyncGroupResponse, 0, 3),
    Api(15, "DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse, 0, 4),
    Api(16, "ListGroups", ListGroupsRequest, ListGroupsResponse, 0, 2),
    Api(18, "ApiVersions", ApiVersionsRequest, ApiVersionsResponse, 0, 2),
    Api(19, "CreateTopics", CreateTopicsRequest, CreateTopicsResponse, 2, 4),
    Api(20, "DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse, 1, 3),
    Api(22, "InitProducerId", InitProducerIdRequest, InitProducerIdResponse, 0, 1),
    Api(23, "OffsetForLeaderEpoch", OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, 2, 3),
    Api(32, "DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse, 1, 3),
    Api(37, "CreatePartitions", CreatePartitionsRequest, CreatePartitionsResponse, 0, 1),
    Api(42, "DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse, 0, 1),
    Api(43, "ElectLeaders", ElectLeadersRequest, ElectLeadersResponse, 0, 1),
    # DescribeCluster has no non-flexible version: v0 is flexible (request header v2, response header v1).
    Api(60, "DescribeCluster", DescribeClusterRequest, DescribeClusterResponse, 0, 0),
)}


@dataclass(frozen=True, slots=True)
class RequestHead:
    api_key: int
    api_version: int
    correlation_id: int


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a handler knows about the request besides its body."""

    head: RequestHead
    listener: str
    client_id: str
    client_host: str


def peek_header(frame: bytes) -> RequestHead:
    """The fixed start of every request header (works for flexible and non-flexible headers)."""
    if len(frame) < _PEEK.size:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a request header")
    return RequestHead(*_PEEK.unpack_from(frame))


def decode_request(head: RequestHead, frame: bytes) -> Any:
    """Decode a supported request (header included); raises ProtocolError otherwise."""
    api = APIS.get(head.api_key)
    if api is None or not api.min_version <= head.api_version <= api.max_version:
        raise ProtocolError(f"api key {head.api_key} version {head.api_version} is not supported")
    try:
        return api.request.decode(frame, version=head.api_version, header=True)
    except Exception as exc:
        raise ProtocolError(f"cannot decode {api.name} v{head.api_version}: {exc}") from exc


def api_version_entries() -> list[Any]:
    cls = ApiVersionsResponse.ApiVersion
    return [cls(api_key=a.key, min_version=a.min_version, max_version=a.max_version) for a in APIS.values()]


def api_versions_response(version: int, error_code: int = 0) -> Any:
    return ApiVersionsResponse(version=version, error_code=error_code, api_keys=api_version_entries(),
                               throttle_time_ms=0)


def unsupported_api_versions(head: RequestHead) -> bytes:
    """The answer to an ApiVersions request newer than we speak: error 35, v0 header and body."""
    return encode_response(api_versions_response(0, UNSUPPORTED_VERSION), head.correlation_id)


def encode_response(response: Any, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def build_response(head: RequestHead, **fields: Any) -> Any:
    """A response object of the request's API at the request's version."""
    return APIS[head.api_key].response(version=head.api_version, **fields)
