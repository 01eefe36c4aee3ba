"""docs/design.md's history event reference is the one generated from the event classes
(`python -m harness.history.reference --write` rewrites it), and the README links to docs/design.md."""

from __future__ import annotations

from pathlib import Path

from harness.history.events import EVENT_CLASSES
from harness.history.reference import DESIGN, documented, section, table

ROOT = Path(__file__).resolve().parents[3]


def test_the_design_docs_history_reference_is_the_generated_one() -> None:
    found = documented(DESIGN.read_text(encoding="utf-8"))
    assert found is not None, "docs/design.md lost its history-reference markers"
    assert found == section(), "stale history reference in docs/design.md: python -m harness.history.reference --write"


def test_the_reference_has_a_row_per_event_type_with_its_fields() -> None:
    rows = table().splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == [f"| `{t}`" for t in EVENT_CLASSES]
    assert all(cls.DOC for cls in EVENT_CLASSES.values())
    partition_state = next(r for r in rows if r.startswith("| `partition.state`"))
    assert "isr: [int]" in partition_state and "elr?: [int] \\| null" in partition_state


def test_the_readme_links_to_the_design_doc() -> None:
    assert "docs/design.md" in (ROOT / "README.md").read_text(encoding="utf-8")
