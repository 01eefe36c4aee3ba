"""The driver JVM's class-data-sharing archive: the classes a verify loads, mapped from a file at start.

Owns where the archive lives (the per-user cache, one file per Java runtime, pyspark installation (so one per
venv, about 190 MB each; delete `spark-driver-*.jsa` there to reclaim them) and driver JVM options:
`archive_path`), whether it may be used (`usable_archive`), the options that use it
(`archive_options`, added by `session.session_config`), and how a finished archive is put in place
(`install_archive`). `spark_analysis.jvm_archive_build` (`make demo`, `make test`) builds it.

Why: a cold `kafka-chaos verify` spends seconds loading and verifying Spark's classes (JDK 17's dynamic
AppCDS archive, `-XX:ArchiveClassesAtExit` / `-XX:SharedArchiveFile`). Measured on 2 cores: a bare session
plus one job 6.5 s -> 3.8 s, the cold verify of a recorded transactions run 17.4-18.3 s -> 13.5-14.6 s.

Safety: HotSpot checks an archive's header (JVM build, class path) and runs without one that does not
match, but a truncated archive crashes it (SIGBUS). So an archive is written under a temporary name, mapped
once by a `java -version` that must exit 0, its size recorded beside it, and only then renamed into place;
an archive whose size is not the recorded one is never used. The JVM's own messages about the archive are
off (`-Xlog:cds*=off`): a mismatch means a slower start, not an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pyspark

from harness.install.cache import cache_root

ARCHIVE_FORMAT = 1
QUIET = "-Xlog:cds*=off"
VALIDATE_TIMEOUT_S = 60.0


def java_home() -> Path | None:
    """The Java runtime pyspark launches: `JAVA_HOME`, else the `java` on PATH (resolved)."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def _stat(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def archive_key(options: Sequence[str]) -> str | None:
    """What the archive depends on, hashed: the JVM (launcher and libjvm), pyspark's jars where they are (the
    archive records the class path: another venv's pyspark does not match it), the driver's JVM options. None
    without a Java runtime."""
    home = java_home()
    if home is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    parts = [str(ARCHIVE_FORMAT), _stat(home / "bin" / "java"), _stat(home / "lib" / "server" / "libjvm.so"),
             pyspark.__version__, str(jars.resolve()), *names, *options]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def archive_path(options: Sequence[str]) -> Path | None:
    key = archive_key(options)
    return None if key is None else cache_root() / f"spark-driver-{key}.jsa"


def _size_file(archive: Path) -> Path:
    return archive.with_suffix(".json")


def usable_archive(options: Sequence[str]) -> Path | None:
    """The archive for these driver options, if it is there whole (its recorded size), else None."""
    path = archive_path(options)
    if path is None:
        return None
    try:
        recorded = json.loads(_size_file(path).read_text(encoding="utf-8"))["size"]
        return path if path.stat().st_size == recorded else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def archive_options(options: Sequence[str]) -> list[str]:
    """The JVM options that map the archive (none when there is no usable one)."""
    path = usable_archive(options)
    return [] if path is None else [f"-XX:SharedArchiveFile={path}", QUIET]


def install_archive(written: Path, options: Sequence[str]) -> Path:
    """Put an archive the JVM wrote (`-XX:ArchiveClassesAtExit=written`) in place, once `java -version` maps
    it and exits 0. Raises RuntimeError saying why not (the written file is removed)."""
    path = archive_path(options)
    home = java_home()
    try:
        if path is None or home is None:
            raise RuntimeError("no Java runtime found (JAVA_HOME, or java on PATH)")
        if not written.is_file() or written.stat().st_size == 0:
            raise RuntimeError(f"the JVM wrote no archive at {written}")
        crash_log = written.with_suffix(".hs_err.log")  # where a JVM that crashes on it writes (not the cwd)
        try:
            proc = subprocess.run([str(home / "bin" / "java"), f"-XX:SharedArchiveFile={written}", QUIET,
                                   f"-XX:ErrorFile={crash_log}", "-XX:-CreateCoredumpOnCrash", "-version"],
                                  capture_output=True, text=True, timeout=VALIDATE_TIMEOUT_S)
        finally:
            crash_log.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise RuntimeError(f"java -version with the archive exited {proc.returncode}: "
                               f"{proc.stderr.strip().splitlines()[:3]}")
        size_tmp = _size_file(written)
        size_tmp.write_text(json.dumps({"size": written.stat().st_size, "format": ARCHIVE_FORMAT}), encoding="utf-8")
        size_tmp.replace(_size_file(path))
        written.replace(path)
        return path
    finally:
        written.unlink(missing_ok=True)
