"""The containers suite runs against any Docker API (a Docker engine, or Podman's service from
`compose/podman/setup.sh`); every test here is skipped, with the reason, where none answers or where the
images can be neither found nor pulled (see `tests/fixtures/podman.py`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.podman import DockerEngine


@pytest.fixture(autouse=True)
def _docker_api(docker_env: DockerEngine) -> Iterator[DockerEngine]:
    yield docker_env
