"""The node's server: the server core (node/server/core.py: clients, dispatch, blocking,
MONITOR, Pub/Sub, INFO) plus the node's data, WATCH, and the write path that turns a
command's effects into log units and wakes whoever waits on the keys they touch. It
implements the `Watches` protocol command handlers use; node/app/ builds it with the rest of
the node and runs its lifecycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from node.commands.context import Session
from node.commands.table import TABLE, lookup
from node.config import Config
from node.engine.keyspace import Keyspace
from node.log.effect_log import EffectLog
from node.server.core import ServerCore


class Server(ServerCore):
    """The clients, command execution and data of one node."""

    def __init__(self, config: Config, keyspace: Keyspace, effects: EffectLog, clock: Callable[[], int]) -> None:
        super().__init__(config, TABLE, clock, effects=effects)
        self.keyspace = keyspace
        self._watchers: dict[tuple[int, bytes], set[Session]] = {}
        self.dirty = 0  # writes since the last save (Redis's server.dirty)

    # -- the write path, as commands reach it through their Node ----------------------------

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
        for conn in self.connections.values():
            s = conn.session
            if s is not None and s.db_index in (a, b):
                s.db = self.keyspace.dbs[s.db_index]
        self.blocking.signal_db(a)
        self.blocking.signal_db(b)

    # -- clients ---------------------------------------------------------------------------

    def unregister(self, session: Session) -> None:
        super().unregister(session)
        self.unwatch_all(session)


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: the node's clock (compiled here: XADD * reads it)."""
    return time.time_ns() // 1_000_000
