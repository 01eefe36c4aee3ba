"""librdkafka's log lines (`%3|...|FAIL|...`, `%6|...|BGQUEUE|...`) never reach the terminal: the
clients the harness makes around the workloads (topic creation, the readiness probe) hand them to a
Python logger, and the topic creation's lines land in the run's `clients.log` (issue 22). Real
librdkafka clients against a local port that refuses connections (bound, never listening): no
external process."""

from __future__ import annotations

import gc
import logging
import socket
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

from harness.cluster.readiness import BrokerReadiness
from harness.engine.parts import create_topics
from harness.errors import HarnessError, HarnessTimeout
from harness.experiment import load_experiment_text
from harness.workload.common import LIBRDKAFKA_LOGGER

EXP = """
name: topics-only
cluster: {brokers: 1}
topics: [{name: t, partitions: 1, replication_factor: 1}]
workload: {producers: [{topic: t}]}
duration: 1s
"""
ERRORS_WITHIN_S = 5.0
"""How long the client gets to fail; its first refused connection comes at once."""


@pytest.fixture
def refused() -> Iterator[str]:
    """`127.0.0.1:<port>` of a socket that is bound (no one else gets the port) but never listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _librdkafka_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("%")]


def test_topic_creation_logs_librdkafka_lines_to_the_clients_logger_not_to_stderr(
    refused: str, capfd: pytest.CaptureFixture[str],
) -> None:
    seen = _Lines()
    LIBRDKAFKA_LOGGER.addHandler(seen)
    level = LIBRDKAFKA_LOGGER.level
    LIBRDKAFKA_LOGGER.setLevel(logging.INFO)
    try:
        cluster: Any = types.SimpleNamespace(bootstrap_servers=refused)
        with pytest.raises(HarnessError, match="topic 't'"):
            create_topics(load_experiment_text(EXP, "topics.yaml"), cluster, timeout_s=ERRORS_WITHIN_S)
        gc.collect()  # nothing may be left to print when the client goes
    finally:
        LIBRDKAFKA_LOGGER.removeHandler(seen)
        LIBRDKAFKA_LOGGER.setLevel(level)
    assert _librdkafka_lines(capfd.readouterr().err) == []
    assert any(refused in line for line in seen.lines), seen.lines  # they went to clients.log's logger


def test_the_readiness_probe_keeps_librdkafka_lines_off_stderr(
    refused: str, capfd: pytest.CaptureFixture[str],
) -> None:
    probe = BrokerReadiness("", hint="test")  # KRaft: no ZooKeeper, Metadata only
    with pytest.raises(HarnessTimeout, match="answer Metadata"):
        probe.wait_ready(1, refused, time.monotonic() + ERRORS_WITHIN_S, who="broker:1", alive=lambda: True,
                         exited=lambda: "running", tail=lambda: "")
    probe.close()
    gc.collect()
    assert _librdkafka_lines(capfd.readouterr().err) == []
