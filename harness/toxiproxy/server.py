"""The embedded Toxiproxy-API-compatible server: async core, in-process runner, and `serve` entry point.

- `ToxiproxyServer`: the server on the current event loop (`await start()`, `await close()`).
- `EmbeddedToxiproxy`: runs one in a background thread; a context manager with `.url/.host/.port`.
- `main(argv)`: `kafka-chaos toxiproxy serve [--host H] [--port P] [--seed N]` and
  `python -m harness.toxiproxy.server`; prints `toxiproxy listening on http://H:P` once bound.

All proxies and the API share one event loop (one thread): no locks around proxy state. A seed makes
toxicity and jitter draws reproducible; without one a random seed is chosen (see `.seed`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import signal
import sys
import threading
from types import TracebackType

from harness.errors import BackendError, HarnessTimeout, TeardownError
from harness.toxiproxy.api import ToxiproxyApi
from harness.toxiproxy.http import HttpServer
from harness.toxiproxy.proxy import join_hostport

DEFAULT_PORT = 8474


class ToxiproxyServer:
    """Toxiproxy API + proxies on the running event loop."""

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, seed: int | None = None) -> None:
        self.requested_host = host
        self.requested_port = port
        self.seed = seed if seed is not None else random.SystemRandom().getrandbits(63)
        self.host = host
        self.port = port
        self.api: ToxiproxyApi | None = None
        self._http: HttpServer | None = None

    @property
    def url(self) -> str:
        return f"http://{join_hostport(self.host, self.port)}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # A proxy created without `listen` binds the API's host (127.0.0.1 unless told otherwise).
        default_host = self.requested_host or "127.0.0.1"
        self.api = ToxiproxyApi(loop, self.seed, default_host)
        self._http = HttpServer(self.api.handle)
        self.host, self.port = await self._http.start(self.requested_host, self.requested_port)

    async def close(self) -> None:
        """Stop the API and every proxy; attempts both even if one fails."""
        failures: list[tuple[str, BaseException]] = []
        if self._http is not None:
            try:
                await self._http.close()
            except Exception as exc:  # collect, keep tearing down
                failures.append(("close toxiproxy API listener", exc))
        if self.api is not None:
            try:
                self.api.stop_all()
            except Exception as exc:
                failures.append(("stop toxiproxy proxies", exc))
        if failures:
            raise TeardownError(failures)


class EmbeddedToxiproxy:
    """A `ToxiproxyServer` on its own event loop in a daemon thread.

    >>> with EmbeddedToxiproxy(port=0, seed=1) as tp:
    ...     tp.url  # doctest: +SKIP
    'http://127.0.0.1:41234'
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, seed: int | None = None,
                 start_timeout_s: float = 10.0) -> None:
        self._server = ToxiproxyServer(host, port, seed)
        self._start_timeout_s = start_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    @property
    def host(self) -> str:
        return self._server.host

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def seed(self) -> int:
        return self._server.seed

    def start(self) -> EmbeddedToxiproxy:
        if self._thread is not None:
            raise BackendError(f"embedded toxiproxy at {self.url} is already started")
        self._startup_error = None
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="embedded-toxiproxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(self._start_timeout_s):
            self.stop()
            raise HarnessTimeout("embedded toxiproxy to listen", self._start_timeout_s,
                                 f"{self._server.requested_host}:{self._server.requested_port}",
                                 "the machine may be overloaded")
        if self._startup_error is not None:
            err = self._startup_error
            self._thread.join(5)
            self._thread = None
            raise BackendError(
                f"embedded toxiproxy could not listen on "
                f"{self._server.requested_host}:{self._server.requested_port}: {err}"
            ) from err
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            try:
                loop.run_until_complete(self._server.start())
            except BaseException as exc:
                self._startup_error = exc
                return
            finally:
                self._ready.set()
            loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                _cancel_all(loop)
            loop.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Close the API and every proxy, stop the loop, join the thread; every step is attempted."""
        failures: list[tuple[str, BaseException]] = []
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive() and self._startup_error is None:
            try:
                asyncio.run_coroutine_threadsafe(self._server.close(), loop).result(timeout_s)
            except Exception as exc:
                failures.append((f"close embedded toxiproxy at {self.url}", exc))
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError as exc:  # loop already closed
                failures.append(("stop embedded toxiproxy loop", exc))
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                failures.append(("join embedded toxiproxy thread",
                                 HarnessTimeout("toxiproxy thread to exit", timeout_s, "still alive")))
        self._thread = None
        self._loop = None
        self._ready.clear()
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> EmbeddedToxiproxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-chaos toxiproxy serve",
        description="Run the embedded Toxiproxy-API-compatible server (Toxiproxy 2.x HTTP API).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="API listen host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"API listen port, 0 = any free port (default {DEFAULT_PORT})")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for toxicity and jitter draws (default: random, printed at start)")
    return parser


async def _serve(server: ToxiproxyServer) -> None:
    await server.start()
    print(f"toxiproxy listening on {server.url} seed={server.seed}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> int:
    """`serve` entry point; returns 0 after SIGINT/SIGTERM, 1 if it cannot listen, 2 on bad args."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not 0 <= args.port <= 65535:
        print(f"toxiproxy serve: --port {args.port} is outside 0..65535", file=sys.stderr)
        return 2
    server = ToxiproxyServer(args.host, args.port, args.seed)
    try:
        asyncio.run(_serve(server))
    except OSError as exc:
        print(f"toxiproxy serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
