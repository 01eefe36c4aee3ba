"""Unit tests of the broker entry point's argument and config handling (no broker is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.broker.main import build_parser, main


def test_bad_override_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """`--override` without '=' is a usage error (exit 2) naming the bad item."""
    assert main(["--override", "nonsense"]) == 2
    assert "nonsense" in capsys.readouterr().err


def test_unreadable_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing --config file exits 2 and names the path."""
    assert main(["--config", str(tmp_path / "missing.properties")]) == 2
    assert "missing.properties" in capsys.readouterr().err


def test_parser_accepts_repeated_overrides() -> None:
    """--override is repeatable and keeps order."""
    args = build_parser().parse_args(["--config", "x", "--override", "a=1", "--override", "b=2"])
    assert (args.config, args.override) == ("x", ["a=1", "b=2"])
