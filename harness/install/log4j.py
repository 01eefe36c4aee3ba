"""Logging configurations the harness writes for the Java programs it runs beside Kafka (Kafka's command-line tools,
the Java client workers): warnings and errors to stderr, so that stdout keeps the program's own output, as Kafka's
`config/tools-log4j.properties` (log4j 1, Kafka 3.x) and `config/tools-log4j2.yaml` (log4j 2, Kafka 4.x) do."""

from __future__ import annotations


def stderr_log4j1(pattern: str, comment: str = "") -> str:
    """A log4j 1 configuration: WARN and above to stderr, each line as `pattern`."""
    return (f"# {comment}\n" if comment else "") + (
        "log4j.rootLogger=WARN, stderr\n"
        "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stderr.Target=System.err\n"
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
        f"log4j.appender.stderr.layout.ConversionPattern={pattern}\n")


def stderr_log4j2(pattern: str, comment: str = "") -> str:
    """A log4j 2 configuration (properties format): WARN and above to stderr, each line as `pattern`."""
    return (f"# {comment}\n" if comment else "") + (
        "status = warn\n"
        "appender.stderr.type = Console\n"
        "appender.stderr.name = STDERR\n"
        "appender.stderr.target = SYSTEM_ERR\n"
        "appender.stderr.layout.type = PatternLayout\n"
        f"appender.stderr.layout.pattern = {pattern}\n"
        "rootLogger.level = WARN\n"
        "rootLogger.appenderRef.stderr.ref = STDERR\n")
