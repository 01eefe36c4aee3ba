"""`python -m spark_analysis.jvm_archive_build [RUN_DIR]`: build the driver JVM's class-data-sharing archive.

Starts a session whose JVM writes the classes it loaded at exit (`-XX:ArchiveClassesAtExit`), verifies
RUN_DIR (else a small built-in history that takes the checks through their query shapes: writes, reads, a
consumer group, commits, a controller change), stops it, and puts the archive in place
(`jvm_archive.install_archive`). `make demo` and `make test` run it; it does nothing when the archive for
this Java runtime, pyspark and driver options is there already. Best effort: exit status 0 when no archive
could be built (it says why; verifiers then start without one), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from spark_analysis.session.jvm_archive import QUIET, archive_path, install_archive, usable_archive
from spark_analysis.session.spark_session import driver_java_options, get_session, stop_session
from spark_analysis.verify import verify_run
from spark_analysis.warmup import training_history

DUMP_TIMEOUT_S = 300.0
"""How long the training JVM may take to exit: it writes the archive (about 190 MB) on its way out."""
def build(run_dir: Path | None = None) -> tuple[Path, bool]:
    """The archive's path, and whether it was built now (False: it was there already)."""
    options = driver_java_options()
    existing = usable_archive(options)
    if existing is not None:
        return existing, False
    target = archive_path(options)
    if target is None:
        raise RuntimeError("no Java runtime found (JAVA_HOME, or java on PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    written = target.with_name(f"{target.stem}.{os.getpid()}.tmp")
    spark = get_session("local[2]", [f"-XX:ArchiveClassesAtExit={written}", QUIET])
    trained = False
    try:
        with tempfile.TemporaryDirectory(prefix="kafka-chaos-jvm-archive-") as tmp:
            if run_dir is None:
                verify_run(training_history(Path(tmp) / "run"), spark=spark)
            else:
                verify_run(run_dir, spark=spark, write=False)
        trained = True
    finally:
        stop_session(spark, timeout_s=DUMP_TIMEOUT_S)  # the JVM writes the archive on its way out
        if not trained:
            written.unlink(missing_ok=True)  # a failed training keeps none
    return install_archive(written, options), True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.jvm_archive_build",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", type=Path, default=None, metavar="RUN_DIR")
    args = parser.parse_args(argv)
    if args.run_dir is not None and not (args.run_dir / "history.jsonl").is_file():
        print(f"error: {args.run_dir} has no history.jsonl", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        path, built = build(args.run_dir)
    except Exception as exc:  # best effort: the verifiers start without an archive
        print(f"driver JVM class-data-sharing archive not built ({type(exc).__name__}: {exc}); "
              "the verifiers start without one", file=sys.stderr)
        return 0
    what = f"built in {time.monotonic() - started:.0f} s" if built else "already built"
    print(f"driver JVM class-data-sharing archive {what}: {path} ({path.stat().st_size / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
