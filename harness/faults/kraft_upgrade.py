"""What an upgrade of a KRaft cluster asks of the cluster besides stops and starts (the `upgrade` and
`finalize_upgrade` operations; `KafkaOperator` hands these on):
- `await_voter`: between the controllers of a rolling upgrade, wait until the restarted voter answers DescribeQuorum
  and its log end offset, as the quorum leader reports it, has reached the leader's high watermark: caught up, as
  operators check with `kafka-metadata-quorum describe --replication` before the next node;
- `finalize_metadata`: once every node runs the new release, bump `metadata.version` to the newest level the nodes
  support, as `kafka-features upgrade --metadata` (3.x) or `--release-version` (4.x) does (Kafka's upgrade notes,
  "Upgrading KRaft-based clusters"), through UpdateFeatures (KIP-584, KIP-778; kafka-python's `KafkaAdminClient`),
  and confirm it through DescribeFeatures.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.errors import HarnessError
from harness.observe.kafka_wire import NodeConnection
from harness.observe.quorum import QuorumView, describe_quorum

if TYPE_CHECKING:
    from harness.faults.outcomes import OperationOutcome

POLL_S = 0.5
METADATA_VERSION = "metadata.version"
VIA_FEATURES = "UpdateFeatures (as kafka-features upgrade), then DescribeFeatures"


def await_voter(voters: Mapping[int, str], voter: int, timeout_s: float,
                security: ClientSecurity = PLAINTEXT) -> str | None:
    """None once `voter` answers DescribeQuorum and the quorum leader reports its log end offset at or past the
    leader's high watermark; else what was seen last when `timeout_s` ran out."""
    deadline = time.monotonic() + timeout_s
    last = "nothing yet"
    while True:
        views, errors = _ask_all(voters, min(5.0, max(1.0, deadline - time.monotonic())), security)
        leader = next((v for v in views.values() if v.role == "leader"), None)
        if voter not in views:
            last = f"voter {voter} did not answer ({errors.get(voter, 'no answer')})"
        elif leader is None or leader.high_watermark is None:
            last = "no voter answered as the quorum leader"
        else:
            offset = dict(leader.voters).get(voter)
            if offset is not None and offset >= leader.high_watermark:
                return None
            last = (f"voter {voter} at log end offset {offset}, leader {leader.voter}'s high watermark "
                    f"{leader.high_watermark}")
        if time.monotonic() >= deadline:
            return last
        time.sleep(POLL_S)


def _ask_all(voters: Mapping[int, str], timeout_s: float,
             security: ClientSecurity) -> tuple[dict[int, QuorumView], dict[int, str]]:
    views: dict[int, QuorumView] = {}
    errors: dict[int, str] = {}
    for vid, address in voters.items():
        conn = NodeConnection(vid, address, timeout_s=timeout_s, client_id="kafka-chaos-operator", security=security)
        try:
            views[vid] = describe_quorum(conn)
        except (HarnessError, OSError) as exc:
            errors[vid] = f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()
    return views, errors


def finalize_metadata(bootstrap_servers: str, timeout_s: float,
                      security: ClientSecurity = PLAINTEXT) -> OperationOutcome:
    """`metadata.version` up to the newest level the cluster's nodes support (DescribeFeatures' supported range),
    retried with a fresh client until it is finalized there or `timeout_s` ran out."""
    from kafka.admin import KafkaAdminClient

    from harness.faults.outcomes import OperationOutcome

    deadline = time.monotonic() + timeout_s
    last = "nothing yet"
    before: int | None = None
    while True:
        admin: Any = None
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers.split(","), client_id="kafka-chaos-operator",
                                     request_timeout_ms=10000, **security.kafka_python())
            levels = admin.describe_features()[METADATA_VERSION]  # {"supported": (min, max), "finalized": (min, max)}
            target, finalized = int(levels["supported"][1]), int(levels["finalized"][1])
            before = finalized if before is None else before
            if finalized >= target:
                return OperationOutcome("done", VIA_FEATURES, f"{METADATA_VERSION} level {before} -> {finalized}")
            answer = admin.update_features({METADATA_VERSION: target}).get(METADATA_VERSION)
            last = f"{METADATA_VERSION} finalized at level {finalized}, asked for {target}: {answer}"
        except Exception as exc:  # no answer, or a node briefly away: retried until the deadline
            last = f"{type(exc).__name__}: {exc}"
        finally:
            if admin is not None:
                with contextlib.suppress(Exception):
                    admin.close()
        if time.monotonic() >= deadline:
            return OperationOutcome("timeout", VIA_FEATURES, f"awaited {METADATA_VERSION} finalized at the newest "
                                    f"level the nodes support within {timeout_s:g}s; last seen: {last}")
        time.sleep(POLL_S)
