"""Other librdkafka releases than the installed confluent-kafka's (`workload.client_version` with
`client: librdkafka`): confluent-kafka of that version, installed from PyPI by pip into the cache
(`confluent-kafka-<version>/site`, `pip install --target`), for the workers (`harness.workload.py_worker`) that run
on this interpreter with that directory first on `PYTHONPATH`. Each confluent-kafka wheel bundles the librdkafka of
its own version, so the version named is the librdkafka the workers speak.

Not a second virtualenv: the worker is the harness's own interpreter and packages with one package shadowed, so
the history's event classes are the harness's. `validate` refuses, without the network, a version PyPI does not
serve as a wheel for this interpreter (`RELEASES`, `FIRST_WHEEL`: read from PyPI's JSON API on 2026-11-29).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.install.cache import cache_root, locked, read_manifest, write_manifest

Progress = Callable[[str], None]
RELEASES: tuple[str, ...] = (
    "2.0.2", "2.1.0", "2.1.1", "2.2.0", "2.3.0", "2.4.0", "2.5.0", "2.5.3", "2.6.0", "2.6.1", "2.6.2", "2.7.0",
    "2.8.0", "2.8.1", "2.8.2", "2.9.0", "2.10.0", "2.10.1", "2.11.0", "2.11.1", "2.12.0", "2.12.1", "2.12.2",
    "2.13.0", "2.13.2", "2.14.0", "2.14.2", "2.15.0", "2.15.1", "2.16.0", "2.16.1")
"""The confluent-kafka 2.x releases on PyPI (pre-releases left out), each with manylinux x86_64 wheels."""
FIRST_WHEEL = {"cp312": "2.3.0", "cp313": "2.6.0", "cp314": "2.12.1"}
"""The first of `RELEASES` with a wheel for a CPython newer than 3.11 (3.8-3.11 have wheels for all of them)."""


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def python_tag(info: tuple[int, int] | None = None) -> str:
    major, minor = info or sys.version_info[:2]
    return f"cp{major}{minor}"


def check_librdkafka_version(version: str, tag: str | None = None) -> str:
    """The version itself, or a ConfigError saying why no worker can run it on this interpreter."""
    tag = tag or python_tag()
    if version not in RELEASES:
        raise ConfigError(f"client_version {version!r} is not a confluent-kafka release with wheels on PyPI "
                          f"(2.x: {RELEASES[0]} to {RELEASES[-1]}, for example 2.1.0)")
    if tag not in ("cp38", "cp39", "cp310", "cp311", *FIRST_WHEEL):
        raise ConfigError(f"client_version {version!r}: no confluent-kafka wheel is known for this Python ({tag})")
    first = FIRST_WHEEL.get(tag)
    if first is not None and _key(version) < _key(first):
        raise ConfigError(f"client_version {version!r}: confluent-kafka {version} has no wheel for this Python "
                          f"({tag}); the first with one is {first}")
    return version


@dataclass(frozen=True, slots=True)
class LibrdkafkaClient:
    """An installed confluent-kafka for the Python worker: how to start one."""

    version: str
    site: Path
    kind = "librdkafka"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "harness.workload.py_worker"]

    def env(self) -> dict[str, str]:
        """This interpreter's environment with the pinned confluent-kafka first, then the harness's own sources."""
        root = str(Path(__file__).resolve().parents[2])
        path = [str(self.site), root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1"}


def install_librdkafka_client(version: str, *, environ: Mapping[str, str] | None = None,
                              progress: Progress | None = None) -> LibrdkafkaClient:
    """confluent-kafka `version` from the cache, or installed now by pip (raises ConfigError naming what failed)."""
    env = dict(os.environ if environ is None else environ)
    say = progress or (lambda _text: None)
    check_librdkafka_version(version)
    root = cache_root(env)
    home = root / f"confluent-kafka-{version}"
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f".confluent-kafka-{version}.lock"):
        if read_manifest(home) is None:
            _install(version, home, env, say)
    return LibrdkafkaClient(version=version, site=home / "site")


def _install(version: str, home: Path, env: Mapping[str, str], say: Progress) -> None:
    shutil.rmtree(home, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f".confluent-kafka-{version}-", dir=home.parent) as work:
        staged = Path(work) / "home"
        argv = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                "--only-binary", ":all:", "--target", str(staged / "site"), f"confluent-kafka=={version}"]
        say(f"confluent-kafka {version}: pip install --target")
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(env), check=False)
        if done.returncode != 0:
            last = [ln.strip() for ln in (done.stdout + done.stderr).splitlines() if ln.strip()][-3:]
            raise ConfigError(f"confluent-kafka {version}: pip exited {done.returncode}: "
                              + (" | ".join(last) or "no output"))
        write_manifest(staged, {"package": f"confluent-kafka=={version}", "python": python_tag()})
        staged.rename(home)
