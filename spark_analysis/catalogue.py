"""What the layers below the verifiers know of the checks, derived from the registry: the experiment loader's
list of check ids (`harness/experiment/check_ids.py`, which the loader reads to validate `verify.checks`,
`verify.allow` and `expect.fail`, and which may not import the verifiers).

`python -m spark_analysis.catalogue` lists the registry's checks; `--write-ids` writes the loader's copy, and a
unit test fails, naming that command, when the copy and the registry differ."""

from __future__ import annotations

import argparse
from pathlib import Path

from spark_analysis.checks import ALL_CHECKS, CHECK_IDS

IDS_MODULE = Path(__file__).resolve().parents[1] / "harness" / "experiment" / "check_ids.py"
WRITE_IDS = "python -m spark_analysis.catalogue --write-ids"


def ids_module_text(ids: tuple[str, ...] = CHECK_IDS) -> str:
    """The text of `harness/experiment/check_ids.py` for `ids`."""
    lines = "".join(f'    "{i}",\n' for i in ids)
    return ('"""The verifiers\' check ids, in report order, as the experiment loader validates them '
            '(`verify.checks`,\n'
            f'`verify.allow`, `expect.fail`). Generated from the check registry by `{WRITE_IDS}`;\n'
            'do not edit: a check is added in its own module (docs/design.md, "Adding a check")."""\n\n'
            f"CHECK_IDS: tuple[str, ...] = (\n{lines})\n")


def write_ids(path: Path = IDS_MODULE) -> bool:
    """Write the ids module when it differs from the registry; whether it changed."""
    text = ids_module_text()
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spark_analysis.catalogue", description=__doc__.splitlines()[0])
    p.add_argument("--write-ids", action="store_true", help=f"write {IDS_MODULE.name} from the registry")
    args = p.parse_args(argv)
    if args.write_ids:
        print(f"{IDS_MODULE}: {'written' if write_ids() else 'already up to date'}")
        return 0
    for check in ALL_CHECKS:
        print(f"{check.id}\t{type(check).__module__}.{type(check).__name__}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
