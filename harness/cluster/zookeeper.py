"""Real ZooKeeper servers as local processes: one member or an odd-sized ensemble on loopback.

Owns finding ZooKeeper's jars (`ZOOKEEPER_HOME/lib` or the zookeeper-3.9 jars inside the pyspark
wheel), rendering `zoo.cfg` + `myid` per member, starting each member in its own process group
(`QuorumPeerMain`, which runs standalone when the config names no peers), the signal-level
operations faults use (kill -9, graceful stop, SIGSTOP/SIGCONT, restart with the same data), and
waiting until members serve (the `srvr` four-letter word reports a `Mode:`). Each member's process
is a `process_node.ManagedProcess` with a record in a `leftovers.LeftoverRegistry` (the cluster's, or
the ensemble's own): one left running when the interpreter exits is killed by the registry's atexit
hook, and one left by a SIGKILLed harness by the next run's `clean_leftovers()`, like a broker.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.ports import allocate_ports
from harness.cluster.process_node import ManagedProcess, tail
from harness.errors import BackendError, HarnessError, HarnessTimeout, TeardownError
from harness.waiting import Deadline, wait_until
from harness.zk.fourletter import four_letter_word, server_mode

__all__ = [
    "ZooKeeperEnsemble",
    "ZooKeeperMember",
    "four_letter_word",
    "free_port",
    "server_mode",
    "zookeeper_classpath",
]

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEFAULT_JVM_OPTS: tuple[str, ...] = (
    "-Xms16m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.jmx.log4j.disable=true",
)
_LOG4J2 = """status = warn
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} [myid:%X{myid}] %-5p [%t] %c{1}: %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
"""



def zookeeper_classpath() -> str:
    """The Java classpath holding ZooKeeper: `$ZOOKEEPER_HOME/lib/*` (+ conf), else pyspark's jars."""
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        lib = Path(home) / "lib"
        if not any(lib.glob("zookeeper-*.jar")) and not any(Path(home).glob("zookeeper-*.jar")):
            raise HarnessError(
                f"ZOOKEEPER_HOME={home!r} holds no zookeeper-*.jar in lib/ or its top level; "
                "hint: point it at an unpacked apache-zookeeper-3.x-bin distribution"
            )
        parts = [str(lib / "*"), str(Path(home) / "*"), str(Path(home) / "conf")]
        return os.pathsep.join(parts)
    try:
        import pyspark
    except ImportError as exc:
        raise HarnessError(
            "no ZooKeeper found: ZOOKEEPER_HOME is unset and pyspark (which ships the ZooKeeper jars) "
            "is not importable; hint: set ZOOKEEPER_HOME or `pip install pyspark`"
        ) from exc
    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("zookeeper-[0-9]*.jar")):
        raise HarnessError(f"no zookeeper-*.jar in {jars}; hint: set ZOOKEEPER_HOME to a ZooKeeper 3.x distribution")
    return str(jars / "*")


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on `host` a moment ago (`ports.allocate_ports`)."""
    return allocate_ports(1, host)[0]


class ZooKeeperMember:
    """One ZooKeeper server with its own directory, config, data and log file; its process is a
    `ManagedProcess` named `zookeeper:<id>` (a leftover record while it runs)."""

    def __init__(
        self,
        member_id: int,
        directory: Path,
        host: str,
        client_port: int,
        peer_port: int,
        election_port: int,
        command: Sequence[str],
        registry: LeftoverRegistry,
    ) -> None:
        self.id = member_id
        self.host = host
        self.client_port = client_port
        self.peer_port = peer_port
        self.election_port = election_port
        self.directory = directory
        self.log_path = directory / "zookeeper.log"
        self.process = ManagedProcess(
            f"zookeeper:{member_id}", command, cwd=directory, log_path=self.log_path, registry=registry,
            env={**os.environ, "KAFKA_CHAOS_ROLE": f"zookeeper:{member_id}"},
            start_hint="is Java installed and on PATH (or pass java=...)?",
        )
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ZooKeeperMember(id={self.id}, {self.host}:{self.client_port}, pid={self.pid})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def is_running(self) -> bool:
        """True while the process exists (also when paused with SIGSTOP)."""
        return self.process.is_running()

    def start(self) -> None:
        """Start (or restart) the server with the same config and data; no-op if already running."""
        with self._lock:
            if self.process.is_running():
                return
            self.process.start()
            (self.directory / "zookeeper.pid").write_text(f"{self.process.pid}\n", encoding="ascii")

    def kill(self) -> None:
        """SIGKILL the member's whole process group and reap it (kill -9: no clean shutdown)."""
        self.process.kill()

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM (then SIGCONT in case it is paused), wait `grace_s`, then SIGKILL."""
        self.process.terminate(grace_s)

    def pause(self, timeout_s: float = 5.0) -> None:
        """SIGSTOP the process group and wait until every thread is stopped (the server is frozen)."""
        if not self.process.pause(timeout_s) and self.process.is_running():
            raise HarnessTimeout(
                f"ZooKeeper member {self.id} (pid {self.pid}) to stop after SIGSTOP", timeout_s,
                last_seen=f"a thread of pid {self.pid} still not in state T (see /proc/{self.pid}/task/*/stat)",
                hint="a thread inside an uninterruptible system call stops only when the call returns",
            )

    def resume(self) -> None:
        """SIGCONT the process group."""
        self.process.resume()

    def mode(self) -> str | None:
        """What `srvr` reports now: standalone / leader / follower, or None when not serving."""
        return server_mode(self.host, self.client_port, timeout_s=1.0)

    def wait_listening(self, timeout_s: float) -> None:
        """Block until this member's client port accepts connections (a member without a quorum yet)."""
        def connects() -> bool:
            with socket.create_connection((self.host, self.client_port), timeout=1.0):
                return True

        wait_until(f"ZooKeeper member {self.id} to accept connections on {self.address}", connects, timeout_s,
                   retry_on=(OSError,), last_seen=lambda last: f"{last}; log {self.log_path} ends with:\n"
                   f"{tail(self.log_path)}", hint="check the member's log for a startup error")

    def wait_serving(self, timeout_s: float) -> None:
        """Block until this member answers `srvr` with a Mode (it is part of a serving quorum)."""
        last: object = "no answer yet"

        def serving() -> bool:
            nonlocal last
            if not self.process.is_running():
                raise BackendError(
                    f"ZooKeeper member {self.id} ({self.address}) is not running ({self.process.exit_description()}); "
                    f"log {self.log_path} ends with:\n{tail(self.log_path, 15)}"
                )
            if self.mode() is not None:
                return True
            try:
                last = four_letter_word(self.host, self.client_port, "srvr", 1.0).strip() or "empty reply"
            except OSError as exc:
                last = f"{type(exc).__name__}: {exc}"
            return False

        wait_until(f"ZooKeeper member {self.id} ({self.address}) to serve", serving, timeout_s,
                   last_seen=lambda _: f"{last}; log {self.log_path} ends with:\n{tail(self.log_path, 15)}",
                   hint="a quorum needs a majority of members running; check the ports and the log")


class ZooKeeperEnsemble:
    """`size` real ZooKeeper servers on loopback (1 = standalone). A context manager.

    Entering the context starts the ensemble (and waits until it serves) unless `start()` was
    called already; leaving it kills every member and removes the base directory when the
    ensemble created it (a given `base_dir` is kept, logs included). `ports` fixes each
    member's (client, peer, election) ports, e.g. when proxies are wired in front of them.
    `registry` records the members' processes for leftover cleanup (a cluster passes its own); without
    one the ensemble makes a `LeftoverRegistry()` in the per-user directory and closes it on `close()`.
    """

    def __init__(
        self,
        size: int = 1,
        base_dir: Path | None = None,
        *,
        tick_ms: int = 500,
        java: str = "java",
        classpath: str | None = None,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int | None = None,
        bind_host: str = "127.0.0.1",
        ports: list[tuple[int, int, int]] | None = None,
        jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
        extra_config: dict[str, str] | None = None,
        registry: LeftoverRegistry | None = None,
    ) -> None:
        if size < 1 or size % 2 == 0:
            raise BackendError(f"ZooKeeper ensemble size must be a positive odd number, got {size}")
        if ports is not None and len(ports) != size:
            raise BackendError(f"ports lists {len(ports)} member(s) for an ensemble of {size}: {ports!r}")
        if tick_ms < 1:
            raise BackendError(f"tick_ms must be positive, got {tick_ms}")
        self.size = size
        self.tick_ms = tick_ms
        self.bind_host = bind_host
        java_path = shutil.which(java)
        if java_path is None:
            raise HarnessError(f"java executable {java!r} not found on PATH; hint: install a JRE 11+")
        cp = classpath if classpath is not None else zookeeper_classpath()
        self._owns_dir = base_dir is None
        self.base_dir = Path(tempfile.mkdtemp(prefix="zk-ensemble-")) if base_dir is None else Path(base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        log_cfg = self.base_dir / "log4j2.properties"
        log_cfg.write_text(_LOG4J2, encoding="utf-8")
        if ports is None:
            ports = self._pick_ports(size, bind_host)
        self._owns_registry = registry is None
        self.registry = LeftoverRegistry() if registry is None else registry
        self.members: list[ZooKeeperMember] = []
        for i, (client, peer, election) in enumerate(ports, start=1):
            directory = self.base_dir / f"zk{i}"
            (directory / "data").mkdir(parents=True, exist_ok=True)
            (directory / "data" / "myid").write_text(f"{i}\n", encoding="ascii")
            cfg = directory / "zoo.cfg"
            cfg.write_text(
                self._render_config(
                    directory, client, ports, min_session_timeout_ms, max_session_timeout_ms, extra_config
                ),
                encoding="utf-8",
            )
            command = [
                java_path,
                *jvm_opts,
                f"-Dlog4j2.configurationFile={log_cfg}",
                f"-Dzookeeper.log.dir={directory}",
                "-cp",
                cp,
                MAIN_CLASS,
                str(cfg),
            ]
            self.members.append(
                ZooKeeperMember(i, directory, bind_host, client, peer, election, command, self.registry))
        self._closed = False

    @staticmethod
    def _pick_ports(size: int, host: str) -> list[tuple[int, int, int]]:
        flat = sorted(allocate_ports(3 * size, host))
        return [(flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]) for i in range(size)]

    def _render_config(
        self,
        directory: Path,
        client_port: int,
        ports: list[tuple[int, int, int]],
        min_session_timeout_ms: int | None,
        max_session_timeout_ms: int | None,
        extra_config: dict[str, str] | None,
    ) -> str:
        lines = [
            f"tickTime={self.tick_ms}",
            "initLimit=20",
            "syncLimit=10",
            f"dataDir={directory / 'data'}",
            f"clientPort={client_port}",
            f"clientPortAddress={self.bind_host}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "reconfigEnabled=false",
            "autopurge.purgeInterval=0",
        ]
        if min_session_timeout_ms is not None:
            lines.append(f"minSessionTimeout={min_session_timeout_ms}")
        if max_session_timeout_ms is not None:
            lines.append(f"maxSessionTimeout={max_session_timeout_ms}")
        if len(ports) > 1:
            for i, (_, peer, election) in enumerate(ports, start=1):
                lines.append(f"server.{i}={self.bind_host}:{peer}:{election}")
        for key, value in (extra_config or {}).items():
            lines.append(f"{key}={value}")
        return "\n".join(lines) + "\n"

    @property
    def connect_string(self) -> str:
        """`host:port,host:port,...` of every member's client port (no chroot)."""
        return ",".join(m.address for m in self.members)

    def member(self, member_id: int) -> ZooKeeperMember:
        """The member with this 1-based myid."""
        for m in self.members:
            if m.id == member_id:
                return m
        raise BackendError(f"no ZooKeeper member {member_id} in an ensemble of {self.size}")

    def leader(self) -> ZooKeeperMember | None:
        """The member that reports Mode leader (or standalone), if any serves right now."""
        for m in self.members:
            if m.is_running and m.mode() in ("leader", "standalone"):
                return m
        return None

    def start(self, timeout_s: float = 60) -> None:
        """Start every member that is not running, then wait until each serves."""
        if self._closed:
            raise BackendError("this ZooKeeper ensemble was closed; create a new one")
        for m in self.members:
            m.start()
        deadline = Deadline.after(timeout_s)
        for m in self.members:
            m.wait_serving(max(0.1, deadline.remaining()))

    def close(self) -> None:
        """Kill every member (attempting each), remove the base dir if the ensemble made it, and close
        the leftover registry if it is the ensemble's own."""
        failures: list[tuple[str, BaseException]] = []
        for m in self.members:
            try:
                m.kill()
            except Exception as exc:
                failures.append((f"kill zookeeper:{m.id}", exc))
        if self._owns_dir and not self._closed:
            try:
                shutil.rmtree(self.base_dir)
            except OSError as exc:
                failures.append((f"remove {self.base_dir}", exc))
        if self._owns_registry:
            try:
                self.registry.close()
            except Exception as exc:
                failures.append(("close the leftover registry", exc))
        self._closed = True
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> ZooKeeperEnsemble:
        try:
            self.start()
        except BaseException:
            with contextlib.suppress(Exception):
                self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
