"""The node's server shell: the listening socket, the clients, command dispatch, blocking and
WATCH, and the write path that turns a command's effects into log units and wakes whoever
waits on the keys they touch. It implements the `Watches` and `Clients` protocols command
handlers use; node/app/ builds it with the rest of the node and runs its lifecycle.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from node.commands.context import Node, Session
from node.commands.table import lookup
from node.config import Config
from node.engine.keyspace import Keyspace
from node.log.effect_log import EffectLog
from node.server.blocking import BlockingManager
from node.server.connection import ClientConnection
from node.server.dispatch import Dispatcher
from node.server.pause import ALL, CLIENT, WRITE, ClientPause
from node.server.reply_gate import ReplyGate
from node.server.resp import encode_error

log = logging.getLogger("rill.server")


class Server:
    """The clients and command execution of one node. `execute()` runs one command."""

    def __init__(self, config: Config, keyspace: Keyspace, effects: EffectLog, clock: Callable[[], int]) -> None:
        self.config = config
        # Milliseconds since the epoch; tests drive the server with a fake clock.
        self.clock = clock
        self.keyspace = keyspace
        self.role = "master"
        self.effects = effects
        # The node as commands see it (node/app/ sets it before any session exists).
        self.node: Node | None = None
        self.dispatcher = Dispatcher(self.effects)
        self.blocking = BlockingManager(self.effects.unit)
        # CLIENT PAUSE and FAILOVER's pause: the dispatcher postpones what they pause.
        self.pause = ClientPause(self.dispatcher.set_pause_level)
        # Replies waiting for the AOF to have their effects (the persistence releases them).
        self.reply_gate = ReplyGate()
        self.clients: dict[int, ClientConnection] = {}
        self.monitors: list[ClientConnection] = []
        self._output_pending: list[ClientConnection] = []
        self._next_client_id = 1
        self._watchers: dict[tuple[int, bytes], set[Session]] = {}
        self._server: asyncio.AbstractServer | None = None
        self.start_time = time.time()
        self.port = 0
        self.stats_connections = 0
        self.stats_rejected_connections = 0
        self.stats_net_input = 0
        self.stats_net_output = 0
        self.stats_output_limit_disconnections = 0
        self.stats_query_limit_disconnections = 0
        self.stats_keyspace_hits = 0
        self.stats_keyspace_misses = 0
        self.dirty = 0  # writes since the last save (Redis's server.dirty)
        self.run_id = secrets.token_hex(20)
        config.on_change(self._on_config_change)

    # -- the write path, as commands reach it through their Node ----------------------------

    def now_ms(self) -> int:
        return self.clock()

    def propagate(self, db_index: int, argv: Sequence[bytes]) -> None:
        self.dirty += 1
        self.effects.append(db_index, argv)
        if not self._watchers and not self.blocking.has_waiters():
            return  # nobody to tell that these keys changed
        # Subcommand effects (XGROUP DESTROY key ...) name their keys in the subcommand's spec.
        spec = lookup(argv)
        if spec is not None and spec.first_key > 0:
            for key in spec.keys(argv):
                self.touch(db_index, key)

    def appended_from_log(self, db_index: int, key: bytes, count: int) -> None:
        """What propagate() does for `count` XADDs to `key` that a replica appended from its
        primary's log in one run (the log muted: it records the primary's bytes)."""
        self.dirty += count
        if self._watchers or self.blocking.has_waiters():
            self.touch(db_index, key)

    def propagate_many(self, db_index: int, effects: list[list[bytes]]) -> None:
        """propagate() each of `effects`, in order (one call through the Node protocol for
        a command's many effects: an XREADGROUP of 10 entries logs 11)."""
        for argv in effects:
            self.propagate(db_index, argv)

    def output_pending(self, conn: ClientConnection) -> None:
        """`conn` queued output: it is written once every request that arrived with it ran,
        by a callback the loop runs before it waits for I/O again, as Redis writes replies in
        beforeSleep."""
        if not self._output_pending:
            asyncio.get_running_loop().call_soon(self._write_pending_output)
        self._output_pending.append(conn)

    def _write_pending_output(self) -> None:
        pending = self._output_pending
        self._output_pending = []
        for conn in pending:
            conn.write_unsent()

    # -- Watches ---------------------------------------------------------------------------

    def touch(self, db_index: int, key: bytes) -> None:
        """A key changed: invalidate WATCHes and wake clients blocked on it."""
        ref = (db_index, key)
        watchers = self._watchers.get(ref)
        if watchers:
            for session in watchers:
                session.watch_dirty = True
        self.blocking.signal(ref)

    def touch_all(self, db_index: int | None) -> None:
        """Database db_index (every one for None) is about to be emptied: call before
        clearing. As Redis's touchAllWatchedKeysInDb, only WATCHes of keys that exist now
        are invalidated (a flush does not change a missing key); blocked clients wake."""
        dbs = self.keyspace.dbs
        for (db, key), watchers in self._watchers.items():
            if (db_index is None or db == db_index) and key in dbs[db]:
                for session in watchers:
                    session.watch_dirty = True
        self.blocking.signal_db(db_index)

    def watch(self, session: Session, key: bytes) -> None:
        ref = (session.db_index, key)
        session.watched.add(ref)
        self._watchers.setdefault(ref, set()).add(session)

    def unwatch_all(self, session: Session) -> None:
        for ref in session.watched:
            watchers = self._watchers.get(ref)
            if watchers is not None:
                watchers.discard(session)
                if not watchers:
                    del self._watchers[ref]
        session.watched.clear()
        session.watch_dirty = False

    def swapdb(self, a: int, b: int) -> None:
        dbs = self.keyspace.dbs
        # touchAllWatchedKeysInDb(a, b) and (b, a): a watched key changes when either
        # database holds it before the swap.
        for (db, key), watchers in self._watchers.items():
            if db in (a, b) and (key in dbs[a] or key in dbs[b]):
                for session in watchers:
                    session.watch_dirty = True
        self.keyspace.swap(a, b)
        for conn in self.clients.values():
            s = conn.session
            if s is not None and s.db_index in (a, b):
                s.db = self.keyspace.dbs[s.db_index]
        self.blocking.signal_db(a)
        self.blocking.signal_db(b)

    # -- Clients ---------------------------------------------------------------------------

    def sessions(self) -> Iterable[Session]:
        return [c.session for c in self.clients.values() if c.session is not None]

    def connection_of(self, session: Session) -> ClientConnection | None:
        return self.clients.get(session.id)

    def close_session(self, session: Session) -> None:
        conn = self.clients.get(session.id)
        if conn is not None:
            conn.close()

    # -- statistics ------------------------------------------------------------------------

    def reset_stats(self) -> None:
        self.dispatcher.reset_stats()
        self.stats_connections = 0
        self.stats_rejected_connections = 0
        self.stats_net_input = 0
        self.stats_net_output = 0
        self.stats_output_limit_disconnections = 0
        self.stats_query_limit_disconnections = 0
        self.stats_keyspace_hits = 0
        self.stats_keyspace_misses = 0
        self.dispatcher.total_commands = 0

    def command_stats(self) -> dict[str, Any]:
        return self.dispatcher.stats

    def pause_clients(self, timeout_ms: int, write_only: bool) -> None:
        """CLIENT PAUSE timeout [WRITE|ALL]."""
        self.pause.pause(CLIENT, time.monotonic() + timeout_ms / 1000, WRITE if write_only else ALL)

    def unpause_clients(self) -> None:
        """CLIENT UNPAUSE (a FAILOVER's pause stays)."""
        self.pause.unpause(CLIENT)

    def add_monitor(self, session: Session) -> None:
        conn = self.clients.get(session.id)
        if conn is not None and conn not in self.monitors:
            session.flags.add("monitor")
            conn.output_class = "pubsub"
            self.monitors.append(conn)

    def remove_monitor(self, session: Session) -> None:
        """RESET ends MONITOR mode."""
        session.flags.discard("monitor")
        conn = self.clients.get(session.id)
        if conn is not None and conn in self.monitors:
            self.monitors.remove(conn)
            conn.output_class = "normal"

    # -- executing commands --------------------------------------------------------------

    def execute(self, session: Session, argv: list[bytes]) -> Any:
        # The dispatcher makes each write's effects one unit of the effect log.
        written = session.effects_in_command
        # The replication link's session ("master") applies its primary's writes on a replica
        # as the primary ran them (which also lets them take the dispatcher's fast path).
        from_master = "master" in session.flags
        role = "master" if from_master else self.role
        if not self.monitors:
            reply = self.dispatcher.execute(session, argv, role, from_master)
        else:
            # Redis feeds MONITOR after a command ran (so SELECT shows its new database) and
            # not at all when it was refused or queued.
            self.dispatcher.executed = None
            reply = self.dispatcher.execute(session, argv, role, from_master)
            spec = self.dispatcher.last_executed()
            if spec is not None and not spec.flags & _HIDDEN_FROM_MONITOR:
                self._feed_monitors(session, argv)
        if session.effects_in_command != written:
            # WAIT and WAITAOF wait for the offset just after the client's last write (c->woff).
            session.woff = self.effects.offset
        return reply

    def monitored(self) -> bool:
        """Whether MONITOR clients watch: every command must then go through the dispatcher."""
        return bool(self.monitors)

    def after_batch(self) -> None:
        """Serve clients woken by the batch before going back to the event loop."""
        self.blocking.serve_ready()

    def _feed_monitors(self, session: Session, argv: list[bytes]) -> None:
        """One MONITOR line (replicationFeedMonitors): `+<sec>.<usec> [<db> <addr>] "arg" ...`
        with credentials redacted, to every monitor (the sender too, as Redis does)."""
        now_us = time.time_ns() // 1000
        args = " ".join('"%s"' % _monitor_escape(a) for a in _redacted(argv))
        line = "+%d.%06d [%d %s] %s\r\n" % (now_us // 1_000_000, now_us % 1_000_000, session.db_index, session.addr, args)
        data = line.encode()
        for conn in list(self.monitors):
            conn.deliver(data)

    # -- clients ---------------------------------------------------------------------------

    def register(self, conn: ClientConnection, addr: str, laddr: str, fd: int) -> Session | None:
        self.stats_connections += 1
        if len(self.clients) >= self.config.get_int("maxclients"):
            self.stats_rejected_connections += 1
            assert conn.transport is not None
            conn.transport.write(encode_error("ERR max number of clients reached"))
            conn.transport.close()
            return None
        client_id = self._next_client_id
        self._next_client_id += 1
        assert self.node is not None
        session = Session(self.node, client_id, addr, laddr, fd)
        self.clients[client_id] = conn
        return session

    def unregister(self, session: Session) -> None:
        conn = self.clients.pop(session.id, None)
        if conn is not None and conn in self.monitors:
            self.monitors.remove(conn)
        self.unwatch_all(session)

    def unblock_session(self, session: Session, reply: Any) -> bool:
        conn = self.clients.get(session.id)
        if conn is None or conn.waiter is None:
            return False
        self.blocking.unblock(conn.waiter, reply)
        return True

    # -- listening ---------------------------------------------------------------------------

    async def listen(self) -> None:
        """Accepts clients on the configured addresses (`port` is then the bound port)."""
        loop = asyncio.get_running_loop()
        binds = self.config.get("bind").split() or ["127.0.0.1"]
        self._server = await loop.create_server(
            lambda: ClientConnection(self),
            host=binds,
            port=self.config.get_int("port"),
            backlog=self.config.get_int("tcp-backlog"),
            reuse_address=True,
        )
        # uvloop returns a list where typeshed says tuple, and compiled code checks declared
        # types: read it untyped.
        sock = getattr(self._server, "sockets")[0]  # noqa: B009
        self.port = sock.getsockname()[1]

    def stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()

    async def close_clients(self, deadline: float) -> tuple[int, int]:
        """Closes every client once the replies already produced are written (blocked clients
        get none, as on a Redis shutdown), waiting until `deadline` (time.monotonic) at most
        for clients that do not read (their unsent output is dropped then). Returns (clients,
        dropped)."""
        clients = len(self.clients)
        for conn in list(self.clients.values()):
            conn.close()
        # transport.close() flushes asynchronously: wait for it.
        while self.clients and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        dropped = len(self.clients)
        for conn in list(self.clients.values()):
            conn.abort()
        if self._server is not None:
            await self._server.wait_closed()
        return clients, dropped

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "proto-max-bulk-len":
            # New connections read the limit when created; live ones are updated here.
            for conn in self.clients.values():
                conn.parser.max_bulk = self.config.proto_max_bulk_len
        elif name == "requirepass" and not value:
            # With no password the default user needs no AUTH: clients that connected while
            # one was required are let in (Redis checks the user's nopass flag per command).
            for conn in self.clients.values():
                if conn.session is not None:
                    conn.session.authenticated = True
                conn.parser.authenticated = True


# Redis does not show admin commands (CONFIG, DEBUG, MONITOR, ...) to monitors.
_HIDDEN_FROM_MONITOR: Final = frozenset({"admin", "skip_monitor"})

def _redacted(argv: list[bytes]) -> list[bytes]:
    """The arguments MONITOR may show: AUTH's, and HELLO's AUTH user and password, are
    replaced by "(redacted)" (redactClientCommandArgument)."""
    name = argv[0].lower()
    if name == b"auth":
        return [argv[0]] + [b"(redacted)"] * (len(argv) - 1)
    if name == b"hello":
        shown = list(argv)
        for i in range(2, len(argv) - 2):
            if argv[i].lower() == b"auth":
                shown[i + 1] = shown[i + 2] = b"(redacted)"
                break
        return shown
    return argv


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the node's clock (compiled here: XADD * reads it)."""
    return time.time_ns() // 1_000_000


def _monitor_escape(arg: bytes) -> str:
    out = []
    for b in arg:
        if b == 0x5C:
            out.append("\\\\")
        elif b == 0x22:
            out.append('\\"')
        elif b == 10:
            out.append("\\n")
        elif b == 13:
            out.append("\\r")
        elif b == 9:
            out.append("\\t")
        elif b == 7:
            out.append("\\a")
        elif b == 8:
            out.append("\\b")
        elif 32 <= b < 127:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)

