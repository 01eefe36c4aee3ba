"""Names that two parts of the project must agree on: the experiment loader's bug flags and check ids
equal what the reference broker and the verifiers actually implement."""

from __future__ import annotations

from harness.broker.bugs import KNOWN_BUGS
from harness.experiment.schema import CHECK_IDS, REFERENCE_BUGS
from spark_analysis.checks import CHECK_IDS as VERIFIER_CHECK_IDS


def test_loader_accepts_exactly_the_bug_flags_the_reference_broker_implements() -> None:
    assert set(REFERENCE_BUGS) == set(KNOWN_BUGS)


def test_loader_check_ids_are_the_verifiers_check_ids() -> None:
    assert set(CHECK_IDS) == set(VERIFIER_CHECK_IDS)
