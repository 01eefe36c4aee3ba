"""The Spark session the verifiers run in: embedded `local[*]` by default, any master by flag.

Owns the session's configuration: no UI, no Hive, UTC, no Python call-site capture, small
shuffle-partition count for the embedded case, a capped driver heap (the whole driver must stay
under 2 GiB), quiet logs.
The same code path serves `local[*]`, a standalone/YARN/k8s master and `spark-submit`
(where a session already exists and `getOrCreate` returns it unchanged).

Also owns the lifetime of the driver JVM pyspark launches for this process (the py4j gateway,
`SparkContext._gateway.proc`): it gets a leftover record (`harness.cluster.leftovers`, what
`DRIVER_WHAT` names) while it runs, so the next `kafka-chaos run` kills it if a SIGKILLed verify
left it; `stop_session` (and interpreter exit) stop it gracefully and drop the record. It dies
with its own Python process too (it exits when its stdin closes); the record covers the cases where
it does not (a hung or stopped JVM). The driver JVM maps its class-data-sharing archive where one is built
(`jvm_archive`; `make spark-archive`), which takes about 2.5 s off its start.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from harness.cluster.leftovers import LeftoverRegistry
from harness.install.cache import cache_root
from spark_analysis.session.jvm_archive import archive_options

DEFAULT_MASTER = "local[*]"
DRIVER_MEMORY = "896m"
NATIVE_MEMORY_OPTIONS = (
    "-XX:+UseParallelGC",
    "-XX:ParallelGCThreads=2",
    "-XX:MaxDirectMemorySize=256m",
    "-XX:ReservedCodeCacheSize=128m",
)
"""Bounds on the driver JVM's memory outside the heap (the whole driver must stay under 2 GiB)."""
JAVA_OPTIONS_ENV = "KAFKA_CHAOS_SPARK_JAVA_OPTIONS"
"""Extra JVM options from the environment: the driver's, after every other, and the executors' on a cluster
(`session_config`)."""
APP_NAME = "kafka-chaos-verify"
DRIVER_WHAT = "spark:driver"
"""What the driver JVM's leftover record (and `clean_leftovers`' line for it) calls it."""
DRIVER_STOP_S = 30.0
"""How long stopping the driver waits for it to exit after its stdin closed (it runs Spark's shutdown
hooks, which delete its temporary directories), before it is killed."""


def _local_cores(master: str) -> int | None:
    """How many cores a `local[...]` master uses, or None for a cluster master."""
    if master == "local":
        return 1
    match = re.fullmatch(r"local\[(\*|\d+)(?:,\s*\d+)?\]", master)
    if not match:
        return None
    return os.cpu_count() or 2 if match.group(1) == "*" else int(match.group(1))


LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def quiet_log_config() -> Path:
    """A log4j2 configuration that lets only errors through: one file in the per-user cache, named after
    its content and shared by every process (a file per process in /tmp was never removed)."""
    digest = hashlib.sha256(LOG4J2_PROPERTIES.encode()).hexdigest()[:12]
    path = cache_root() / f"spark-log4j2-{digest}.properties"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
        tmp.replace(path)  # atomic: a concurrent reader sees the whole file or none
    return path


def driver_java_options() -> list[str]:
    """The driver JVM's options (quiet logs, bounded native memory); its class-data-sharing archive is
    keyed by them (`jvm_archive`)."""
    return [f"-Dlog4j2.configurationFile=file:{quiet_log_config()}", *NATIVE_MEMORY_OPTIONS]


def session_config(master: str, java_options: Sequence[str] | None = None) -> dict[str, str]:
    """The configuration `get_session` applies for `master` (exposed so tests and docs can show it).

    The driver JVM gets `java_options` after its own; by default, those that map its class-data-sharing
    archive if one is built (`jvm_archive.archive_options`). `KAFKA_CHAOS_SPARK_JAVA_OPTIONS` (whitespace
    separated) comes last, so it wins, and is the executors' options on a cluster: `-XX:TieredStopAtLevel=1`
    spends about 30% less driver CPU on short verifies and is slower warm (the test suite sets it:
    docs/performance.md, "The suite's CPU")."""
    base = driver_java_options()
    extra = archive_options(base) if java_options is None else list(java_options)
    environment = os.environ.get(JAVA_OPTIONS_ENV, "").split()
    extra += environment
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.sql.parquet.compression.codec": "snappy",
        # Every query posts its plan's description for the SQL UI (disabled here; nothing reads it). The default,
        # "formatted", costs about 20 ms a query; "simple" is one line per operator.
        "spark.sql.ui.explainMode": "simple",
        # PySpark's call-site capture costs several py4j round trips per Column function called
        # (2,200 of the 4,700 per round of checks at 5M events); it only adds the Python line to
        # the query context of an error.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # The driver's status store keeps what the (disabled) UI would show. With the defaults (1,000 jobs,
        # stages and SQL executions, 100,000 tasks) a session that verifies one run after another carries them
        # all, and every later job pays for it (warm verify of the transactions run, round robin over four
        # recorded runs: 3.7 -> 3.0 s; controller-failover 2.0 -> 1.85 s). Nothing here reads them.
        **{key: "20" for key in ("spark.ui.retainedJobs", "spark.ui.retainedStages", "spark.sql.ui.retainedExecutions",
                                 "spark.ui.dagGraph.retainedRootRDDs")},
        "spark.ui.retainedTasks": "200",
        # Small read splits: the map side of a big aggregation (e.g. the per-value frame of a failed
        # delivery check) then fits its hash map in memory (64 MB splits spilled, ~2.5x the CPU).
        "spark.sql.files.maxPartitionBytes": str(16 * 1024 * 1024),
        "spark.driver.extraJavaOptions": " ".join([*base, *extra]),
    }
    cores = _local_cores(master)
    if cores is None and environment:
        conf["spark.executor.extraJavaOptions"] = " ".join(environment)
    if cores is not None:
        # Embedded: the driver is the executor. Keep the heap small and the shuffle narrow.
        conf.update(
            {
                "spark.driver.memory": DRIVER_MEMORY,
                "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
                # AQE keeps shuffle partitions small enough that one aggregation's hash map fits
                # the (small) heap instead of spilling.
                "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(16 * 1024 * 1024),
                "spark.default.parallelism": str(max(2, cores)),
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.sql.autoBroadcastJoinThreshold": str(16 * 1024 * 1024),
            }
        )
    return conf


SMALL_RUN_BYTES = 32 * 1024 * 1024
"""A history up to this size (about 200k events) verifies in the small-run mode (`SMALL_RUN_CONF`, the
events cached in memory as one partition): its time goes to per-query overhead, not to the data."""
SMALL_RUN_CONF = {
    # Interpreted expressions and no whole-stage code generation: compiling each new query shape
    # (Janino) cost more than running it over a few thousand rows (cold verify of 18k events:
    # 23.6 s -> 15-17 s).
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Without AQE a query with shuffles is one job, not one job per stage (39 jobs -> 19).
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    # No broadcast joins, not even where a check hints one: building a broadcast side is a Spark job of its
    # own, while a one-partition shuffle is only another stage of the same job (the transactions run's
    # verify: 50 jobs -> 30).
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.optimizer.disableHints": "true",
    "spark.sql.join.preferSortMergeJoin": "false",
    # No runtime Bloom filters: the optimizer would add one to a join with a selective side, each a
    # subquery job of its own that aggregates into an 8 MB bit set (consumer.poll_skip's sample: 3 jobs, 0.5 s).
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
}
"""SQL settings a small run's verification applies for its duration (`scoped_conf`); none changes a result."""


@contextlib.contextmanager
def scoped_conf(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """Apply the runtime SQL settings `conf` to `spark` and restore the previous values (or unset) after."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def get_session(master: str | None = None, java_options: Sequence[str] | None = None) -> SparkSession:
    """Return the active session if there is one (spark-submit, tests), else build one for `master`.

    `master=None` means `local[*]`, unless `spark-submit` already chose one (then it is kept).
    `java_options`: see `session_config`.
    """
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    chosen = master or DEFAULT_MASTER
    # glibc's per-thread malloc arenas inflate the JVM's resident memory; the JVM inherits this.
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    builder = SparkSession.builder.appName(APP_NAME).master(chosen)
    for key, value in session_config(chosen, java_options).items():
        builder = builder.config(key, value)
    if SparkContext._active_spark_context is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        _launch_driver(chosen, session_config(chosen, java_options), driver_log_path())
    spark = builder.getOrCreate()
    _record_driver()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


DRIVER_LOG_MAX_BYTES = 4 << 20


def driver_log_path() -> Path:
    """Where the driver JVM this process launches writes its own console output (the JVM's and Spark's start-up
    lines: "Using incubator modules", "Setting default log level"; anything it prints later): one file per user,
    appended to, started afresh past `DRIVER_LOG_MAX_BYTES`."""
    return cache_root() / "spark-driver.log"


def _launch_driver(master: str, config: Mapping[str, str], log_path: Path) -> None:
    """Launch the driver JVM with its console output (the JVM's and Spark's start-up chatter) going to `log_path`,
    and start the SparkContext on it. This process's own stdout and stderr are untouched: the JVM gets the log as
    its own (pyspark's `launch_gateway(popen_kwargs=...)`), so a warm-up launching it on a background thread does
    not swallow what the run prints meanwhile. When the launch fails, the log's last lines are shown."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    log_path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if log_path.stat().st_size > DRIVER_LOG_MAX_BYTES:
            log_path.unlink()
    conf = SparkConf().setMaster(master).setAppName(APP_NAME)
    for key, value in config.items():
        conf.set(key, value)
    try:
        with open(log_path, "ab") as log:  # appended: drivers of concurrent processes (test workers) share it
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        SparkContext(conf=conf, gateway=gateway)
    except BaseException:
        with contextlib.suppress(OSError):
            tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
            sys.stderr.write(f"the driver JVM's output ({log_path}), last lines:\n" + "\n".join(tail) + "\n")
        raise


def stop_session(spark: SparkSession, timeout_s: float = DRIVER_STOP_S) -> None:
    """Stop `spark` and, if pyspark launched its driver JVM for this process, that JVM too (the next
    `get_session` launches a new one), waiting up to `timeout_s` for it to exit; its leftover record goes
    with it."""
    _stop_accumulator_server()
    spark.stop()
    _stop_driver(timeout_s)


def stop_session_now(spark: SparkSession, timeout_s: float) -> None:
    """Stop `spark` and this process's driver JVM within about `timeout_s`, even while a job runs on another thread
    (it fails): `spark.stop()` on a helper thread, given half the time, then the driver as `stop_session` stops it,
    killed after the other half. For a run that ends unverified, whose warm-up may be mid-verify."""
    stopper = threading.Thread(target=lambda: _quietly(spark.stop), name="spark-stop", daemon=True)
    stopper.start()
    stopper.join(timeout_s / 2)
    _stop_driver(timeout_s / 2)


def _quietly(call: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):
        call()


def _stop_accumulator_server() -> None:
    """Shut pyspark's accumulator server down before the JVM goes. pyspark stops the JVM side first
    (`SparkContext.stop`: `_jsc.stop()`, then the server), and a JVM exiting at interpreter exit closes the
    connection under the server's handler, which then printed an `EOFError` traceback to stderr at the
    end of every `kafka-chaos run` and `verify` (socketserver's `handle_error`). No check uses accumulators."""
    sc = SparkContext._active_spark_context
    server = getattr(sc, "_accumulatorServer", None) if sc is not None else None
    if server is not None:
        with contextlib.suppress(Exception):
            server.shutdown()
        sc._accumulatorServer = None  # type: ignore[union-attr]


@dataclass(frozen=True, slots=True)
class _Driver:
    """The driver JVM this process launched, and the registry holding its record (on disk only: this
    module stops the JVM gracefully; `clean_leftovers` kills it if this process dies first)."""

    proc: subprocess.Popen[bytes]
    registry: LeftoverRegistry


_DRIVER: _Driver | None = None
_DRIVER_LOCK = threading.Lock()
_AT_EXIT = False


def _record_driver() -> None:
    """Give the driver JVM pyspark launched (the py4j gateway) a leftover record, once per JVM; none
    when pyspark did not launch one (spark-submit, `PYSPARK_GATEWAY_PORT`)."""
    global _DRIVER, _AT_EXIT
    proc = getattr(SparkContext._gateway, "proc", None)
    if not isinstance(proc, subprocess.Popen) or proc.poll() is not None:
        return
    with _DRIVER_LOCK:
        if _DRIVER is not None and _DRIVER.proc is proc:
            return
        registry = LeftoverRegistry(fallbacks=False)
        registry.register(proc.pid, DRIVER_WHAT)
        _DRIVER = _Driver(proc, registry)
        if not _AT_EXIT:
            atexit.register(_stop_driver)
            _AT_EXIT = True


def _stop_driver(timeout_s: float = DRIVER_STOP_S) -> None:
    """Stop the recorded driver JVM: close the py4j gateway and the JVM's stdin, on which it exits
    (running its shutdown hooks); kill it if it has not after `timeout_s`; drop its record."""
    global _DRIVER
    with _DRIVER_LOCK:
        driver, _DRIVER = _DRIVER, None
    if driver is None:
        return
    _stop_accumulator_server()
    gateway = SparkContext._gateway
    if gateway is not None and getattr(gateway, "proc", None) is driver.proc:
        with contextlib.suppress(Exception):  # the JVM may be gone already
            gateway.shutdown()
        SparkContext._gateway = None  # the next session launches a new driver
        SparkContext._jvm = None
    if driver.proc.stdin is not None:
        with contextlib.suppress(OSError):
            driver.proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        driver.proc.wait(timeout_s)
    driver.registry.close()  # kills it (and what it started) if it is still there; drops the record
