"""The server core: a RESP server without data. It listens, keeps the clients and their
connections, runs each command through a dispatcher built on its own command table, parks
blocked clients, feeds MONITOR, holds Pub/Sub, counts statistics and renders INFO from
sections. A node's `Server` (node/server/server.py) adds the data and the write path; a
sentinel uses it as it is, with its own table and INFO section:

    table = sentinel_commands()  # node.server.sentinel_mode: what a sentinel shares with a node
    add_command(table, CommandSpec("sentinel", -2, frozenset({"admin"}), 0, 0, 0, shell.sentinel_command))
    core = ServerCore(config, table, clock, mode="sentinel", on_shutdown=shell.on_shutdown)  # (session, flags)
    core.info_sections.add("sentinel", "Sentinel", shell.info_fields)
    await core.listen()
    core.pubsub.publish(b"+sdown", b"master mymaster 127.0.0.1 6379")  # events to subscribers
    ...
    core.stop_listening(); await core.close_clients(deadline)

The core is the `Core` command handlers see (`ClientSession.core`) and implements the `Clients`
and `Admin` protocols. What it reads of its owner it is given when built: how a client's
session is made (`new_session=`: a node's clients are `Session`s of its `RillNode`), the role
(read-only, `role=`), the write gates (`gates=`), the replication's sync counters
(`sync_stats=`), what SHUTDOWN calls (`on_shutdown=`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from node.commands.acl_users import AclClient, AclUsers
from node.commands.context import ClientSession
from node.commands.table import CommandTable
from node.config import Config
from node.log.effect_log import EffectLog
from node.server.blocking import BlockingManager
from node.server.connection import ClientConnection
from node.server.dispatch import Dispatcher
from node.server.info import Fields, InfoSections, InstantaneousMetrics, add_core_sections
from node.server.pause import ALL, CLIENT, WRITE, ClientPause
from node.server.pubsub import PubSubRegistry
from node.server.reply_gate import ReplyGate
from node.server.resp import encode_error
from node.server.role_view import RoleView
from node.server.tls import TLS_DIRECTIVES, TlsConfigError, TlsContexts
from node.server.write_gates import WriteGates

log = logging.getLogger("rill.server")

# Makes the session of a new client: (client id, addr, laddr, fd) -> its session.
SessionFactory = Callable[[int, str, str, int], ClientSession]


def _no_syncs() -> Fields:
    return [("sync_full", 0), ("sync_partial_ok", 0), ("sync_partial_err", 0)]


class ServerCore:
    """Clients and command execution of one server. `execute()` runs one command."""

    def __init__(
        self, config: Config, commands: CommandTable, clock: Callable[[], int], mode: str = "standalone",
        effects: EffectLog | None = None, *, role: RoleView | None = None, gates: WriteGates | None = None,
        new_session: SessionFactory | None = None, sync_stats: Callable[[], Fields] | None = None,
        on_shutdown: Callable[[ClientSession | None, frozenset[str]], None] | None = None,
    ) -> None:
        self.config = config
        # Milliseconds since the epoch; tests drive the server with a fake clock.
        self.clock = clock
        self.commands = commands
        # The ACL users of this server: the `user` lines of the configuration (or its aclfile)
        # are loaded now, so a bad one stops the start-up (ConfigError, as Redis exits).
        self.acl = AclUsers(commands, config, self.sessions, self._close_client)
        self.acl.load_config(config)
        self.mode = mode
        # A node's replication role ("master" or "slave"), read-only here: its replication side
        # changes it (node/server/role_view.py). A sentinel's is "sentinel".
        self._role = role if role is not None else RoleView("sentinel" if mode == "sentinel" else "master")
        # The rules that refuse writes, each set by its owner (node/server/write_gates.py).
        self.gates = gates if gates is not None else WriteGates()
        # The log whose units the dispatcher delimits (a write's effects form one unit). A
        # server without data gets one of its own: its commands log nothing, so it stays empty.
        self.effects = effects if effects is not None else EffectLog()
        # Makes a client's session (id, addr, laddr, fd): a node's sessions reach its data.
        self._new_session: SessionFactory = new_session if new_session is not None else self._plain_session
        self.dispatcher = Dispatcher(commands, self.effects, self.gates)
        self.blocking = BlockingManager(self.effects.unit)
        # CLIENT PAUSE and FAILOVER's pause: the dispatcher postpones what they pause.
        self.pause = ClientPause(self.dispatcher.set_pause_level)
        # Replies waiting for the AOF to have their effects (the persistence releases them).
        self.reply_gate: ReplyGate = ReplyGate()
        self.pubsub = PubSubRegistry(self._pubsub_mode_changed)
        self.connections: dict[int, ClientConnection] = {}  # by client id
        self.monitors: list[ClientConnection] = []
        self.info_sections = InfoSections()
        add_core_sections(self.info_sections, self)
        self.metrics = InstantaneousMetrics()
        # INFO stats' sync_full/sync_partial_ok/sync_partial_err (a node's: its replication's).
        self.sync_stats: Callable[[], Fields] = sync_stats if sync_stats is not None else _no_syncs
        # Called by SHUTDOWN (and request_shutdown) with the flags: the owner stops the server.
        self._on_shutdown = on_shutdown
        self._output_pending: list[ClientConnection] = []
        self._next_client_id = 1
        self._server: asyncio.AbstractServer | None = None
        self._tls_server: asyncio.AbstractServer | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        # Client TLS (node/server/tls.py): rebuilt when CONFIG SET changes a tls-* directive.
        self.tls = TlsContexts(config)
        config.on_apply(TLS_DIRECTIVES, self.tls.apply)
        self.start_time = time.time()
        self.port = 0
        self.tls_port = 0
        self.stats_connections = 0
        self.stats_rejected_connections = 0
        self.stats_net_input = 0
        self.stats_net_output = 0
        self.stats_output_limit_disconnections = 0
        self.stats_query_limit_disconnections = 0
        self.stats_keyspace_hits = 0
        self.stats_keyspace_misses = 0
        self.run_id = secrets.token_hex(20)
        config.on_change(self._on_config_change)

    @property
    def role(self) -> str:
        """"master" or "slave" (a node), "sentinel"."""
        return self._role.name

    def now_ms(self) -> int:
        return self.clock()

    def lease_refusal(self) -> str | None:
        """Fenced mode: the error a primary without its lease answers what would add to its
        log on its own (PUBLISH; it deletes no expired key either); None while it may, and
        always outside fenced mode (the lease gate is set by the node's replication side)."""
        check = self.gates.lease
        return None if check is None or self._role.name != "master" else check()

    def propagate_to_replicas(self, argv: Sequence[bytes]) -> None:
        """A replication-only effect (PUBLISH) into the log; the effect log drops it unless it
        is replicated (a node's backlog records it), so a server without data drops it."""
        self.effects.append_for_replicas(argv)

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

    # -- Clients ---------------------------------------------------------------------------

    def sessions(self) -> Iterable[ClientSession]:
        return [c.session for c in self.connections.values() if c.session is not None]

    def pause_clients(self, timeout_ms: int, write_only: bool) -> None:
        """CLIENT PAUSE timeout [WRITE|ALL]."""
        self.pause.pause(CLIENT, time.monotonic() + timeout_ms / 1000, WRITE if write_only else ALL)

    def unpause_clients(self) -> None:
        """CLIENT UNPAUSE (a FAILOVER's pause stays)."""
        self.pause.unpause(CLIENT)

    def connection_of(self, session: ClientSession) -> ClientConnection | None:
        return self.connections.get(session.id)

    def close_session(self, session: ClientSession) -> None:
        conn = self.connections.get(session.id)
        if conn is not None:
            conn.close()

    def _close_client(self, client: AclClient) -> None:
        conn = self.connections.get(client.id)
        if conn is not None:
            conn.close()

    def add_monitor(self, session: ClientSession) -> None:
        conn = self.connections.get(session.id)
        if conn is not None and conn not in self.monitors:
            session.flags.add("monitor")
            self.monitors.append(conn)
            _refresh_output_class(conn, session)

    def remove_monitor(self, session: ClientSession) -> None:
        """RESET ends MONITOR mode."""
        session.flags.discard("monitor")
        conn = self.connections.get(session.id)
        if conn is not None and conn in self.monitors:
            self.monitors.remove(conn)
            _refresh_output_class(conn, session)

    def unblock_session(self, session: ClientSession, reply: Any) -> bool:
        conn = self.connections.get(session.id)
        if conn is None or conn.waiter is None:
            return False
        self.blocking.unblock(conn.waiter, reply)
        return True

    def _pubsub_mode_changed(self, session: ClientSession) -> None:
        conn = self.connections.get(session.id)
        if conn is not None:
            _refresh_output_class(conn, session)

    # -- Admin -------------------------------------------------------------------------------

    def info(self, sections: list[str]) -> str:
        return self.info_sections.render(sections)

    def memory_stats(self) -> dict[bytes, Any]:
        return {}

    def command_stats(self) -> dict[str, Any]:
        return self.dispatcher.stats

    def expiry_stats(self) -> Fields:
        """INFO stats' key expiry fields (a server without keys has expired none)."""
        return [("expired_keys", 0), ("expired_stale_perc", "0.00"), ("expired_time_cap_reached_count", 0),
                ("expire_cycle_cpu_milliseconds", 0)]

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
        self.acl.reset_stats()

    def request_shutdown(self, session: ClientSession | None, flags: frozenset[str] = frozenset()) -> None:
        if self._on_shutdown is not None:
            self._on_shutdown(session, flags)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)  # blocks the whole server, as DEBUG SLEEP does in Redis

    @property
    def admin(self) -> ServerCore:
        return self

    @property
    def clients(self) -> ServerCore:
        return self

    # -- executing commands --------------------------------------------------------------

    def execute(self, session: ClientSession, argv: list[bytes]) -> Any:
        # The dispatcher makes each write's effects one unit of the effect log.
        written = session.effects_in_command
        # The replication link's session ("master") applies its primary's writes on a replica
        # as the primary ran them (which also lets them take the dispatcher's fast path).
        from_master = "master" in session.flags
        role = "master" if from_master else self._role.name
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

    def _feed_monitors(self, session: ClientSession, argv: list[bytes]) -> None:
        """One MONITOR line (replicationFeedMonitors): `+<sec>.<usec> [<db> <addr>] "arg" ...`
        with credentials redacted, to every monitor (the sender too, as Redis does)."""
        now_us = time.time_ns() // 1000
        args = " ".join('"%s"' % _monitor_escape(a) for a in _redacted(argv))
        line = "+%d.%06d [%d %s] %s\r\n" % (now_us // 1_000_000, now_us % 1_000_000, session.db_index, session.addr, args)
        data = line.encode()
        for conn in list(self.monitors):
            conn.deliver(data)

    # -- clients ---------------------------------------------------------------------------

    def register(self, conn: ClientConnection, addr: str, laddr: str, fd: int, tls: bool = False) -> ClientSession | None:
        self.stats_connections += 1
        if len(self.connections) >= self.config.get_int("maxclients"):
            self.stats_rejected_connections += 1
            assert conn.transport is not None
            if not tls:  # a TLS client cannot read a reply before its handshake
                conn.transport.write(encode_error("ERR max number of clients reached"))
            conn.transport.close()
            return None
        client_id = self._next_client_id
        self._next_client_id += 1
        session = self._new_session(client_id, addr, laddr, fd)
        # createClient: the default user, authenticated when it needs no password.
        session.user = self.acl.default
        session.authenticated = not self.acl.auth_required()
        self.connections[client_id] = conn
        return session

    def _plain_session(self, client_id: int, addr: str, laddr: str, fd: int) -> ClientSession:
        return ClientSession(self, client_id, addr, laddr, fd)

    def unregister(self, session: ClientSession) -> None:
        conn = self.connections.pop(session.id, None)
        if conn is not None and conn in self.monitors:
            self.monitors.remove(conn)
        self.pubsub.unsubscribe_all(session)
        session.discard_transaction()  # freeClient: its MULTI state and WATCHed keys go

    # -- listening ---------------------------------------------------------------------------

    async def listen(self) -> None:
        """Accepts clients on the configured addresses: plain TCP on `port` and TLS on
        `tls-port` (either may be 0, not both); `port` and `tls_port` are then the bound ports.
        A TLS configuration that does not load stops the start-up (OSError with the reason)."""
        loop = asyncio.get_running_loop()
        config = self.config
        binds = config.get("bind").split() or ["127.0.0.1"]
        port, tls_port = config.get_int("port"), config.get_int("tls-port")
        if not port and not tls_port:
            raise OSError("Configured to not listen anywhere, exiting.")
        if self.tls.wanted:
            try:
                self.tls.configure()
            except TlsConfigError as exc:
                raise OSError(f"Failed to configure TLS: {exc}") from None
        if port:
            self._server = await loop.create_server(
                lambda: ClientConnection(self),
                host=binds, port=port, backlog=config.get_int("tcp-backlog"), reuse_address=True,
            )
            self.port = _bound_port(self._server)
        if tls_port:
            try:
                self._tls_server = await loop.create_server(
                    self._tls_connection,
                    host=binds, port=tls_port, backlog=config.get_int("tcp-backlog"), reuse_address=True,
                )
            except OSError:
                if self._server is not None:
                    self._server.close()
                raise
            self.tls_port = _bound_port(self._tls_server)
        self.metrics.start(loop, self._metric_counters)
        self._idle_timer = loop.call_later(1.0, self._close_idle_clients)

    def _close_idle_clients(self) -> None:
        """clientsCronHandleTimeout, once a second: with `timeout` set, a client idle longer
        (a TLS one whose handshake never completed included) is closed, unless it is blocked,
        subscribed or a monitor."""
        self._idle_timer = asyncio.get_running_loop().call_later(1.0, self._close_idle_clients)
        limit = self.config.get_int("timeout")
        if not limit:
            return
        now = self.now_ms()
        for conn in list(self.connections.values()):
            session = conn.session
            if (
                session is None or session.subscriptions is not None or "monitor" in session.flags
                or "blocked" in session.flags or now - session.last_interaction_ms <= limit * 1000
            ):
                continue
            log.debug("Closing idle client id=%d addr=%s", session.id, session.addr)
            conn.close()

    def _tls_connection(self) -> ClientConnection:
        # The context current when the client connects: a reload (CONFIG SET) serves the
        # clients that connect after it.
        return ClientConnection(self, self.tls.server)

    def _metric_counters(self) -> dict[str, int]:
        return {
            "commands": self.dispatcher.total_commands,
            "net_input": self.stats_net_input,
            "net_output": self.stats_net_output,
        }

    def stop_listening(self) -> None:
        self.metrics.stop()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        for server in (self._server, self._tls_server):
            if server is not None:
                server.close()

    async def close_clients(self, deadline: float) -> tuple[int, int]:
        """Closes every client once the replies already produced are written (blocked clients
        get none, as on a Redis shutdown), waiting until `deadline` (time.monotonic) at most
        for clients that do not read (their unsent output is dropped then). Returns (clients,
        dropped)."""
        clients = len(self.connections)
        for conn in list(self.connections.values()):
            conn.close()
        # transport.close() flushes asynchronously: wait for it.
        while self.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        dropped = len(self.connections)
        for conn in list(self.connections.values()):
            conn.abort()
        for server in (self._server, self._tls_server):
            if server is not None:
                await server.wait_closed()
        return clients, dropped

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "proto-max-bulk-len":
            # New connections read the limit when created; live ones are updated here.
            for conn in self.connections.values():
                conn.parser.max_bulk = self.config.proto_max_bulk_len
        elif name == "requirepass":
            # updateRequirePass: the default user's password. Clients that connected while
            # one was required need no AUTH once it is gone (the dispatcher asks the ACL).
            self.acl.update_default_password(value)


def _bound_port(server: asyncio.AbstractServer) -> int:
    # uvloop returns a list where typeshed says tuple, and compiled code checks declared
    # types: read it untyped.
    sock = getattr(server, "sockets")[0]  # noqa: B009
    return int(sock.getsockname()[1])


def _refresh_output_class(conn: ClientConnection, session: ClientSession) -> None:
    """The client-output-buffer-limit class of a client: pubsub in Pub/Sub mode
    (getClientType), and for a MONITOR (Rill bounds monitors as Pub/Sub clients too)."""
    pubsub = session.subscriptions is not None or "monitor" in session.flags
    conn.output_class = "pubsub" if pubsub else "normal"


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
