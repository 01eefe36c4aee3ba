"""The admin observer replaces its AdminClient when a group's describe answers NOT_COORDINATOR several cycles in a
row (a client that keeps asking a former coordinator records no group.state). Fake admin clients stand in for
librdkafka's: the stale coordinator cannot be provoked on demand."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import confluent_kafka
import pytest

from harness.history.events import HistoryEvent, ObserverError
from harness.observe import admin as admin_module
from harness.observe.admin import STALE_COORDINATOR_CYCLES, AdminObserver


class FakeAdmin:
    """Lists one group; its describe fails with NOT_COORDINATOR."""

    made = 0

    def __init__(self, config: dict[str, Any]) -> None:
        FakeAdmin.made += 1

    def list_consumer_groups(self, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(type("Listed", (), {"valid": [], "errors": []})())
        return future

    def describe_consumer_groups(self, group_ids: list[str], **kwargs: Any) -> dict[str, Future[Any]]:
        out: dict[str, Future[Any]] = {}
        for g in group_ids:
            future: Future[Any] = Future()
            future.set_exception(confluent_kafka.KafkaException(confluent_kafka.KafkaError(16)))
            out[g] = future
        return out


def test_a_group_answering_not_coordinator_cycle_after_cycle_gets_a_new_fake_admin_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admin_module, "AdminClient", FakeAdmin)
    events: list[HistoryEvent] = []
    observer = AdminObserver("127.0.0.1:1", events.append, groups=["ledger"])  # type: ignore[arg-type]
    FakeAdmin.made = 0
    for _ in range(STALE_COORDINATOR_CYCLES - 1):
        observer._update_groups(FakeAdmin({}))  # type: ignore[arg-type]
    assert FakeAdmin.made == STALE_COORDINATOR_CYCLES - 1  # only the ones the test made
    observer._update_groups(FakeAdmin({}))  # type: ignore[arg-type]
    assert FakeAdmin.made == STALE_COORDINATOR_CYCLES + 1 and isinstance(observer._admin, FakeAdmin)
    errors = [e.error for e in events if isinstance(e, ObserverError)]
    assert errors == ["describe_consumer_groups: NOT_COORDINATOR", "describe_consumer_groups: stale coordinator"]
