"""Names that two parts of the project must agree on: the experiment loader's check ids equal what the
verifiers actually implement."""

from __future__ import annotations

from harness.experiment.schema import CHECK_IDS
from spark_analysis.checks import CHECK_IDS as VERIFIER_CHECK_IDS


def test_loader_check_ids_are_the_verifiers_check_ids() -> None:
    assert set(CHECK_IDS) == set(VERIFIER_CHECK_IDS)
