"""The metrics endpoint: prometheus_client's own WSGI app for one registry, served over HTTP
by an asyncio server on the server's event loop.

On the event loop, not in the thread prometheus_client's `start_http_server` runs: a scrape
then reads the server's state between two commands, as INFO does, with no lock and no
chance of iterating a dict the loop is changing. The WSGI app (`make_wsgi_app`) does the HTTP
semantics: content negotiation (text or OpenMetrics), gzip, `name[]` filters, 405 for other
methods; any path serves the metrics, as prometheus_client's server does. This module only
reads one request per connection (its head capped and timed), calls the app and writes the
response.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, Final
from urllib.parse import unquote

from prometheus_client import CollectorRegistry, make_wsgi_app

log = logging.getLogger("rill.metrics")

# A scrape's request is one line and a few headers; anything larger is not a scraper.
_MAX_HEAD: Final = 16 * 1024
# How long a connection may take to send its request, and to take the response.
_IO_TIMEOUT: Final = 10.0

_BAD_REQUEST: Final = ("400 Bad Request", [("Content-Type", "text/plain")], b"bad request\n")


async def serve(registry: CollectorRegistry, hosts: list[str], port: int) -> MetricsExporter:
    """Starts an exporter of `registry`, and logs where. A port that cannot be bound is an
    OSError naming the setting."""
    exporter = MetricsExporter(registry)
    try:
        bound = await exporter.start(hosts, port)
    except OSError as exc:
        raise OSError(f"metrics-port {port}: {exc}") from None
    log.info("Metrics served on %s", ", ".join(f"http://{_url_host(h)}:{bound}/metrics" for h in hosts))
    return exporter


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class MetricsExporter:
    """Serves `registry` on HTTP once `start()` ran, until `stop()`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._app: Callable[..., Iterable[bytes]] = make_wsgi_app(registry)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self, hosts: list[str], port: int) -> int:
        """Listens on `hosts` (every address, as the RESP port) and `port` (0: any free one);
        returns the bound port."""
        self._server = await asyncio.start_server(
            self._serve, host=hosts, port=port, limit=_MAX_HEAD, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def stop(self) -> None:
        """Stops listening and closes the connections being served."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _IO_TIMEOUT)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
                return
            method, status, headers, body = self._respond(head)
            lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers),
                     f"Content-Length: {len(body)}", "Connection: close", "", ""]
            writer.write("\r\n".join(lines).encode("latin-1"))
            if method != "HEAD":
                writer.write(body)
            await asyncio.wait_for(writer.drain(), _IO_TIMEOUT)
        except (TimeoutError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def _respond(self, head: bytes) -> tuple[str, str, list[tuple[str, str]], bytes]:
        """(method, status, headers, body) for one request head."""
        lines = head.decode("latin-1").split("\r\n")
        words = lines[0].split(" ")
        if len(words) != 3 or not words[2].startswith("HTTP/"):
            return ("", *_BAD_REQUEST)
        method, target, protocol = words
        path, _, query = target.partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "PATH_INFO": unquote(path),
            "QUERY_STRING": query,
            "SERVER_PROTOCOL": protocol,
        }
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                environ["HTTP_" + name.strip().upper().replace("-", "_")] = value.strip()
        response: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]]) -> None:
            response["status"], response["headers"] = status, headers

        try:
            body = b"".join(self._app(environ, start_response))
        except Exception:
            # A collector's bug must not take the server down: the scrape fails, visibly.
            log.exception("Metrics collection failed")
            return (method, "500 Internal Server Error", [("Content-Type", "text/plain")], b"metrics collection failed\n")
        return (method, response["status"], response["headers"], body)
