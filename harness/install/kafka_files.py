"""The files a Maven-built Kafka install needs beside its jars: the pom that fetches them, the logging
binding its release tarball ships, and a logging configuration that writes the same files as Kafka's
own `config/log4j.properties` (server.log, controller.log, state-change.log in `${kafka.logs.dir}`).

Kafka 3.x logs through slf4j 1.7 to reload4j (the tarball's `slf4j-reload4j` + `reload4j`); Kafka 4.x
moved to log4j 2 (KIP-653), so its install gets log4j-core and the log4j 2 binding for slf4j 1.7
(`log4j-slf4j-impl`: Kafka 4.0-4.4 still depend on slf4j-api 1.7.36). `classpath()` leaves out a
binding that does not match the slf4j-api beside it: `log4j-slf4j2-impl` on slf4j 1.7 makes every
Kafka 4 tool and broker fail at start with `NoClassDefFoundError: org/slf4j/spi/LoggingEventBuilder`
(installs made before this fix hold it).
"""

from __future__ import annotations

import re
from pathlib import Path
from xml.sax.saxutils import escape

_LOGGING_3X = ("org.slf4j:slf4j-reload4j:1.7.36", "ch.qos.reload4j:reload4j:1.2.25")
_LOGGING_4X = ("org.apache.logging.log4j:log4j-core:2.24.3", "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3")
_SLF4J_API = re.compile(r"^slf4j-api-(\d+)\.")
_BINDING_FOR = {"1": "log4j-slf4j2-impl-", "2": "log4j-slf4j-impl-"}
"""slf4j-api major -> the log4j binding that must NOT be on the classpath with it."""


def logging_dependencies(major: int) -> tuple[str, ...]:
    """`group:artifact:version` of the logging binding for a Kafka major version."""
    return _LOGGING_3X if major < 4 else _LOGGING_4X


def runnable_jars(libs: Path) -> list[Path]:
    """The jars of `libs/`, without an slf4j binding that does not fit the slf4j-api beside it."""
    jars = sorted(p for p in libs.glob("*.jar") if p.is_file())
    apis = {m.group(1) for j in jars if (m := _SLF4J_API.match(j.name))}
    wrong = _BINDING_FOR.get(apis.pop()) if len(apis) == 1 else None
    return [j for j in jars if wrong is None or not j.name.startswith(wrong)]


def classpath(libs: Path) -> str:
    """`runnable_jars(libs)` as a classpath; `libs/*` for a directory that is not on this host (inside an
    image, which holds only the runnable jars)."""
    return ":".join(str(j) for j in runnable_jars(libs)) if libs.is_dir() else f"{libs}/*"


def pom(kafka: str, extra: tuple[str, ...]) -> str:
    """A packaging-pom project whose dependencies are `kafka` and `extra` (each `group:artifact:version`)."""
    deps = []
    for coordinate in (kafka, *extra):
        group, artifact, version = coordinate.split(":")
        deps.append(f"    <dependency><groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
                    f"<version>{escape(version)}</version></dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>kafka-chaos</groupId><artifactId>kafka-install</artifactId><version>1</version>\n"
            "  <packaging>pom</packaging>\n  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</project>\n")


LOG4J1_PROPERTIES = """\
# kafka-chaos: Kafka's log files, as its own config/log4j.properties names them, in ${kafka.logs.dir}.
log4j.rootLogger=INFO, stdout, kafkaAppender

log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.kafkaAppender=org.apache.log4j.FileAppender
log4j.appender.kafkaAppender.File=${kafka.logs.dir}/server.log
log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.kafkaAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.stateChangeAppender=org.apache.log4j.FileAppender
log4j.appender.stateChangeAppender.File=${kafka.logs.dir}/state-change.log
log4j.appender.stateChangeAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.stateChangeAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.controllerAppender=org.apache.log4j.FileAppender
log4j.appender.controllerAppender.File=${kafka.logs.dir}/controller.log
log4j.appender.controllerAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.controllerAppender.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.logger.org.apache.zookeeper=INFO
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.controller=TRACE, controllerAppender
log4j.additivity.kafka.controller=false
log4j.logger.state.change.logger=INFO, stateChangeAppender
log4j.additivity.state.change.logger=false
"""

LOG4J2_PROPERTIES = """\
# kafka-chaos: Kafka's log files, as its own config/log4j2.yaml names them, in ${sys:kafka.logs.dir}.
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
appender.server.type = File
appender.server.name = Server
appender.server.fileName = ${sys:kafka.logs.dir}/server.log
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.state.type = File
appender.state.name = StateChange
appender.state.fileName = ${sys:kafka.logs.dir}/state-change.log
appender.state.layout.type = PatternLayout
appender.state.layout.pattern = [%d] %p %m (%c)%n
appender.controller.type = File
appender.controller.name = Controller
appender.controller.fileName = ${sys:kafka.logs.dir}/controller.log
appender.controller.layout.type = PatternLayout
appender.controller.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
rootLogger.appenderRef.server.ref = Server
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
logger.controller.additivity = false
logger.controller.appenderRef.controller.ref = Controller
logger.kcontroller.name = kafka.controller
logger.kcontroller.level = TRACE
logger.kcontroller.additivity = false
logger.kcontroller.appenderRef.controller.ref = Controller
logger.state.name = state.change.logger
logger.state.level = INFO
logger.state.additivity = false
logger.state.appenderRef.state.ref = StateChange
"""
