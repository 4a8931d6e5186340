"""One client connection: an asyncio Protocol that feeds the request parser, runs the
parsed commands in a batch and queues their replies.

Output is written at the end of the event-loop turn, as Redis writes it in beforeSleep
(handleClientsWithPendingWrites): every connection with output gets one `transport.write`
once all the requests that arrived together ran. With many connections the client side then
finds many replies ready per wake-up instead of being woken once per reply, which costs it
(and, on a shared machine, the server it preempts) less CPU.

Flow control (uvicorn's model): when the transport's write buffer passes its high-water mark
the connection stops reading, so a client that does not read its replies cannot make the
server buffer without bound; `client-output-buffer-limit` disconnects clients whose
unread output passes the hard limit (or the soft limit for longer than its seconds).
A client blocked in XREAD/XREADGROUP keeps its later pipelined commands queued until it is
woken, as Redis does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Final, cast

from node.commands.context import Block, Session
from node.commands.reply import ReplyError
from node.server.blocking import REPROCESS, Waiter
from node.server.dispatch import ProtocolViolation
from node.server.request_parser import RequestParser
from node.server.resp import encode, encode_error

if TYPE_CHECKING:
    from node.server.core import ServerCore

log = logging.getLogger("rill.server")

# Pause reading when this much output is unsent; resume below the low mark.
_WRITE_HIGH: Final = 4 * 1024 * 1024
_WRITE_LOW: Final = 1024 * 1024


class ClientConnection(asyncio.Protocol):
    __slots__ = (
        "server", "session", "parser", "transport", "pending", "waiter", "_paused_reading",
        "_writing_paused", "_soft_since", "_closed", "output_class", "unsent",
    )

    def __init__(self, server: ServerCore) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.parser = RequestParser(server.config.proto_max_bulk_len)
        self.session: Session | None = None
        self.pending: deque[list[bytes]] = deque()  # commands waiting behind a blocked one
        self.waiter: Waiter | None = None
        self._paused_reading = False
        self._writing_paused = False
        self._soft_since = 0.0
        self._closed = False
        self.output_class = "normal"
        self.unsent: list[bytes] | None = None  # output queued for the end of the loop turn

    # -- asyncio callbacks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses but have the same API.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=_WRITE_HIGH, low=_WRITE_LOW)
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        sockobj = transport.get_extra_info("socket")
        self.session = self.server.register(
            self, _addr(peer), _addr(sock), sockobj.fileno() if sockobj is not None else -1
        )
        if self.session is None:
            return  # refused (maxclients): the server already wrote the error and closed
        self.parser.authenticated = self.session.authenticated
        self.session.send = self.push
    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self.waiter is not None:
            self.server.blocking.cancel(self.waiter)
            self.waiter = None
        if self.session is not None:
            self.server.unregister(self.session)

    def data_received(self, data: bytes) -> None:
        session = self.session
        if session is None or self._closed:
            return
        self.server.stats_net_input += len(data)
        session.last_interaction_ms = self.server.now_ms()  # CLIENT LIST idle=
        commands, error = self.parser.feed(data)
        if self.parser.buffered() > self.server.config.query_buffer_limit:
            # Redis's client-query-buffer-limit: a request growing past it closes the client
            # rather than the server's memory.
            log.warning("Closing client id=%d addr=%s that reached max query buffer length (%d bytes)",
                        session.id, session.addr, self.parser.buffered())
            self.server.stats_query_limit_disconnections += 1
            self.abort()
            return
        if self.waiter is not None or self.pending:
            self.pending.extend(commands)
            if error is not None:
                self._fail_protocol(error)
            return
        out: list[bytes] = []
        if commands:
            self._run(commands, out)
            # AUTH/HELLO may have authenticated the client: lift the parser's pre-AUTH limits.
            self.parser.authenticated = session.authenticated
            # Before AUTH the parser hands out one request at a time.
            while (
                error is None and self.parser.has_unparsed() and self.waiter is None
                and not self.pending and not session.closing
            ):
                commands, error = self.parser.feed(b"")
                self._run(commands, out)
                self.parser.authenticated = session.authenticated
        if error is not None:
            out.append(encode_error("ERR " + error))
            session.closing = True
        self._flush(out)
        self.server.after_batch()

    def pause_writing(self) -> None:
        self._writing_paused = True
        if self.transport is not None and not self._paused_reading:
            self._paused_reading = True
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self.transport is not None and self._paused_reading:
            self._paused_reading = False
            self.transport.resume_reading()

    # -- running commands ----------------------------------------------------------------

    def _run(self, commands: list[list[bytes]] | deque[list[bytes]], out: list[bytes]) -> None:
        dispatcher = self.server.dispatcher
        session = self.session
        assert session is not None
        dispatcher.batch_started()
        # Pushes to this client while its commands run join their replies, in order.
        session.pushes = out
        try:
            self._run_batch(commands, out)
        finally:
            session.pushes = None
            dispatcher.batch_ended()

    def _run_batch(self, commands: list[list[bytes]] | deque[list[bytes]], out: list[bytes]) -> None:
        session = self.session
        assert session is not None
        server = self.server
        execute = server.execute
        proto = session.proto
        it = iter(commands)
        for argv in it:
            try:
                reply = execute(session, argv)
            except ProtocolViolation as exc:
                out.append(encode_error("ERR " + str(exc)))
                session.closing = True
                return
            if type(reply) is Block:
                self._block(reply)
                self.pending.extend(it)
                return
            if session.closing and session.reply_mode != "on":
                return  # QUIT (or a CLIENT KILL of itself) with replies off: run nothing more
            if session.reply_mode != "on":
                # Pushes (already in `out`) are sent whatever CLIENT REPLY says, as in Redis.
                if session.reply_mode == "skip":
                    session.reply_mode = "on"
                elif session.reply_mode == "skip_next":
                    session.reply_mode = "skip"  # CLIENT REPLY SKIP: the next reply goes too
                if type(reply) is not ReplyError or argv[0].lower() != b"client":
                    continue
            if session.proto != proto:
                proto = session.proto  # HELLO switched the protocol mid-batch
            encode(reply, proto, out)
            if session.closing:
                return

    def _block(self, block: Block) -> None:
        session = self.session
        assert session is not None
        self.waiter = self.server.blocking.block(session, block, self._unblocked)
        if block.postponed is not None:
            self.server.pause.postponed(self)

    def reprocess_postponed(self) -> None:
        """The pause that postponed this client's command eased: it runs again."""
        waiter = self.waiter
        if waiter is not None and waiter.block.postponed is not None:
            self.server.blocking.unblock(waiter, REPROCESS)

    def _unblocked(self, reply: Any) -> None:
        """A blocked command finished: send its reply, then run what queued behind it (a
        postponed command runs again first)."""
        waiter, self.waiter = self.waiter, None
        session = self.session
        if session is None or self._closed:
            return
        if type(reply) is ReplyError:
            # Woken into an error (group destroyed, key deleted), CLIENT UNBLOCK ERROR, a role
            # change: an error reply like any other in INFO errorstats and commandstats.
            self.server.dispatcher.count_failed(session.last_command, reply.message)
        out: list[bytes] = []
        if reply is REPROCESS and waiter is not None and waiter.block.postponed is not None:
            self.pending.appendleft(waiter.block.postponed)
        else:
            encode(reply, session.proto, out)
        if self.pending:
            queued = self.pending
            self.pending = deque()
            self._run(queued, out)
        self._flush(out)

    def deliver(self, data: bytes) -> None:
        """Out-of-band output (MONITOR lines), after the output queued before it."""
        self._send(data)

    def push(self, data: bytes) -> None:
        """Pushes (Pub/Sub) that arrive while none of this client's commands runs: in order
        with its replies, so behind those the AOF still holds (node.server.reply_gate)."""
        if self.transport is None or self._closed:
            return
        self.server.stats_net_output += len(data)
        gate = self.server.reply_gate
        if gate.must_hold(self):
            gate.hold(self, data)
        else:
            self._send(data)

    def _flush(self, out: list[bytes]) -> None:
        if self.transport is None or self._closed:
            return
        gate = self.server.reply_gate
        if out:
            data = out[0] if len(out) == 1 else b"".join(out)
            self.server.stats_net_output += len(data)
            if gate.must_hold(self):
                # Effects are not in the AOF yet: the reply waits (node.server.reply_gate).
                gate.hold(self, data)
            else:
                self._send(data)
        session = self.session
        if session is not None and session.closing and self not in gate.held:
            self.close()

    def _send(self, data: bytes) -> None:
        """Queues output for the end of this event-loop turn (`write_unsent`)."""
        if self.transport is None or self._closed:
            return
        unsent = self.unsent
        if unsent is None:
            self.unsent = [data]
            self.server.output_pending(self)
        else:
            unsent.append(data)

    def write_unsent(self) -> None:
        """Writes the queued output with one `transport.write` (the server calls it at the end
        of the loop turn; closing calls it first)."""
        unsent = self.unsent
        if unsent is None:
            return
        self.unsent = None
        transport = self.transport
        if transport is None or self._closed:
            return
        transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))
        self._check_output_limits()

    def release_output(self, data: bytes) -> None:
        """Replies the AOF held back, now that their effects are on disk."""
        self._send(data)
        session = self.session
        if session is not None and session.closing:
            self.close()

    def _check_output_limits(self) -> None:
        transport = self.transport
        if transport is None:
            return
        size = transport.get_write_buffer_size()
        if self.session is not None:
            self.session.output_size = size
        hard, soft, seconds = self.server.config.output_limits.get(self.output_class, (0, 0, 0))
        if hard and size > hard:
            self._drop_for_output(size)
        elif soft and size > soft:
            now = time.monotonic()
            if not self._soft_since:
                self._soft_since = now
            elif now - self._soft_since > seconds:
                self._drop_for_output(size)
        else:
            self._soft_since = 0.0

    def _drop_for_output(self, size: int) -> None:
        session = self.session
        log.warning(
            "Client id=%s addr=%s closed for overcoming of output buffer limits (%d bytes).",
            session.id if session else "?", session.addr if session else "?", size,
        )
        self.server.stats_output_limit_disconnections += 1
        self.abort()

    def _fail_protocol(self, message: str) -> None:
        self._send(encode_error("ERR " + message))
        self.close()

    def close(self) -> None:
        """Closes once the output produced so far is written (transport.close flushes)."""
        self.write_unsent()
        if self.transport is not None and not self._closed:
            self._closed = True
            self.transport.close()

    def abort(self) -> None:
        """Closes at once, dropping unsent output."""
        self.unsent = None
        if self.transport is not None:
            self._closed = True
            self.transport.abort()


def _addr(info: Any) -> str:
    if isinstance(info, tuple) and len(info) >= 2:
        return f"{info[0]}:{info[1]}"
    return str(info) if info else ""
