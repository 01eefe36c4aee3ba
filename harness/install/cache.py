"""Where installed software is cached: `$KAFKA_CHAOS_CACHE`, else `$XDG_CACHE_HOME/kafka-chaos`,
else `~/.cache/kafka-chaos`. Each install is a directory `<name>-<version>/` that is complete only
once its `installed.json` exists (written last, after an atomic rename of the directory)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

MANIFEST = "installed.json"


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("KAFKA_CHAOS_CACHE"):
        return Path(env["KAFKA_CHAOS_CACHE"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path(env.get("HOME") or Path.home()).expanduser() / ".cache"
    return base / "kafka-chaos"


def read_manifest(directory: Path) -> dict[str, object] | None:
    """The install's manifest, or None when the directory is not a finished install."""
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_manifest(directory: Path, manifest: Mapping[str, object]) -> None:
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(dict(manifest), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(directory / MANIFEST)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing): one build of an install at a time, across
    processes (two test workers asking for the same install build it once)."""
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
