"""The sentinel's outbound connections to monitored nodes and other sentinels (what hiredis's
async contexts are to sentinel.c): open the connections the policy asks for, write its
commands, and hand back what happens on them — connected (with our local address), a reply
to a request, a Pub/Sub message, closed — through the callbacks of a `LinkEvents`.

Replies come back in the order the commands were written (RESP is FIFO per connection), so
each connection keeps the request ids of the commands awaiting a reply in a queue. Commands
written before the connection is established wait in the transport's buffer, as hiredis
buffers them. On a Pub/Sub connection an array beginning with `message` is a published
message and answers no request. A connection that fails to open, breaks, or sends bytes that
are not RESP is reported closed once; its pending requests never get a reply. Closing a
connection on the policy's request reports nothing (the policy already forgot it). With
`tls-replication yes` the connections are TLS.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import socket
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol, cast

from node.log.encode import encode_command
from node.sentinel.messages import Value
from node.sentinel.reply_reader import ProtocolError, ReplyReader

log = logging.getLogger("rill.sentinel")


class LinkEvents(Protocol):
    """What the owner of the links is told (in the event loop, one call per event)."""

    def link_connected(self, conn: int, local_ip: str) -> None: ...

    def link_closed(self, conn: int) -> None: ...

    def link_reply(self, conn: int, request: int, value: Value) -> None: ...

    def link_message(self, conn: int, channel: bytes, payload: bytes) -> None: ...


class _Connection(asyncio.Protocol):
    """One outbound connection: a reader, the queue of requests awaiting replies."""

    def __init__(self, links: Links, conn: int, pubsub: bool) -> None:
        self.links = links
        self.conn = conn
        self.pubsub = pubsub
        self.reader = ReplyReader()
        self.pending: deque[int] = deque()
        self.transport: asyncio.Transport | None = None
        self.buffer: list[bytes] = []  # commands queued before the connection is established
        self.task: asyncio.Task[None] | None = None
        self.closed = False

    # -- asyncio callbacks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if self.closed:
            self.transport.abort()
            return
        if self.buffer:
            self.transport.write(b"".join(self.buffer))
            self.buffer = []
        sock = transport.get_extra_info("sockname")
        local_ip = sock[0] if isinstance(sock, tuple) and sock else "127.0.0.1"
        self.links.events.link_connected(self.conn, local_ip)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.reader.feed(data)
        events = self.links.events
        while not self.closed:
            try:
                value = self.reader.gets()
            except ProtocolError as exc:
                log.warning("Closing link %d: protocol error from the peer (%s)", self.conn, exc)
                self.fail()
                return
            if value is ReplyReader.NOTHING:
                return
            if self.pubsub and _is_message(value):
                assert isinstance(value, list)
                channel, payload = value[1], value[2]
                if isinstance(channel, bytes) and isinstance(payload, bytes):
                    events.link_message(self.conn, channel, payload)
                continue
            if not self.pending:
                log.warning("Closing link %d: a reply nobody asked for", self.conn)
                self.fail()
                return
            events.link_reply(self.conn, self.pending.popleft(), cast(Value, value))

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail()

    # -- the owner's side ------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self.transport is None:
            self.buffer.append(data)
        else:
            self.transport.write(data)

    def fail(self) -> None:
        """The connection is gone without the policy asking: report it once."""
        if self.closed:
            return
        self.close()
        self.links.events.link_closed(self.conn)

    def close(self) -> None:
        self.closed = True
        self.links.forget(self.conn)
        if self.transport is not None:
            self.transport.abort()
        elif self.task is not None:
            self.task.cancel()


def _start_connect(host: str, port: int) -> socket.socket | None:
    """A nonblocking connect to an IP address, started (None for a host name: resolving it is
    left to the event loop); raises the OSError of a connect already refused."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    error = sock.connect_ex((host, port))
    if error == errno.EINPROGRESS:
        # To an address of this host the answer (a refusal) is there when connect returns.
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error not in (0, errno.EINPROGRESS):
        sock.close()
        raise OSError(error, os.strerror(error))
    return sock


def _is_message(value: object) -> bool:
    return isinstance(value, list) and len(value) == 3 and value[0] == b"message"


class Links:
    """Every connection the policy opened, by its id."""

    def __init__(self, events: LinkEvents, connect_timeout: float | None = None) -> None:
        self.events = events
        # With `tls-replication yes` every link (to nodes and to other sentinels) is TLS, as
        # redis-sentinel's are: the shell sets the client context here.
        self.tls: ssl.SSLContext | None = None
        self._conns: dict[int, _Connection] = {}
        # None: as hiredis's async connect in sentinel.c, no timeout of its own (the policy
        # closes a link that does not answer PING).
        self._connect_timeout = connect_timeout

    def __len__(self) -> int:
        return len(self._conns)

    def connect(self, conn: int, host: str, port: int, pubsub: bool) -> None:
        """Open a connection. To an IP address the connect starts here, and a refusal known
        when it returns (a closed port on this host: the kernel answers the SYN inside the
        connect call) is reported before this returns. Redis learns of it in its next
        event-loop turn, before any command that came after; left to a task of the loop,
        SENTINEL MASTER could see such a link connected for a turn or two."""
        connection = _Connection(self, conn, pubsub)
        self._conns[conn] = connection
        try:
            sock = _start_connect(host, port)
        except OSError as exc:
            log.debug("Link %d to %s:%d failed: %s", conn, host, port, exc)
            connection.fail()
            return
        connection.task = asyncio.get_running_loop().create_task(self._open(connection, host, port, sock))

    async def _open(self, connection: _Connection, host: str, port: int, sock: socket.socket | None) -> None:
        loop = asyncio.get_running_loop()
        factory: Callable[[], asyncio.Protocol] = lambda: connection  # noqa: E731
        try:
            if sock is None:
                opening = loop.create_connection(factory, host, port, ssl=self.tls)
            else:
                opening = self._finish_connect(loop, factory, sock, host, port)
            if self._connect_timeout is not None:
                await asyncio.wait_for(opening, self._connect_timeout)
            else:
                await opening
        except asyncio.CancelledError:
            if sock is not None:
                sock.close()
            return  # closed by the policy before it connected
        except (TimeoutError, OSError) as exc:
            if sock is not None:
                sock.close()
            log.debug("Link %d to %s:%d failed: %s", connection.conn, host, port, exc)
            connection.fail()

    async def _finish_connect(self, loop: asyncio.AbstractEventLoop, factory: Callable[[], asyncio.Protocol],
                              sock: socket.socket, host: str, port: int) -> tuple[asyncio.Transport, asyncio.Protocol]:
        try:
            sock.getpeername()  # connected at once
        except OSError:
            # sock_connect on a connect in progress waits for it (EALREADY counts as blocking).
            await loop.sock_connect(sock, (host, port))
        return await loop.create_connection(factory, sock=sock, ssl=self.tls,
                                            server_hostname=host if self.tls else None)

    def send(self, conn: int, request: int, argv: Sequence[str]) -> None:
        """Write a command; unknown `conn` (already closed): the reply never comes, as for
        any command on a connection that broke."""
        connection = self._conns.get(conn)
        if connection is None:
            return
        connection.pending.append(request)
        connection.write(encode_command([a.encode("utf-8", "surrogateescape") for a in argv]))

    def close(self, conn: int) -> None:
        connection = self._conns.get(conn)
        if connection is not None:
            connection.close()

    def close_all(self) -> None:
        for connection in list(self._conns.values()):
            connection.close()

    def forget(self, conn: int) -> None:
        self._conns.pop(conn, None)
