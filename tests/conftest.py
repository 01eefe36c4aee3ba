"""Test configuration shared by every suite: loads the fixture modules under tests/fixtures/ and pytester
(the pytest-plugin tests run pytest inside pytest)."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester", *sorted(
    f"tests.fixtures.{p.stem}" for p in (Path(__file__).parent / "fixtures").glob("*.py") if p.stem != "__init__"
)]
