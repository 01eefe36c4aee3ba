"""Process entry point of the reference broker: arguments, logging, signals, run until stopped.

`main(argv)` parses `--config PATH` and repeatable `--override key=value`, starts a `Broker` on a
fresh asyncio loop, and runs until SIGTERM/SIGINT (clean shutdown: first the controlled shutdown --
the controller moves this broker's leaderships away -- then ZooKeeper registration deleted,
listeners closed, logs closed). Exit codes: 0 clean stop, 1 start-up failure, 2 bad arguments/config.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import logging
import signal
import sys

from harness.broker.config import BrokerConfig, load_config
from harness.broker.handlers_controller import controlled_shutdown
from harness.broker.server import Broker
from harness.errors import HarnessError

log = logging.getLogger("harness.broker")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-chaos broker",
                                description="Run the reference (Python, ZooKeeper-mode) Kafka broker.")
    p.add_argument("--config", metavar="PATH", help="server.properties (Kafka property names)")
    p.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                   help="set one property, after the file (repeatable)")
    p.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    return p


async def serve(config: BrokerConfig) -> None:
    """Run one broker until SIGTERM/SIGINT."""
    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await broker.start()
        print(f"reference broker {config.broker_id} ready: "
              + ", ".join(f"{n}={lst.port}" for n, lst in broker.bound.items()), flush=True)
        await stop.wait()
        log.info("shutting down broker %d", config.broker_id)
        try:
            await controlled_shutdown(broker)
        except Exception:
            log.exception("controlled shutdown of broker %d failed; stopping anyway", config.broker_id)
    finally:
        await broker.stop()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no real stderr (e.g. captured in tests)
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # kill -USR1 <pid>: every thread's stack
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s [broker] %(name)s: %(message)s", stream=sys.stderr)
    try:
        config = load_config(args.config, args.override)
    except HarnessError as exc:
        print(f"kafka-chaos broker: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(config))
    except HarnessError as exc:
        log.error("broker %d failed: %s", config.broker_id, exc)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
