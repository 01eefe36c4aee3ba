"""The AdminObserver in a child process, against a real reference broker: events flow to the sink,
a child killed by SIGABRT (what a librdkafka assertion does) is recorded and replaced, and stop()
leaves no process or thread behind."""

from __future__ import annotations

import os
import signal
import threading

import psutil
import pytest

from harness.observe.isolated import IsolatedAdminObserver
from tests.fixtures.broker import ReferenceBroker
from tests.fixtures.zookeeper import EventCollector

pytestmark = pytest.mark.integration


def test_events_flow_and_an_aborted_child_is_restarted(reference_broker: ReferenceBroker) -> None:
    events = EventCollector()
    threads_before = set(threading.enumerate())
    observer = IsolatedAdminObserver(reference_broker.bootstrap_servers, events, interval=0.2)
    observer.start()
    try:
        events.wait_for(lambda e: e["type"] == "broker.up", timeout_s=30)
        child = observer._proc
        assert child is not None
        before = len(events)
        os.kill(child.pid, signal.SIGABRT)
        error = events.wait_for(lambda e: e["type"] == "observer.error", timeout_s=30, after=before)
        assert "signal 6" in error["error"] and error["src"] == "admin"
        events.wait_for(lambda e: e["type"] == "broker.up", timeout_s=30, after=before)
        assert observer.restarts == 1 and observer._proc is not None and observer._proc.pid != child.pid
        last_child = observer._proc.pid
    finally:
        observer.stop()
    assert not psutil.pid_exists(last_child) or psutil.Process(last_child).status() == psutil.STATUS_ZOMBIE
    assert set(threading.enumerate()) <= threads_before
