"""What a command handler sees: the calling client's session and, through it, its server.

Every server's clients are `ClientSession`s (connection, authentication, protocol, transaction
and Pub/Sub state), which reach their server as a `Core`; a node's are `Session`s, which also
reach it as a `Node` (`session.node`: data, WATCH, the write path). A handler of a command a
sentinel runs too takes a ClientSession; every other handler a Session.

`Core` is any RESP server as commands see it (node/server/core.py builds one): its config and
clock, its command table, the clients (`Clients`: CLIENT, MONITOR, RESET), the process
(`Admin`: INFO, SHUTDOWN, ...) and Pub/Sub (`PubSub`). A sentinel is a Core. `Node` is a Rill
node: a Core with data (keyspace, the write path: propagate) and, each behind a narrow
protocol, the services only some command families use: `Watches` (WATCH, flushes, SWAPDB),
the persistence and replication controls, the waits of WAIT and WAITAOF, committed reads.
They are Protocols so the command layer never imports what implements them (imports point
engine <- commands <- ...); node/app/ wires the node's parts into one `Node`.

This module sits above the table, the ACL and the subscriptions it names, and below every
handler: none of those imports it (a module below that needs a client names the few fields
it uses in a Protocol of its own, as acl_users' `AclClient`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from node.commands.acl_rules import INTERNAL_USER, User
from node.engine.expires import Expires
from node.engine.keyspace import Database, Keyspace

if TYPE_CHECKING:
    from node.commands.acl_users import AclUsers
    from node.commands.subscriptions import Subscriptions
    from node.commands.table import CommandTable
    from node.config import Config


class Watches(Protocol):
    """WATCH, and the keyspace-wide changes that invalidate WATCHes and wake blocked clients."""

    def watch(self, session: Session, key: bytes) -> None: ...
    def unwatch_all(self, session: Session) -> None: ...
    def touch(self, db_index: int, key: bytes) -> None: ...
    def touch_all(self, db_index: int | None) -> None: ...
    def swapdb(self, a: int, b: int) -> None: ...


class Clients(Protocol):
    """The connected clients, as CLIENT, MONITOR and RESET see them."""

    def sessions(self) -> Iterable[ClientSession]: ...
    def close_session(self, session: ClientSession) -> None: ...
    def unblock_session(self, session: ClientSession, reply: Any) -> bool: ...
    def add_monitor(self, session: ClientSession) -> None: ...
    def remove_monitor(self, session: ClientSession) -> None: ...
    def pause_clients(self, timeout_ms: int, write_only: bool) -> None: ...  # CLIENT PAUSE
    def unpause_clients(self) -> None: ...  # CLIENT UNPAUSE


class Admin(Protocol):
    """The node as a process: INFO, MEMORY STATS, statistics, DEBUG SLEEP, SHUTDOWN."""

    def info(self, sections: list[str]) -> str: ...
    def memory_stats(self) -> dict[bytes, Any]: ...
    def command_stats(self) -> dict[str, Any]: ...
    def reset_stats(self) -> None: ...
    def request_shutdown(self, session: ClientSession | None, flags: frozenset[str] = frozenset()) -> None: ...
    def sleep(self, seconds: float) -> None: ...


# Pub/Sub's namespaces: SUBSCRIBE's channels, PSUBSCRIBE's patterns, SSUBSCRIBE's shard channels.
CHANNEL: Final = 0
PATTERN: Final = 1
SHARD: Final = 2


class PubSub(Protocol):
    """Pub/Sub (node/server/pubsub.py): subscriptions, publishing, introspection; `kind` is
    CHANNEL, PATTERN or SHARD."""

    def subscribe(self, session: ClientSession, kind: int, names: list[bytes]) -> None: ...
    def unsubscribe(self, session: ClientSession, kind: int, names: list[bytes]) -> None: ...
    def unsubscribe_all(self, session: ClientSession) -> None: ...
    def publish(self, channel: bytes, message: bytes) -> int: ...
    def spublish(self, channel: bytes, message: bytes) -> int: ...
    def channel_names(self, kind: int, pattern: bytes | None) -> list[bytes]: ...
    def subscriber_count(self, kind: int, channel: bytes) -> int: ...
    def pattern_count(self) -> int: ...


class ExpirySwitch(Protocol):
    """Key expiry as commands reach it (node.commands.expiry.Expiry): DEBUG SET-ACTIVE-EXPIRE's
    switch and the count of keys deleted because their time had passed."""

    active: bool
    expired_keys: int


class PersistenceControl(Protocol):
    """What the commands ask of the persistence service (node.persistence.service)."""

    @property
    def lastsave(self) -> int: ...  # unix time of the last successful save (LASTSAVE)

    def save(self) -> None: ...
    def bgsave(self, schedule: bool, in_exec: bool) -> str: ...
    def bgrewriteaof(self, in_exec: bool) -> str: ...


class ReplicationControl(Protocol):
    """What the commands ask of the replication side (node.replication)."""

    def replicaof(self, session: Session, host: str, port: int) -> Any: ...
    def promote(self, session: Session | None, epoch: int | None = None, why: str = "user request",
                position: tuple[int, int] | None = None) -> Any: ...
    def role_reply(self) -> list[Any]: ...
    # CLIENT KILL TYPE master ("master") / replica ("slave"), of replicas authenticated as `user`.
    def kill_links(self, kind: str, user: bytes | None = None) -> int: ...
    def fence(self, epoch: int) -> Any: ...
    # Redis replicas of this node (node/commands/psync.py): REPLCONF, and PSYNC or SYNC.
    def replconf(self, session: Session, argv: list[bytes]) -> Any: ...
    def sync(self, session: Session, argv: list[bytes], psync: bool) -> Any: ...

    @property
    def failover(self) -> Failover: ...


class Failover(Protocol):
    """The FAILOVER command's state machine (node.replication.planned_failover)."""

    def command(self, session: Session, argv: list[bytes]) -> Any: ...


class Waits(Protocol):
    """WAIT and WAITAOF (node.replication.waits): the reply now, or a Block."""

    def wait(self, session: Session, numreplicas: int, timeout_ms: int) -> Any: ...
    def waitaof(self, session: Session, numlocal: int, numreplicas: int, timeout_ms: int) -> Any: ...


class CommittedReads(Protocol):
    """What XCOMMITTED asks of the node."""

    def refresh(self) -> None: ...  # the log's units so far reach the bookkeeping first
    def committed_id(self, db_index: int, key: bytes) -> int | None: ...


class Core(Protocol):
    """A RESP server as every command sees it: a node, or a server without data (a sentinel).
    Commands a sentinel runs (PING, AUTH, HELLO, CLIENT, COMMAND, INFO, SHUTDOWN, Pub/Sub)
    use only this."""

    config: Config
    clock: Callable[[], int]  # wall-clock milliseconds (now_ms), injectable for tests
    acl: AclUsers  # the server's ACL users, log and counters

    @property
    def commands(self) -> CommandTable: ...  # what this server runs (COMMAND lists it)
    @property
    def mode(self) -> str: ...  # "standalone" or "sentinel" (HELLO, INFO redis_mode)
    @property
    def role(self) -> str: ...  # "master" or "slave" (a node), "sentinel"

    def now_ms(self) -> int: ...
    # Fenced mode: the error a primary without its lease answers instead of adding to its log
    # (PUBLISH; expired keys wait), None otherwise.
    def lease_refusal(self) -> str | None: ...
    # A replication-only effect (PUBLISH): a node's replicas get it, never its AOF; a server
    # that is not replicated drops it.
    def propagate_to_replicas(self, argv: Sequence[bytes]) -> None: ...

    @property
    def clients(self) -> Clients: ...
    @property
    def admin(self) -> Admin: ...
    @property
    def pubsub(self) -> PubSub: ...


class Node(Core, Protocol):
    """A Rill node: a Core with data and the services of its command families."""

    keyspace: Keyspace

    def propagate(self, db_index: int, argv: Sequence[bytes]) -> None: ...
    def propagate_many(self, db_index: int, effects: list[list[bytes]]) -> None: ...
    def appended_from_log(self, db_index: int, key: bytes, count: int, before: int) -> None: ...
    def execute(self, session: Session, argv: list[bytes]) -> Any: ...  # EXEC runs the queue

    @property
    def expiry(self) -> ExpirySwitch: ...  # key expiry's switch and statistics (node.commands.expiry)
    @property
    def watches(self) -> Watches: ...
    @property
    def persistence(self) -> PersistenceControl: ...  # SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE, WAITAOF
    @property
    def replication(self) -> ReplicationControl: ...  # REPLICAOF, ROLE
    @property
    def waits(self) -> Waits: ...  # WAIT, WAITAOF
    @property
    def committed(self) -> CommittedReads: ...  # XCOMMITTED


@dataclass(slots=True)
class Block:
    """Returned by a handler that must wait: the server parks the client on `keys` (FIFO per
    key) and calls `retry(session)` whenever one of them is touched; a non-None result is
    the reply and ends the wait. `timeout_ms` 0 waits forever; on timeout the client gets
    `timeout_reply`. `retry` may raise CommandError to end the wait with an error.
    `postponed` is set (to the command) when the client waits for a pause to end rather
    than for keys: the command then runs again from the start (CLIENT PAUSE). `wake_at`,
    when given, says at what time (ms, the session's clock) `retry` may succeed although
    no key was touched (XREADGROUP CLAIM: a pending entry becomes idle enough); None:
    not before a key is touched."""

    keys: list[bytes]
    timeout_ms: int
    # Both are called with the session that blocked: a node's commands get their Session.
    retry: Callable[[Any], Any]
    timeout_reply: Any = None
    postponed: list[bytes] | None = None
    wake_at: Callable[[Any], int | None] | None = None


def _no_output(data: bytes) -> None:
    """The output of a session without a connection (a log replay, the replication link)."""


class ClientSession:
    """A client of any server (Redis's `client`): its connection, authentication, protocol,
    transaction and Pub/Sub state, and its selected database, which on a server without data
    (a sentinel) is an empty one. Commands every server runs (PING, AUTH, HELLO, CLIENT,
    COMMAND, INFO, SHUTDOWN, Pub/Sub) take one and reach their server through `core`; a
    node's clients are `Session`s."""

    __slots__ = (
        "core", "id", "db_index", "db", "proto", "name", "lib_name", "lib_ver", "authenticated",
        "multi", "multi_error", "reply_mode", "addr", "laddr", "fd",
        "created_ms", "last_interaction_ms", "last_command", "flags", "closing", "no_evict",
        "no_touch", "user", "effects_in_command", "blocked_on", "output_size", "output_room", "in_exec",
        "exec_ms", "woff", "expires", "subscriptions", "pushes", "send", "_clock",
    )

    def __init__(self, core: Core, client_id: int, addr: str = "", laddr: str = "", fd: int = -1,
                 db: Database | None = None, expires: Expires | None = None) -> None:
        self.core = core
        # Called directly: XADD reads the clock per command, and a method call through the
        # Core protocol costs more than the read.
        self._clock = core.clock
        self.id = client_id
        self.db_index = 0
        self.db: Database = db if db is not None else {}
        # The deadlines of db's volatile keys.
        self.expires: Expires = expires if expires is not None else Expires()
        self.proto = 2
        self.name: bytes = b""
        self.lib_name: bytes = b""
        self.lib_ver: bytes = b""
        # Redis's c->authenticated and c->user. A session made by the server itself (an AOF
        # replay, the link to a primary) runs anything, as Redis's clients without a user;
        # the server gives a client connection the default user (ServerCore.register).
        self.authenticated = True
        self.user: User = INTERNAL_USER
        self.multi: list[list[bytes]] | None = None  # queued commands while in MULTI
        self.multi_error = False  # a command failed to queue: EXEC must abort
        self.reply_mode = "on"  # CLIENT REPLY on|off|skip
        self.addr = addr
        self.laddr = laddr
        self.fd = fd
        now = core.now_ms()
        self.created_ms = now
        self.last_interaction_ms = now
        self.last_command = "NULL"
        self.flags: set[str] = set()  # "monitor", "replica", "blocked", "pubsub", …
        self.closing = False  # close after the pending replies are written
        self.no_evict = False
        self.no_touch = False
        # Effects the running command logged (the core compares it before and after).
        self.effects_in_command = 0
        self.blocked_on: Block | None = None
        self.output_size = 0
        # Bytes the running command's reply may take before the client passes its hard
        # output buffer limit (0: no limit); set by the connection around each command, read
        # by replies that can grow large (XRANGE, XREAD) to stop early (OutputLimitReached).
        self.output_room = 0
        self.in_exec = False
        # While EXEC runs: its start time, the time every queued command sees (Redis's
        # commandTimeSnapshot), so no key expires half-way through a transaction.
        self.exec_ms = 0
        # Log offset just after this client's last write (Redis's c->woff): what WAIT and
        # WAITAOF wait for. Set by the server when a command logged effects.
        self.woff = 0
        # Pub/Sub: None while the client subscribes to nothing (the dispatcher's fast path
        # checks that one field).
        self.subscriptions: Subscriptions | None = None
        # While one of this client's commands runs, the list its replies go to: out-of-band
        # output (`push`) joins it there, in order with them. None otherwise.
        self.pushes: list[bytes] | None = None
        # Writes out-of-band output to the client (its connection sets it).
        self.send: Callable[[bytes], None] = _no_output

    def discard_transaction(self) -> None:
        """Leave MULTI without running it (DISCARD, a refused EXEC, RESET)."""
        self.multi = None
        self.multi_error = False

    def now_ms(self) -> int:
        return self._clock()

    def push(self, data: bytes) -> None:
        """Out-of-band output (Pub/Sub messages and confirmations, RESP2 arrays or RESP3
        pushes): while one of this client's commands runs it lands where that command's reply
        will, before it, as Redis appends both to one output buffer; otherwise it is sent."""
        out = self.pushes
        if out is not None:
            out.append(data)
        else:
            self.send(data)

    def command_ms(self) -> int:
        """The time the running command sees for key expiry (Redis's commandTimeSnapshot):
        the clock, or inside EXEC the time EXEC started."""
        return self.exec_ms if self.in_exec else self._clock()


class Session(ClientSession):
    """A client of a Rill node: a ClientSession whose commands reach the node's data and
    services through `node`, select databases, WATCH keys and log effects."""

    __slots__ = ("node", "watched", "watch_dirty", "_propagate")

    def __init__(self, node: Node, client_id: int, addr: str = "", laddr: str = "", fd: int = -1) -> None:
        keyspace = node.keyspace
        super().__init__(node, client_id, addr, laddr, fd, keyspace.dbs[0], keyspace.expires[0])
        self.node = node
        # Called directly: a method call through the Node protocol costs more than this.
        self._propagate: Callable[[int, Sequence[bytes]], None] = node.propagate
        # (db, key) watched -> whether it was logically expired when watched (Redis's
        # watchedKey.expired: its deletion by expiry then changes nothing).
        self.watched: dict[tuple[int, bytes], bool] = {}
        self.watch_dirty = False

    def discard_transaction(self) -> None:
        """Leave MULTI without running it, and forget the WATCHed keys (unwatchAllKeys)."""
        super().discard_transaction()
        self.node.watches.unwatch_all(self)

    def select(self, index: int) -> None:
        self.db_index = index
        keyspace = self.node.keyspace
        self.db = keyspace.dbs[index]
        self.expires = keyspace.expires[index]

    def propagate(self, *argv: bytes) -> None:
        """Log one effect (a fully specified command) against this client's database."""
        self.effects_in_command += 1
        self._propagate(self.db_index, argv)

    def propagate_argv(self, argv: list[bytes]) -> None:
        """propagate() of an argv list the caller built (no star-args tuple on hot paths)."""
        self.effects_in_command += 1
        self._propagate(self.db_index, argv)

    def propagate_many(self, effects: list[list[bytes]]) -> None:
        """propagate_argv() of each of `effects`, in order."""
        self.effects_in_command += len(effects)
        self.node.propagate_many(self.db_index, effects)

    def propagate_to_replicas(self, *argv: bytes) -> None:
        """Log a replication-only effect (PUBLISH: to replicas, not to the AOF); WAIT after it
        waits for the replicas to have it, as after any write."""
        self.effects_in_command += 1
        self.node.propagate_to_replicas(argv)
