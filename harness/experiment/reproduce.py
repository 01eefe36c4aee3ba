"""The reproduce line of a run: the `kafka-chaos run` command that runs the same experiment file, variant,
seed, backend (and broker, when one was asked for) again, followed by the versions the run used (from its
run.json). Printed by the CLI after a run, by the pytest plugin on failure, and in the trend page's list of
failed runs, which all import it from here."""

from __future__ import annotations

import json
import shlex
from pathlib import Path


def reproduce_line(source: str, *, seed: int, backend: str, run_dir: Path, variant: str = "",
                   broker: str = "auto") -> str:
    """`reproduce: kafka-chaos run <source> [--variant V] --seed N --backend B [--broker X]  # versions`."""
    flags = f" --variant {shlex.quote(variant)}" if variant else ""
    flags += f" --seed {seed} --backend {backend}"
    flags += "" if broker == "auto" else f" --broker {broker}"
    return f"reproduce: kafka-chaos run {shlex.quote(source)}{flags}  # {tested_versions(run_dir)}"


def tested_versions(run_dir: Path) -> str:
    """Broker, harness, client and JVM versions from run.json (all of them are in that file)."""
    where = f"all versions in {run_dir / 'run.json'}"
    try:
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return where
    v = info.get("versions") or {}
    parts = [(info.get("broker") or {}).get("describe"),
             v.get("harness") and f"kafka-chaos {v['harness']}",
             v.get("librdkafka") and f"librdkafka {v['librdkafka']}", v.get("java")]
    return ", ".join(str(p) for p in parts if p) + f"; {where}"
