"""bench/'s blocking RESP client: loads streams quickly (thousands of commands per write),
sends one command to learn whether a server supports it, and times request/reply exchanges
(`send` then `read`). It speaks plain RESP2 over a socket with hiredis as the reply parser,
so it behaves the same against every server. The asyncio drivers of the latency suites (many
connections in one event loop, each paced or timed) use `AsyncConnection`, the same RESP over
an asyncio protocol.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from typing import cast

import hiredis


class ServerReplyError(Exception):
    """The server replied an error to a command the benchmark needs."""


def encode(argv: Sequence[bytes | str | int]) -> bytes:
    parts = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        raw = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(parts)


def answers_ping(port: int, timeout: float) -> bool:
    """Whether the server on `port` answers one PING with PONG now (a server still loading
    answers -LOADING); OSError when nothing accepts the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(b"*1\r\n$4\r\nPING\r\n")
        return sock.recv(64).startswith(b"+PONG")


class RespClient:
    def __init__(self, port: int, timeout: float = 60.0) -> None:
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        # Timed exchanges are single small writes: no Nagle delay on them.
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = hiredis.Reader()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RespClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, count: int) -> list[object]:
        replies: list[object] = []
        while len(replies) < count:
            item = self._reader.gets()
            if item is False:
                data = self._sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("server closed the connection")
                self._reader.feed(data)
                continue
            replies.append(item)
        return replies

    def send(self, *commands: Sequence[bytes | str | int]) -> None:
        """Writes the commands at once without reading; `read` takes their replies in order."""
        self._sock.sendall(b"".join(encode(argv) for argv in commands))

    def read(self) -> object:
        """The next reply; an error reply raises ServerReplyError."""
        reply = self._read(1)[0]
        if isinstance(reply, hiredis.ReplyError):
            raise ServerReplyError(f"server error: {str(reply).strip()}")
        return reply

    def call(self, *argv: bytes | str | int) -> object:
        """Send one command; an error reply is returned as a hiredis.ReplyError value."""
        self._sock.sendall(encode(argv))
        return self._read(1)[0]

    def check(self, *argv: bytes | str | int) -> object:
        """Like call, but an error reply raises ServerReplyError."""
        reply = self.call(*argv)
        if isinstance(reply, hiredis.ReplyError):
            raise ServerReplyError(f"{_show(argv)} -> {str(reply).strip()}")
        return reply

    def pipeline(self, commands: Iterable[Sequence[bytes | str | int]], batch: int = 5000) -> int:
        """Send the commands `batch` per write; raise on the first error reply; return the
        number of commands sent."""
        sent = 0
        chunk: list[Sequence[bytes | str | int]] = []
        for argv in commands:
            chunk.append(argv)
            if len(chunk) == batch:
                sent += self._send_batch(chunk)
                chunk = []
        if chunk:
            sent += self._send_batch(chunk)
        return sent

    def _send_batch(self, chunk: list[Sequence[bytes | str | int]]) -> int:
        self._sock.sendall(b"".join(encode(argv) for argv in chunk))
        for argv, reply in zip(chunk, self._read(len(chunk))):
            if isinstance(reply, hiredis.ReplyError):
                raise ServerReplyError(f"{_show(argv)} -> {str(reply).strip()}")
        return len(chunk)


def _show(argv: Sequence[bytes | str | int]) -> str:
    words = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in argv]
    return " ".join(words)


ERRORS: list[str] = []  # error replies an asyncio driver got (any makes its run fail)


class AsyncConnection(asyncio.Protocol):
    """One RESP connection of an asyncio driver: raw writes out, each parsed reply handed to
    `on_reply` with the arrival time of the bytes that completed it in (time.time_ns()). An
    error reply is also recorded in ERRORS, which a driver reports (any fails its run)."""

    def __init__(self, on_reply: Callable[[object, int], None]) -> None:
        self.on_reply = on_reply
        self.reader = hiredis.Reader()
        self.transport: asyncio.WriteTransport | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCP transports do not subclass asyncio's classes, but have their methods.
        self.transport = cast(asyncio.WriteTransport, transport)

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if isinstance(reply, hiredis.ReplyError):
                # Counted in the in-flight bookkeeping like any reply, reported at the end.
                ERRORS.append(str(reply).strip())
            self.on_reply(reply, now)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)


async def connect(conn: AsyncConnection, port: int) -> None:
    await asyncio.get_running_loop().create_connection(lambda: conn, "127.0.0.1", port)
