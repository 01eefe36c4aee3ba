"""The reproduce line of a run: the `kafka-chaos run` command that runs the same experiment file, variant,
seed, backend (and broker, when one was asked for) again, followed by the versions the run used (from its
run.json). Printed by the CLI after a run, by the pytest plugin on failure, and in the trend page's list of
failed runs, which all import it from here."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any


def reproduce_line(source: str, *, seed: int, backend: str, run_dir: Path, variant: str = "",
                   broker: str = "auto") -> str:
    """`reproduce: kafka-chaos run <source> [--variant V] --seed N --backend B [--broker X]  # versions`."""
    flags = f" --variant {shlex.quote(variant)}" if variant else ""
    flags += f" --seed {seed} --backend {backend}"
    flags += "" if broker == "auto" else f" --broker {broker}"
    client = _run_json(run_dir).get("client") or {}
    if client.get("name") == "java":  # the client, exactly: a --client override is not in the file
        flags += " --client java" + (f" --client-version {shlex.quote(str(client['version']))}"
                                     if client.get("version") else "")
    return f"reproduce: kafka-chaos run {shlex.quote(source)}{flags}  # {tested_versions(run_dir)}"


def _run_json(run_dir: Path) -> dict[str, Any]:
    try:
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def tested_versions(run_dir: Path) -> str:
    """Broker, harness, client and JVM versions from run.json (all of them are in that file)."""
    where = f"all versions in {run_dir / 'run.json'}"
    info = _run_json(run_dir)
    if not info:
        return where
    v = info.get("versions") or {}
    client = info.get("client") or {}
    java = client.get("name") == "java"
    # the run's client release (a pinned one), else the librdkafka the harness ran (histories before `client`)
    librdkafka = (client.get("version") if client.get("name") == "librdkafka" else None) or v.get("librdkafka")
    parts = [(info.get("broker") or {}).get("describe"),
             v.get("harness") and f"kafka-chaos {v['harness']}",
             f"Java client kafka-clients {client.get('version')}" if java else
             librdkafka and f"librdkafka {librdkafka}", v.get("java")]
    return ", ".join(str(p) for p in parts if p) + f"; {where}"
