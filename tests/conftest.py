"""Test configuration shared by every suite: loads the fixture modules under tests/fixtures/ and pytester
(the pytest-plugin tests run pytest inside pytest), and sets the JVM options of the Apache Kafka processes the
suite starts.

`KAFKA_JVM_PERFORMANCE_OPTS` (Kafka's own knob, read by the backends as `kafka-run-class.sh` reads it)
defaults here to the C1 compiler only and the serial collector: a KRaft cluster of 6 JVMs came up in 17.3 s
instead of 26.5 s on 2 cores, and the whole suite needs the CPU. The brokers' behaviour does not depend on
the JIT tier or the collector; a user's own setting wins.

`KAFKA_CHAOS_SPARK_JAVA_OPTIONS` (the harness's knob for the Spark driver JVM) defaults here to the C1
compiler only, for the same reason: the suite is CPU-bound on 2 cores (39 CPU-minutes in 20 wall-minutes), the
driver JVM spent 44% of one end-to-end test's CPU, and four Spark test files on 3 workers took 0.70-0.77x the
time with it (two pairs; CPU 0.65-0.73x). The verdicts do not depend on the JIT tier; a warm verify alone is
slower with it (docs/performance.md, "The suite's CPU"), so only the suite sets it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", "-server -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
                      "-Djava.awt.headless=true")
os.environ.setdefault("KAFKA_CHAOS_SPARK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")

pytest_plugins = ["pytester", *sorted(
    f"tests.fixtures.{p.stem}" for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__"
)]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked `slow` run first. `make test` hands whole files to its workers in collection order
    (`--dist loadfile --no-loadscope-reorder`); xdist's default reorder (most tests first) put the long
    single-test files last, where one of them could keep a worker busy for minutes while the others sat
    idle. The sort is stable: the order of the files within each class, and of tests within a file, stays."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
