"""The node's server: the server core (node/server/core.py: clients, dispatch, blocking,
MONITOR, Pub/Sub, INFO) plus the node's data, WATCH, and the write path that turns a
command's effects into log units and wakes whoever waits on the keys they touch. It
implements the `Watches` protocol command handlers use; node/app/ builds it with the rest of
the node and runs its lifecycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from node.commands.context import Node, Session
from node.commands.expiry import Expiry, is_expired
from node.commands.table import TABLE, lookup
from node.config import Config
from node.engine.keyspace import Keyspace
from node.log.effect_log import EffectLog
from node.server.core import ServerCore
from node.server.info import Fields
from node.server.role_view import RoleView
from node.server.write_gates import WriteGates


class CommitNotes(Protocol):
    """Committed reads (node/replication/committed.py) learn which keys each effect wrote."""

    def note(self, db_index: int, argv: Sequence[bytes]) -> None: ...
    def note_run(self, db_index: int, key: bytes, before: int) -> None: ...


class Server(ServerCore):
    """The clients, command execution and data of one node."""

    def __init__(
        self, config: Config, keyspace: Keyspace, effects: EffectLog, clock: Callable[[], int], *,
        node: Node, role: RoleView | None = None, gates: WriteGates | None = None,
        sync_stats: Callable[[], Fields] | None = None,
    ) -> None:
        super().__init__(config, TABLE, clock, effects=effects, role=role, gates=gates,
                         new_session=self._node_session, sync_stats=sync_stats)
        # The node as its commands see it (node/app/rill_node.py's RillNode, which builds this
        # server): every client of this server is a Session of it.
        self.node = node
        self.keyspace = keyspace
        self.expiry = Expiry()
        self._watchers: dict[tuple[int, bytes], set[Session]] = {}
        # Writes since start, counted here only (by the write path below). Redis's server.dirty,
        # the writes since the last save, is this less the count at that save, which the
        # snapshots keep (node/persistence/snapshots.py: changes_since_save).
        self.writes = 0
        # Set while committed reads track streams (a replica set of more than one node).
        self.commit_notes: CommitNotes | None = None

    # -- the write path, as commands reach it through their Node ----------------------------

    def propagate(self, db_index: int, argv: Sequence[bytes]) -> None:
        self.writes += 1
        self.effects.append(db_index, argv)
        notes = self.commit_notes
        if notes is not None:
            notes.note(db_index, argv)
        if not self._watchers and not self.blocking.has_waiters():
            return  # nobody to tell that these keys changed
        # Subcommand effects (XGROUP DESTROY key ...) name their keys in the subcommand's spec.
        spec = lookup(argv)
        if spec is not None and spec.first_key > 0 and spec.name not in _TOUCHES_ITS_KEYS:
            for key in spec.keys(argv):
                self.touch(db_index, key)

    def appended_from_log(self, db_index: int, key: bytes, count: int, before: int) -> None:
        """What propagate() does for `count` XADDs to `key` that a replica appended from its
        primary's log in one run (the log muted: it records the primary's bytes); `before` is
        the stream's last ID before them."""
        self.writes += count
        notes = self.commit_notes
        if notes is not None:
            notes.note_run(db_index, key, before)
        if self._watchers or self.blocking.has_waiters():
            self.touch(db_index, key)

    def propagate_many(self, db_index: int, effects: list[list[bytes]]) -> None:
        """propagate() each of `effects`, in order (one call through the Node protocol for
        a command's many effects: an XREADGROUP of 10 entries logs 11)."""
        for argv in effects:
            self.propagate(db_index, argv)

    # -- Watches ---------------------------------------------------------------------------

    def touch(self, db_index: int, key: bytes) -> None:
        """A key changed: invalidate WATCHes and wake clients blocked on it."""
        ref = (db_index, key)
        watchers = self._watchers.get(ref)
        if watchers:
            for session in watchers:
                if session.watched.get(ref):
                    # Watched while logically expired (touchWatchedKey): its deletion is no
                    # change, and it is then watched as a missing key.
                    if key not in self.keyspace.dbs[db_index]:
                        session.watched[ref] = False
                    continue
                session.watch_dirty = True
        self.blocking.signal(ref)

    def touch_all(self, db_index: int | None) -> None:
        """Database db_index (every one for None) is about to be emptied: call before
        clearing. As Redis's touchAllWatchedKeysInDb, only WATCHes of keys that exist now
        are invalidated (a flush does not change a missing key, nor one that was already
        expired when watched); blocked clients wake."""
        dbs = self.keyspace.dbs
        for ref, watchers in self._watchers.items():
            db, key = ref
            if (db_index is None or db == db_index) and key in dbs[db]:
                for session in watchers:
                    if session.watched.get(ref):
                        session.watched[ref] = False
                    else:
                        session.watch_dirty = True
        self.blocking.signal_db(db_index)

    def watch(self, session: Session, key: bytes) -> None:
        ref = (session.db_index, key)
        if ref in session.watched:
            return
        # Whether it was logically expired when watched (watchForKey's `expired`).
        session.watched[ref] = is_expired(session, key)
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
        keyspace = self.keyspace
        now = self.clock()
        # touchAllWatchedKeysInDb(a, b) and (b, a): a watched key changes when either
        # database holds it before the swap, unless it is expired on both sides of it.
        for emptied, replaced in ((a, b), (b, a)):
            for ref, watchers in self._watchers.items():
                db, key = ref
                if db != emptied:
                    continue
                was = key in keyspace.dbs[emptied]
                will = key in keyspace.dbs[replaced]
                if not (was or will):
                    continue
                will_be_expired = will and keyspace.expires[replaced].is_expired(key, now)
                for session in watchers:
                    if session.watched.get(ref):
                        if not will:
                            session.watched[ref] = False
                            continue
                        if will_be_expired:
                            continue
                    elif not was and will_be_expired:
                        session.watched[ref] = True
                        continue
                    session.watch_dirty = True
        keyspace.swap(a, b)
        for conn in self.connections.values():
            s = conn.session
            if isinstance(s, Session) and s.db_index in (a, b):
                s.select(s.db_index)
        self.blocking.signal_db(a)
        self.blocking.signal_db(b)

    # -- clients ---------------------------------------------------------------------------

    def expiry_stats(self) -> list[tuple[str, object]]:
        expiry = self.expiry
        return [
            ("expired_keys", expiry.expired_keys),
            ("expired_stale_perc", f"{expiry.stale_perc * 100:.2f}"),
            ("expired_time_cap_reached_count", expiry.time_cap_reached),
            ("expire_cycle_cpu_milliseconds", expiry.cycle_ns // 1_000_000),
        ]

    def reset_stats(self) -> None:
        super().reset_stats()
        self.expiry.reset_stats()

    def _node_session(self, client_id: int, addr: str, laddr: str, fd: int) -> Session:
        return Session(self.node, client_id, addr, laddr, fd)


# Effects whose command touches the keys it changes itself: COPY changes only its destination,
# which may be in another database.
_TOUCHES_ITS_KEYS: Final = frozenset({"copy"})


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the node's clock (compiled here: XADD * reads it)."""
    return time.time_ns() // 1_000_000
