"""Long tests that belong to `make nightly` (many seeds of a live experiment), not to `make test`: collected only
when `KAFKA_CHAOS_NIGHTLY=1`, which `python -m harness.nightly` sets for the night's pytest session."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("KAFKA_CHAOS_NIGHTLY") == "1" else ["test_*.py"]
