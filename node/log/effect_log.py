"""The effect log: the ordered stream of fully specified write commands a node performed,
with Redis-style replication offsets (bytes of RESP) under a replication id.

The log owns the node's replication position: its `offset` (the end of the log) and its
`history` (replid, replid2 and the switch offset), which the node's backlog shares (the same
object, never a copy) and the AOF records. The backlog and the AOF writer follow the offset
through the units they are given and keep their own end only to know where their bytes stop;
when one of them is found to end elsewhere than the log it follows (`check_follower`), that is
a bug, reported as `PositionMismatch`, never repaired by moving one of them: a repair would
hide which bytes a replica or a restart gets.

Effects of one command (or one EXEC) are a unit: when there are several they are wrapped
in MULTI/EXEC so a replica or an AOF replay applies all or none. Listeners (AOF writer,
replication) receive each committed unit as RESP bytes with the offset it ends at. A
listener is registered only while it records the log (an open AOF, a backlog that has served
a replica): with none, as on a primary without AOF that no replica ever synced from, the
offset still advances but no unit is encoded. (Redis keeps no backlog then either.)

Replication-only units (PUBLISH, as Redis propagates it with PROPAGATE_REPL: to replicas,
never to the AOF) are units of their own, after the unit of the command or EXEC that
produced them. They are logged only while the log is replicated (a listener that is not
durable: the backlog), and then take offsets like any unit, so replicas, their backlogs and
partial resyncs carry them. A durable listener (the AOF) gets them as empty data with the
offset they end at: it learns the log moved on without bytes to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from node.log.encode import encode_command, encoded_size
from replication.replids import History

Listener = Callable[[bytes, int], None]

_MULTI = encode_command([b"MULTI"])
_EXEC = encode_command([b"EXEC"])


class PositionMismatch(Exception):
    """A follower of the effect log (the backlog, the AOF) does not end where the log does: a
    broken invariant, a bug. (An Exception: mypyc compiles no subclass of AssertionError.)"""


class EffectLog:
    def __init__(self) -> None:
        self.history = History()
        self.offset = 0  # bytes of log since the history began (Redis's master_repl_offset)
        self._db = -1  # database of the last logged effect (a SELECT precedes a change)
        self._pending: list[tuple[int, Sequence[bytes]]] = []
        self._depth = 0
        self._listeners: list[Listener] = []
        # Those of `_listeners` that keep only durable bytes (the AOF).
        self._durable: list[Listener] = []
        # Replication-only effects waiting for the end of the unit in progress.
        self._replica_only: list[Sequence[bytes]] = []
        # While a replica applies its primary's units (`applying_primary_units`).
        self._muted = False

    @property
    def replid(self) -> str:
        return self.history.replid

    @property
    def replid2(self) -> str:
        return self.history.replid2

    @property
    def second_offset(self) -> int:
        """Where replid2's history ends; -1 when there is none."""
        return self.history.second_offset

    def restore(self, replid: str, replid2: str, second_offset: int, offset: int) -> None:
        """The position a node recorded on disk (loaded from its AOF or snapshot)."""
        self.history.restore(replid, replid2, second_offset)
        self.move_to(offset)

    def restart(self, replid: str, offset: int) -> None:
        """The log continues `replid`'s history from `offset`, with no previous one (a
        replica loaded its primary's snapshot)."""
        self.history.restart(replid)
        self.move_to(offset)

    def move_to(self, offset: int) -> None:
        """The log's data set now corresponds to `offset` (it was loaded or replaced): the next
        unit starts there, with a SELECT."""
        self.offset = offset
        self.force_select()

    def check_follower(self, follower: str, end: int) -> None:
        """Raises PositionMismatch unless `follower` ("the backlog", "the AOF"), which says it
        ends at `end`, ends where the log does."""
        if end != self.offset:
            raise PositionMismatch(f"{follower} ends at offset {end} but the effect log at {self.offset}")

    def add_listener(self, listener: Listener, durable: bool = False) -> None:
        """`listener(data, end_offset)` for every unit from now on; a `durable` one gets a
        replication-only unit as empty data (see the module's docstring)."""
        if listener not in self._listeners:
            self._listeners.append(listener)
            if durable:
                self._durable.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
        if listener in self._durable:
            self._durable.remove(listener)

    @contextmanager
    def applying_primary_units(self) -> Iterator[None]:
        """While a replica applies its primary's units: its own re-encoding of their effects
        is dropped (the primary's bytes are logged instead, `replicated`)."""
        self._muted = True
        try:
            yield
        finally:
            self._muted = False

    def replicating(self) -> bool:
        """Whether a listener other than a durable one (a backlog) records the log."""
        return len(self._listeners) > len(self._durable)

    def force_select(self) -> None:
        """Start the next unit with a SELECT (a new AOF file, a new replica stream: a reader
        that starts there must learn the database)."""
        self._db = -1

    def in_unit(self) -> bool:
        """Whether a unit is being built: effects appended that the log has not committed."""
        return self._depth > 0 or bool(self._pending)

    def begin(self) -> None:
        self._depth += 1

    def append(self, db_index: int, argv: Sequence[bytes]) -> None:
        if self._muted:
            return  # a replica applying its primary's log records the primary's bytes instead
        self._pending.append((db_index, argv))
        if self._depth == 0:
            self.commit()

    @contextmanager
    def unit(self) -> Iterator[None]:
        """Effects appended inside form one unit (wrapped in MULTI/EXEC when several)."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def end(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            if self._pending:
                self.commit()
            if self._replica_only:
                self._commit_replica_only()

    def append_for_replicas(self, argv: Sequence[bytes]) -> None:
        """A replication-only effect (PUBLISH): a unit of its own for replicas, none for the
        AOF, logged only while the log is replicated; inside a unit it follows that unit."""
        if self._muted or not self.replicating():
            return
        self._replica_only.append(argv)
        if self._depth == 0:
            self._commit_replica_only()

    def _commit_replica_only(self) -> None:
        waiting = self._replica_only
        self._replica_only = []
        durable = self._durable
        for argv in waiting:
            data = encode_command(argv)
            self.offset += len(data)
            for listener in self._listeners:
                listener(b"" if listener in durable else data, self.offset)

    def commit(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        if len(pending) == 1 and pending[0][0] == self._db:
            # The common case: one effect in the current database.
            if not self._listeners:
                self.offset += encoded_size(pending[0][1])
                return
            data = encode_command(pending[0][1])
            self.offset += len(data)
            for listener in self._listeners:
                listener(data, self.offset)
            return
        if not self._listeners:
            self.offset += self._unit_size(pending)
            return
        parts: list[bytes] = []
        wrap = len(pending) > 1
        leading_select = pending[0][0] != self._db
        for db_index, argv in pending:
            if db_index != self._db:
                parts.append(encode_command([b"SELECT", str(db_index).encode()]))
                self._db = db_index
            parts.append(encode_command(argv))
        if wrap:
            # MULTI goes after any leading SELECT so the transaction body is self-contained.
            parts.insert(1 if leading_select else 0, _MULTI)
            parts.append(_EXEC)
        data = b"".join(parts)
        self._end_unit()
        self.offset += len(data)
        for listener in self._listeners:
            listener(data, self.offset)

    def _unit_size(self, pending: list[tuple[int, Sequence[bytes]]]) -> int:
        """len() of the unit commit() would encode for `pending`, without encoding it."""
        size = 0 if len(pending) == 1 else len(_MULTI) + len(_EXEC)
        for db_index, argv in pending:
            if db_index != self._db:
                size += encoded_size([b"SELECT", str(db_index).encode()])
                self._db = db_index
            size += encoded_size(argv)
        self._end_unit()
        return size

    def _end_unit(self) -> None:
        if self._db != 0:
            # Every unit outside database 0 names its database, so any unit boundary is a
            # valid starting point for a reader in database 0 (a replica after a full sync or
            # a restart, an AOF incr file): none depends on a SELECT in an earlier unit.
            self._db = -1

    def replicated(self, data: bytes, end_offset: int, replica_only: Sequence[tuple[int, int]] = ()) -> None:
        """Units a replica applied, logged as its primary cut them: the log continues at the
        primary's offsets with the primary's bytes, so the AOF holds exactly what the backlog
        does (less the replication-only units, whose (start, end) positions in `data` are
        `replica_only`) and a restart resumes at an offset the primary knows."""
        self.offset = end_offset
        # The primary's units follow its own rule (see commit): the next unit of this node,
        # once promoted, names its database whatever the replicated stream left selected.
        self._db = -1
        for listener in self._listeners:
            if replica_only and listener in self._durable:
                _durable_parts(listener, data, end_offset, replica_only)
            else:
                listener(data, end_offset)


def _durable_parts(listener: Listener, data: bytes, end_offset: int, skipped: Sequence[tuple[int, int]]) -> None:
    """`data` (ending at `end_offset`) to a durable listener without the `skipped` ranges:
    each stretch between them with the offset it ends at, then the end if data ends skipped."""
    base = end_offset - len(data)
    pos = 0
    for start, end in skipped:
        if start > pos:
            listener(data[pos:start], base + start)
        pos = end
    listener(data[pos:], end_offset)
