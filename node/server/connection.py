"""One client connection: an asyncio Protocol that feeds the request parser, runs the
parsed commands in a batch and queues their replies.

Output is written at the end of the event-loop turn, as Redis writes it in beforeSleep
(handleClientsWithPendingWrites): every connection with output gets one `transport.write`
once all the requests that arrived together ran. With many connections the client side then
finds many replies ready per wake-up instead of being woken once per reply, which costs it
(and, on a shared machine, the server it preempts) less CPU.

Memory per client is bounded as replies are produced (issue 28), not only when they are
written: the bytes a client has pending (the transport's buffer, the output queued for the
end of the turn, and the replies of the batch being run) are counted after every command
and every push. `client-output-buffer-limit` (class normal, pubsub; replicas are bounded by
the replication service) closes a client once they pass the hard limit, or the soft limit
for longer than its seconds, as Redis checks in addReply; a reply that could be large on
its own (XRANGE, XREAD) stops as soon as it would pass the hard limit (`ClientSession.output_room`).

Flow control: once a client's pending output passes `_FLOW_HIGH` (or the transport's buffer
its high-water mark) the connection stops running that client's commands until the output
drains; the rest of its batch waits parsed, and what it sends meanwhile waits unparsed,
counted against `client-query-buffer-limit` (raw request bytes cost what they weigh, while
replies can be thousands of times larger than their requests). Reading goes on until
`_HELD_HIGH` bytes wait so: a client that writes its whole pipeline before it reads
(redis-py does) would deadlock with a server that stopped reading it at once, while one
that sends without end is still stopped. Other clients are served between the slices of a
backed-up client.
A client blocked in XREAD/XREADGROUP keeps its later pipelined commands queued until it is
woken, as Redis does.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from node.commands.context import Block, ClientSession
from node.commands.reply import OutputLimitReached, ReplyError
from node.server.blocking import REPROCESS, Waiter
from node.server.dispatch import ProtocolViolation
from node.server.request_parser import RequestParser
from node.server.resp import encode, encode_error
from node.server.tls import begin_server_tls

if TYPE_CHECKING:
    from node.commands.acl_users import AclUsers
    from node.config import Config
    from node.server.blocking import BlockingManager
    from node.server.dispatch import Dispatcher
    from node.server.pause import ClientPause
    from node.server.reply_gate import ReplyGate


class ClientHost(Protocol):
    """The server as its client connections see it (node/server/core.py's ServerCore, which
    builds them): it registers a client, runs its commands, parks it, gates its replies and
    counts its traffic."""

    stats_net_input: int
    stats_net_output: int
    stats_output_limit_disconnections: int
    stats_query_limit_disconnections: int

    @property
    def config(self) -> Config: ...
    @property
    def acl(self) -> AclUsers: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def blocking(self) -> BlockingManager: ...
    @property
    def pause(self) -> ClientPause: ...
    @property
    def reply_gate(self) -> ReplyGate: ...

    def register(self, conn: ClientConnection, addr: str, laddr: str, fd: int, tls: bool = False) -> ClientSession | None: ...
    def unregister(self, session: ClientSession) -> None: ...
    def execute(self, session: ClientSession, argv: list[bytes]) -> Any: ...
    def after_batch(self) -> None: ...
    def now_ms(self) -> int: ...
    def output_pending(self, conn: ClientConnection) -> None: ...

log = logging.getLogger("rill.server")

# The transport reports its buffer as full above the high mark, drained below the low one.
_WRITE_HIGH: Final = 4 * 1024 * 1024
_WRITE_LOW: Final = 1024 * 1024
# Stop running a client's commands while this much of its output is pending.
_FLOW_HIGH: Final = 4 * 1024 * 1024
# Stop reading from a backed-up client once this much of its input waits unparsed.
_HELD_HIGH: Final = 16 * 1024 * 1024
_NO_LIMIT: Final = 1 << 62
# No deadline of its own for a TLS handshake (asyncio's default is 60 s): a client that does
# not complete it is an idle client, closed by `timeout` as a plaintext one is (ServerCore).
_HANDSHAKE_TIMEOUT: Final = 365 * 86400.0
# Output queued below this is not compared with the limits on every push.
_PUSH_CHECK: Final = 16 * 1024


class ClientConnection(asyncio.Protocol):
    __slots__ = (
        "server", "session", "parser", "transport", "pending", "waiter", "_writing_paused", "tls",
        "_soft_since", "_closed", "output_class", "unsent", "_unsent_size", "_buffered",
        "_backed_up", "_held_input", "_held_size", "_resume_scheduled", "_reading_paused",
    )

    def __init__(self, server: ClientHost, tls: ssl.SSLContext | None = None) -> None:
        self.server = server
        # The TLS context of a client of the TLS port, until its connection is made.
        self.tls = tls
        self.transport: asyncio.Transport | None = None
        self.parser = RequestParser(server.config.proto_max_bulk_len)
        self.session: ClientSession | None = None
        self.pending: deque[list[bytes]] = deque()  # commands waiting behind a blocked one
        self.waiter: Waiter | None = None
        self._writing_paused = False
        self._soft_since = 0.0
        self._closed = False
        self.output_class = "normal"
        self.unsent: list[bytes] | None = None  # output queued for the end of the loop turn
        self._unsent_size = 0  # bytes in `unsent`
        # The transport's buffer size when last read: it only shrinks until the next write,
        # so it plus `_unsent_size` never under-counts the pending output.
        self._buffered = 0
        # Commands stopped because the output is backed up (flow control): they resume
        # when it drains; input received meanwhile waits unparsed in `_held_input`.
        self._backed_up = False
        self._held_input: deque[bytes] = deque()
        self._held_size = 0
        self._resume_scheduled = False
        self._reading_paused = False

    # -- asyncio callbacks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        sockobj = transport.get_extra_info("socket")
        tls = self.tls
        if tls is not None:
            # The TLS layer goes between the socket and this client before anything is read
            # (node/server/tls.py); a client's writes wait in it until the handshake is done.
            transport = begin_server_tls(transport, self, tls, _HANDSHAKE_TIMEOUT)
            self.tls = None
        # uvloop's transports are not asyncio.Transport subclasses but have the same API.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=_WRITE_HIGH, low=_WRITE_LOW)
        # A TLS client is a client from its TCP connection on, as in Redis: it counts against
        # maxclients and is closed like any idle client while its handshake is pending.
        self.session = self.server.register(
            self, _addr(peer), _addr(sock), sockobj.fileno() if sockobj is not None else -1, tls is not None
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
        out: list[bytes] = []
        self._take_input(data, out)
        self._flush(out)
        self.server.after_batch()

    def _take_input(self, data: bytes, out: list[bytes]) -> None:
        """Parses and runs `data`, or keeps it for later while the client's output is backed
        up or a blocked command holds its later commands."""
        session = self.session
        assert session is not None
        if self._backed_up:
            # Kept as received: parsed a read at a time later, so the parsed form of a long
            # pipeline never exists whole.
            self._held_input.append(data)
            self._held_size += len(data)
            if (
                self._check_query_buffer(self._held_size) and self._held_size > _HELD_HIGH
                and self.transport is not None
            ):
                self._reading_paused = True
                self.transport.pause_reading()
            return
        commands, error = self.parser.feed(data)
        if not self._check_query_buffer(0):
            return
        if self.waiter is not None or self.pending:
            self.pending.extend(commands)
            if error is not None:
                self._fail_protocol(error)
            return
        if commands:
            self._run(commands, out)
            # AUTH/HELLO may have authenticated the client: lift the parser's pre-AUTH limits
            # (Redis's authRequired: also when the default user needs no password any more).
            self.parser.authenticated = session.authenticated or not self.server.acl.auth_required()
            # Before AUTH the parser hands out one request at a time.
            while (
                error is None and self.parser.has_unparsed() and self.waiter is None
                and not self.pending and not session.closing and not self._closed
            ):
                commands, error = self.parser.feed(b"")
                self._run(commands, out)
                self.parser.authenticated = session.authenticated or not self.server.acl.auth_required()
        if error is not None:
            out.append(encode_error("ERR " + error))
            session.closing = True

    def _check_query_buffer(self, held: int) -> bool:
        """Redis's client-query-buffer-limit: a request growing past it (or the input held
        while output is backed up) closes the client rather than the server's memory."""
        size = self.parser.buffered() + held
        if size <= self.server.config.query_buffer_limit:
            return True
        session = self.session
        assert session is not None
        log.warning("Closing client id=%d addr=%s that reached max query buffer length (%d bytes)",
                    session.id, session.addr, size)
        self.server.stats_query_limit_disconnections += 1
        self.abort()
        return False

    def pause_writing(self) -> None:
        # The transport's buffer passed its high-water mark: stop running commands (the
        # transport calls resume_writing once it drained).
        self._writing_paused = True
        self._backed_up = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._resume()

    def _resume(self) -> None:
        """The output drained: run what waited for it."""
        self._resume_scheduled = False
        if self._closed or self.session is None or self._writing_paused or not self._backed_up:
            return
        self._backed_up = False
        out: list[bytes] = []
        self._continue(out)
        self._flush(out)
        self.server.after_batch()

    def _continue(self, out: list[bytes]) -> None:
        """Runs the commands that waited (behind a blocked one, or for output to drain), then
        the input held meanwhile, unless they stop again."""
        if self.pending and self.waiter is None:
            queued = self.pending
            self.pending = deque()
            self._run(queued, out)
        held = self._held_input
        while (
            held and not self._backed_up and self.waiter is None and not self.pending
            and not self._closed and self.session is not None and not self.session.closing
        ):
            data = held.popleft()
            self._held_size -= len(data)
            if self._reading_paused and self._held_size <= _HELD_HIGH // 2 and self.transport is not None:
                self._reading_paused = False
                self.transport.resume_reading()
            self._take_input(data, out)

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
        hard, soft, _ = server.config.output_limits.get(self.output_class, (0, 0, 0))
        # Past this many pending bytes the output is checked against the limits, and the
        # batch stops (flow control).
        check_at = min(_FLOW_HIGH, hard or _NO_LIMIT, soft or _NO_LIMIT)
        # Output pending before the batch (written, queued, or produced by the caller's
        # earlier batches into `out`), then what this batch adds.
        owed = self._pending_output() + _size(out, 0)
        it = iter(commands)
        for argv in it:
            mark = len(out)
            if hard:
                session.output_room = max(hard - owed, 1)
            try:
                reply = execute(session, argv)
            except ProtocolViolation as exc:
                out.append(encode_error("ERR " + str(exc)))
                session.closing = True
                return
            except OutputLimitReached:
                session.output_room = 0
                self._drop_for_output(hard + 1)
                return
            if hard:
                session.output_room = 0
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
                    owed += _size(out, mark)
                    if owed > check_at and self._output_stops(owed, it):
                        return
                    continue
            if session.proto != proto:
                proto = session.proto  # HELLO switched the protocol mid-batch
            encode(reply, proto, out)
            if session.closing:
                return
            owed += _size(out, mark)
            if owed > check_at and self._output_stops(owed, it):
                return

    def _pending_output(self) -> int:
        transport = self.transport
        self._buffered = transport.get_write_buffer_size() if transport is not None else 0
        return self._buffered + self._unsent_size

    def _output_stops(self, pending: int, rest: Any) -> bool:
        """`pending` bytes of output wait for this client after a command: closes it over
        its limits, or stops its batch (the rest waits in `pending`) while the output
        drains. Returns whether the batch stops."""
        if self._over_limits(pending):
            self._drop_for_output(pending)
            return True
        if pending > _FLOW_HIGH:
            self._backed_up = True
            self.pending.extend(rest)
            return True
        return False

    def _over_limits(self, size: int) -> bool:
        """Whether `size` pending bytes break the client's class limits (Redis's
        checkClientOutputBufferLimits: over the hard limit, or over the soft one for
        longer than its seconds)."""
        hard, soft, seconds = self.server.config.output_limits.get(self.output_class, (0, 0, 0))
        if hard and size > hard:
            return True
        if soft and size > soft:
            now = time.monotonic()
            if not self._soft_since:
                self._soft_since = now
            elif now - self._soft_since > seconds:
                return True
        else:
            self._soft_since = 0.0
        return False

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
        if not self._backed_up:
            self._continue(out)
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
        self._unsent_size += len(data)
        size = self._buffered + self._unsent_size
        if size > _PUSH_CHECK:
            # Pushes (Pub/Sub, MONITOR) to a client that does not read pile up here within
            # one loop turn: checked as they come, not only once written.
            hard, soft, _ = self.server.config.output_limits.get(self.output_class, (0, 0, 0))
            if size > min(_FLOW_HIGH, hard or _NO_LIMIT, soft or _NO_LIMIT):
                size = self._pending_output()
                if self._over_limits(size):
                    self._drop_for_output(size)

    def write_unsent(self) -> None:
        """Writes the queued output with one `transport.write` (the server calls it at the end
        of the loop turn; closing calls it first)."""
        unsent = self.unsent
        if unsent is None:
            return
        self.unsent = None
        self._unsent_size = 0
        transport = self.transport
        if transport is None or self._closed:
            return
        transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))
        del unsent
        self._check_output_limits()
        if self._backed_up and not self._writing_paused and not self._resume_scheduled and not self._closed:
            # The batch stopped for its output, which the socket took: go on after the other
            # clients had their turn.
            self._resume_scheduled = True
            asyncio.get_running_loop().call_soon(self._resume)

    def buffered_bytes(self) -> int:
        """What the client's buffers hold: output not taken by the socket yet, input not
        parsed or not run yet (INFO's mem_clients_normal, the maxmemory check)."""
        transport = self.transport
        if transport is not None and not self._closed:
            self._buffered = transport.get_write_buffer_size()
        return self._buffered + self._unsent_size + self._held_size + self.parser.buffered()

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
        size = self._buffered = transport.get_write_buffer_size()
        if self.session is not None:
            self.session.output_size = size
        if self._over_limits(size):
            self._drop_for_output(size)

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
        self._unsent_size = 0
        self._held_input.clear()
        self._held_size = 0
        self.pending.clear()
        if self.transport is not None:
            self._closed = True
            self.transport.abort()


def _size(out: list[bytes], mark: int) -> int:
    """Bytes appended to `out` from index `mark` on."""
    n = 0
    for i in range(mark, len(out)):
        n += len(out[i])
    return n


def _addr(info: Any) -> str:
    if isinstance(info, tuple) and len(info) >= 2:
        return f"{info[0]}:{info[1]}"
    return str(info) if info else ""
