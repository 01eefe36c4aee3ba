"""The release table: versions order and parse, lines are judged by their first release, and a missing feature
names the release, the first release that has it and the source."""

from __future__ import annotations

import pytest

from harness.model.releases import FEATURES, Release, feature_problem, has


def test_releases_parse_and_order_numerically() -> None:
    assert Release.parse("3.10.0") == Release(3, 10, 0) > Release.parse("3.9.2")  # type: ignore[operator]
    assert Release.parse("4") == Release(4, 0, 0) and Release.parse("3.9") == Release(3, 9, 0)
    assert Release.parse("7.6.x") is None and str(Release(2, 8, 2)) == "2.8.2"


@pytest.mark.parametrize(("version", "name", "expected"), [
    ("3.6.1", "check_quorum", False), ("3.7.0", "check_quorum", True), ("4", "check_quorum", True),
    ("3.9.2", "zookeeper_mode", True), ("4.0.0", "zookeeper_mode", False),
    ("3.8.1", "kraft_controller_endpoints", False), ("3.9.0", "kraft_controller_endpoints", True),
    ("3.7.2", "describe_topic_partitions", False), ("3.8.0", "describe_topic_partitions", True),
    (None, "elr", True), (None, "zookeeper_mode", False),
])
def test_has_answers_by_the_first_release_with_the_feature(version: str | None, name: str, expected: bool) -> None:
    assert has(version, name) is expected


def test_a_missing_feature_names_the_release_the_first_release_with_it_and_the_source() -> None:
    problem = feature_problem("3.2.3", "kraft")
    assert problem is not None and "3.2.3" in problem and "3.3" in problem and "KIP-833" in problem
    line = feature_problem("3.9", "transactions_v2")
    assert line is not None and "4.0" in line
    gone = feature_problem("4", "zookeeper_mode")
    assert gone is not None and "removed" in gone
    assert feature_problem("3.6", "transaction_verification") is None


def test_every_feature_names_its_source() -> None:
    for f in FEATURES.values():
        assert f.source and f.what and (f.until is None or f.until > f.since), f.name
