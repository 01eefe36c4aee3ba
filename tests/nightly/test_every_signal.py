"""The signals `make test` leaves to the night (tests/integration/e2e/test_signals.py runs Ctrl-C and a closed
terminal): a SIGTERM (what CI systems send on cancel) and an explicit SIGHUP in the middle of the chaos heal,
stop, record `interrupted` and exit without verifying, leaving no process behind. One Apache Kafka 3.9 broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.e2e.test_signals import signalled_run

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP"])
def test_a_sigterm_or_sighup_mid_chaos_heals_stops_records_interrupted_and_exits_without_verifying(
    tmp_path: Path, how: str,
) -> None:
    signalled_run(tmp_path, how)
