"""The node's server shell: owns the event loop's listening socket, the clients, the
keyspace, the effect log and the blocking manager; implements the `Node` services that
command handlers use; starts up, and shuts down gracefully on SIGTERM/SIGINT or SHUTDOWN.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from typing import Any, Iterable

from node import REDIS_VERSION, __version__
from node.commands import load_all
from node.commands.context import Session
from node.commands.table import TABLE
from node.config import Config
from node.engine.keyspace import Keyspace
from node.server.blocking import BlockingManager
from node.server.connection import ClientConnection
from node.server.dispatch import Dispatcher
from node.server.effects import EffectLog
from node.server.resp import encode_error

log = logging.getLogger("rill.server")


class Server:
    """One Rill node. `serve()` runs until shutdown; `execute()` runs one command."""

    def __init__(self, config: Config) -> None:
        load_all()
        self.config = config
        self.keyspace = Keyspace(config.databases)
        self.role = "master"
        self.dispatcher = Dispatcher()
        self.blocking = BlockingManager()
        self.effects = EffectLog()
        self.effects.add_listener(self._feed_monitors_of_effects)
        self.clients: dict[int, ClientConnection] = {}
        self.monitors: list[ClientConnection] = []
        self._next_client_id = 1
        self._watchers: dict[tuple[int, bytes], set[Session]] = {}
        self._shutdown: asyncio.Event | None = None
        self._server: asyncio.AbstractServer | None = None
        self.start_time = time.time()
        self.port = 0
        self.stats_connections = 0
        self.stats_rejected_connections = 0
        self.stats_net_input = 0
        self.stats_net_output = 0
        self.stats_output_limit_disconnections = 0
        self.stats_keyspace_hits = 0
        self.stats_keyspace_misses = 0
        self.dirty = 0  # writes since the last save (Redis's server.dirty)
        self.lastsave = int(time.time())

    # -- Node services used by command handlers -----------------------------------------

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def propagate(self, db_index: int, argv: list[bytes]) -> None:
        self.dirty += 1
        self.effects.append(db_index, argv)
        spec = TABLE.get(argv[0].lower())
        if spec is not None and spec.first_key > 0:
            for key in spec.keys(argv):
                self.touch(db_index, key)

    def touch(self, db_index: int, key: bytes) -> None:
        """A key changed: invalidate WATCHes and wake clients blocked on it."""
        ref = (db_index, key)
        watchers = self._watchers.get(ref)
        if watchers:
            for session in watchers:
                session.watch_dirty = True
        self.blocking.signal(ref)

    def touch_all(self, db_index: int | None) -> None:
        for (db, _key), watchers in self._watchers.items():
            if db_index is None or db == db_index:
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
        self.keyspace.swap(a, b)
        for conn in self.clients.values():
            s = conn.session
            if s is not None and s.db_index in (a, b):
                s.db = self.keyspace.dbs[s.db_index]
        # Watched keys in either database may now hold other values (Redis touches both).
        self.touch_all(a)
        self.touch_all(b)

    def sessions(self) -> Iterable[Session]:
        return [c.session for c in self.clients.values() if c.session is not None]

    def connection_of(self, session: Session) -> ClientConnection | None:
        return self.clients.get(session.id)

    def close_session(self, session: Session) -> None:
        conn = self.clients.get(session.id)
        if conn is not None:
            conn.close()

    def info(self, sections: list[str]) -> str:
        from node.server.info import render_info

        return render_info(self, sections)

    def reset_stats(self) -> None:
        self.dispatcher.reset_stats()
        self.stats_connections = 0
        self.stats_rejected_connections = 0
        self.stats_net_input = 0
        self.stats_net_output = 0
        self.stats_output_limit_disconnections = 0
        self.stats_keyspace_hits = 0
        self.stats_keyspace_misses = 0

    def command_stats(self) -> dict[str, Any]:
        return self.dispatcher.stats

    def request_shutdown(self, session: Session | None) -> None:
        log.warning("User requested shutdown...")
        if self._shutdown is not None:
            self._shutdown.set()

    def add_monitor(self, session: Session) -> None:
        conn = self.clients.get(session.id)
        if conn is not None and conn not in self.monitors:
            session.flags.add("monitor")
            conn.output_class = "pubsub"
            self.monitors.append(conn)

    def sleep(self, seconds: float) -> None:
        # DEBUG SLEEP blocks the whole server, as in Redis.
        time.sleep(seconds)

    # -- executing commands --------------------------------------------------------------

    def execute(self, session: Session, argv: list[bytes]) -> Any:
        if self.monitors:
            self._feed_monitors(session, argv)
        self.effects.begin()
        try:
            return self.dispatcher.execute(session, argv, self.role)
        finally:
            self.effects.end()

    def after_batch(self) -> None:
        """Serve clients woken by the batch before going back to the event loop."""
        self.blocking.serve_ready()

    def _feed_monitors(self, session: Session, argv: list[bytes]) -> None:
        name = argv[0].lower()
        if name in (b"auth", b"hello", b"monitor"):
            return  # Redis hides credentials and does not show MONITOR itself
        now = time.time()
        args = " ".join('"%s"' % _monitor_escape(a) for a in argv)
        line = "+%.6f [%d %s] %s\r\n" % (now, session.db_index, session.addr, args)
        data = line.encode()
        for conn in list(self.monitors):
            if conn.session is not session:
                conn.deliver(data)

    def _feed_monitors_of_effects(self, data: bytes, offset: int) -> None:
        pass  # replication and AOF attach here; MONITOR shows client commands instead

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
        session = Session(self, client_id, addr, laddr, fd)
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

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._shutdown = asyncio.Event()
        binds = self.config.get("bind").split() or ["127.0.0.1"]
        port = self.config.get_int("port")
        self._server = await loop.create_server(
            lambda: ClientConnection(self),
            host=binds,
            port=port,
            backlog=self.config.get_int("tcp-backlog"),
            reuse_address=True,
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError):
                pass
        # Long-lived data (command table, config) is frozen out of the GC's view, and the
        # young-generation threshold raised: per-command garbage is acyclic, so frequent
        # collections would only cost time on the hot path.
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 50, 100)
        log.info(
            "Rill %s (Redis %s compatible) ready: pid=%d port=%d",
            __version__, REDIS_VERSION, os.getpid(), self.port,
        )

    def _on_signal(self, sig: int) -> None:
        log.warning("Received %s, scheduling shutdown...", signal.Signals(sig).name)
        if self._shutdown is not None:
            self._shutdown.set()

    async def serve(self) -> None:
        await self.start()
        assert self._shutdown is not None
        await self._shutdown.wait()
        await self.stop()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # Clients get what was already written; blocked clients are simply closed, as on a
        # Redis shutdown.
        for conn in list(self.clients.values()):
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
        log.warning("Rill is now ready to exit, bye bye...")


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
        elif 32 <= b < 127:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)

