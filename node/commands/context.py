"""What a command handler sees: the calling client's `Session` and, through it, the `Node`.

`Node` is the node as commands see it: the data (keyspace, config, clock), the write path
(propagate) and, each behind a narrow protocol, the services only some command families use:
`Watches` (WATCH, flushes, SWAPDB), `Clients` (CLIENT, MONITOR, RESET), `Admin` (INFO, MEMORY,
CONFIG RESETSTAT, DEBUG SLEEP, SHUTDOWN), and the persistence and replication controls and the
waits of WAIT and WAITAOF, declared by their commands (`persistence_cmds`, `replication_cmds`). They are Protocols so the
command layer never imports what implements them (imports point engine <- commands <- ...);
node/app/ wires the node's parts into one `Node`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from node.engine.keyspace import Database, Keyspace

if TYPE_CHECKING:
    from node.commands.persistence_cmds import PersistenceControl
    from node.commands.replication_cmds import ReplicationControl, Waits
    from node.config import Config


class Watches(Protocol):
    """WATCH, and the keyspace-wide changes that invalidate WATCHes and wake blocked clients."""

    def watch(self, session: Session, key: bytes) -> None: ...
    def unwatch_all(self, session: Session) -> None: ...
    def touch_all(self, db_index: int | None) -> None: ...
    def swapdb(self, a: int, b: int) -> None: ...


class Clients(Protocol):
    """The connected clients, as CLIENT, MONITOR and RESET see them."""

    def sessions(self) -> Iterable[Session]: ...
    def close_session(self, session: Session) -> None: ...
    def unblock_session(self, session: Session, reply: Any) -> bool: ...
    def add_monitor(self, session: Session) -> None: ...
    def remove_monitor(self, session: Session) -> None: ...
    def pause_clients(self, timeout_ms: int, write_only: bool) -> None: ...  # CLIENT PAUSE
    def unpause_clients(self) -> None: ...  # CLIENT UNPAUSE


class Admin(Protocol):
    """The node as a process: INFO, MEMORY STATS, statistics, DEBUG SLEEP, SHUTDOWN."""

    def info(self, sections: list[str]) -> str: ...
    def memory_stats(self) -> dict[bytes, Any]: ...
    def command_stats(self) -> dict[str, Any]: ...
    def reset_stats(self) -> None: ...
    def request_shutdown(self, session: Session | None, flags: frozenset[str] = frozenset()) -> None: ...
    def sleep(self, seconds: float) -> None: ...


class Node(Protocol):
    keyspace: Keyspace
    config: Config
    clock: Callable[[], int]  # wall-clock milliseconds (now_ms), injectable for tests

    @property
    def role(self) -> str: ...  # "master" or "slave"

    def now_ms(self) -> int: ...
    def propagate(self, db_index: int, argv: Sequence[bytes]) -> None: ...
    def propagate_many(self, db_index: int, effects: list[list[bytes]]) -> None: ...
    def appended_from_log(self, db_index: int, key: bytes, count: int) -> None: ...
    def execute(self, session: Session, argv: list[bytes]) -> Any: ...  # EXEC runs the queue

    @property
    def watches(self) -> Watches: ...
    @property
    def clients(self) -> Clients: ...
    @property
    def admin(self) -> Admin: ...
    @property
    def persistence(self) -> PersistenceControl: ...  # SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE, WAITAOF
    @property
    def replication(self) -> ReplicationControl: ...  # REPLICAOF, ROLE
    @property
    def waits(self) -> Waits: ...  # WAIT, WAITAOF


@dataclass(slots=True)
class Block:
    """Returned by a handler that must wait: the server parks the client on `keys` (FIFO per
    key) and calls `retry(session)` whenever one of them is touched; a non-None result is
    the reply and ends the wait. `timeout_ms` 0 waits forever; on timeout the client gets
    `timeout_reply`. `retry` may raise CommandError to end the wait with an error.
    `postponed` is set (to the command) when the client waits for a pause to end rather
    than for keys: the command then runs again from the start (CLIENT PAUSE)."""

    keys: list[bytes]
    timeout_ms: int
    retry: Callable[[Session], Any]
    timeout_reply: Any = None
    postponed: list[bytes] | None = None


class Session:
    """Per-connection state that commands read and change."""

    __slots__ = (
        "node", "id", "db_index", "db", "proto", "name", "lib_name", "lib_ver", "authenticated",
        "multi", "multi_error", "watched", "watch_dirty", "reply_mode", "addr", "laddr", "fd",
        "created_ms", "last_interaction_ms", "last_command", "flags", "closing", "no_evict",
        "no_touch", "user", "effects_in_command", "blocked_on", "output_size", "in_exec",
        "woff", "_clock", "_propagate",
    )

    def __init__(self, node: Node, client_id: int, addr: str = "", laddr: str = "", fd: int = -1) -> None:
        self.node = node
        # Called directly: XADD reads the clock per command, and a method call through the
        # Node protocol costs more than the read. The same for logging an effect.
        self._clock = node.clock
        self._propagate = node.propagate
        self.id = client_id
        self.db_index = 0
        self.db: Database = node.keyspace.dbs[0]
        self.proto = 2
        self.name: bytes = b""
        self.lib_name: bytes = b""
        self.lib_ver: bytes = b""
        self.authenticated = not node.config.requirepass
        self.multi: list[list[bytes]] | None = None  # queued commands while in MULTI
        self.multi_error = False  # a command failed to queue: EXEC must abort
        self.watched: set[tuple[int, bytes]] = set()
        self.watch_dirty = False
        self.reply_mode = "on"  # CLIENT REPLY on|off|skip
        self.addr = addr
        self.laddr = laddr
        self.fd = fd
        now = node.now_ms()
        self.created_ms = now
        self.last_interaction_ms = now
        self.last_command = "NULL"
        self.flags: set[str] = set()  # "monitor", "replica", "blocked", "pubsub", …
        self.closing = False  # close after the pending replies are written
        self.no_evict = False
        self.no_touch = False
        self.user = "default"
        self.effects_in_command = 0
        self.blocked_on: Block | None = None
        self.output_size = 0
        self.in_exec = False
        # Log offset just after this client's last write (Redis's c->woff): what WAIT and
        # WAITAOF wait for. Set by the server when a command logged effects.
        self.woff = 0

    def select(self, index: int) -> None:
        self.db_index = index
        self.db = self.node.keyspace.dbs[index]

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

    def now_ms(self) -> int:
        return self._clock()
