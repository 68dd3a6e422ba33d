"""Serving the app with uvicorn: in the foreground (``resolveflow serve``) or on a thread (the
demo and the browser tests), on 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn

from resolveflow.bootstrap.app import App
from resolveflow.errors import ConfigError
from resolveflow.web.app import create_app

logger = logging.getLogger(__name__)


def _config(app: App, host: str, port: int, sandbox: str | None) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(app, sandbox=sandbox),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=10,
    )


class _Server(uvicorn.Server):
    """uvicorn's server, except that the SIGTERM or Ctrl-C that stopped it is not raised again
    once it has shut down (uvicorn does, to die of the signal): the command's own cleanup then
    runs (the pool, the embedded Postgres it may have started) and it exits 0, a stop asked
    for. A container runtime's SIGTERM is the usual way a web process ends."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket ``serve`` will use, bound now: a port already in use fails here,
    in one line naming it and how to choose another, before anything is opened or printed."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listening = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        listening.bind((host, port))
        listening.listen(2048)
    except OSError as exc:
        listening.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use: pass --port N "
                "or set RESOLVEFLOW_WEB_PORT to a free port"
            ) from None
        raise ConfigError(
            f"cannot serve on {host}:{port}: {exc.strerror or exc} "
            "(--host and --port, or RESOLVEFLOW_WEB_HOST and RESOLVEFLOW_WEB_PORT)"
        ) from None
    listening.set_inheritable(True)
    return listening


def serve(app: App, listening: socket.socket, sandbox: str | None = None) -> None:
    """Serve on a socket from ``bind`` (its address is the one the settings named)."""
    host, port = listening.getsockname()[:2]
    _Server(_config(app, host, port, sandbox)).run(sockets=[listening])


class ServerThread:
    """uvicorn on a daemon thread; ``url`` is known once ``start()`` returns."""

    def __init__(
        self, app: App, host: str = "127.0.0.1", port: int = 0, sandbox: str | None = None
    ) -> None:
        self._server = uvicorn.Server(_config(app, host, port, sandbox))
        self._thread = threading.Thread(
            target=self._server.run, name="resolveflow-web", daemon=True
        )
        self.url = ""

    def start(self, timeout: float = 20.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError("the web server did not start (is the port taken?)")
            time.sleep(0.02)
        host, port = self._server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
