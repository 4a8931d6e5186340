"""Committed reads on a node (docs/compatibility.md, *Committed reads*): which entries of each
stream a majority of the replica set holds, so a reader can stay below what a failover could
take back.

The log's committed point is a `replication.CommitPoint`: a primary advances it to the offset
that it and ⌊N/2⌋ replicas hold (what WAIT counts: applied offsets, written ones in fenced
mode), N being `fenced-replica-set-size` in fenced mode and otherwise 1 + the most replicas
this node has had online as a primary (at least 2 once it has been a replica); a replica
advances it to what its primary announces, bounded by what it holds.

Streams map it to entry IDs. Every write effect notes the keys it touches (`note`, from the
server's write path, both roles), with the key's last ID from before the write for the first
note of a key; when units reach the backlog (`log_appended(end)`) each noted stream records
(end, its last ID). As the committed point passes a record, the stream's committed ID becomes
that record's ID. A stream not written since tracking (re)started at offset F (start-up, a full
sync, the first replica) is committed whole once the point passes F. Effects that move whole
values between keys or databases (RENAME, COPY, RESTORE, MOVE, SWAPDB, FLUSH*) restart the
tracking at their unit: everything waits for the point to pass it. Every approximation here
errs on the side of showing less.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from node.commands.table import lookup
from node.engine.stream_value import StreamValue
from replication import majority_offset

if TYPE_CHECKING:
    from node.replication.role import ReplicationNode

log = logging.getLogger("rill.replication")

_XADD: Final = frozenset((b"XADD", b"xadd"))
# Effects that may put another value under a key (or swap whole databases): tracking restarts.
_MOVES_VALUES: Final = frozenset((b"rename", b"renamenx", b"copy", b"restore", b"move", b"swapdb", b"flushall",
                                  b"flushdb"))
# Records kept per stream before they are thinned (each thinning keeps every other one: the
# committed ID then lags more, never leads).
_MAX_RECORDS: Final = 4096

KeyRef = tuple[int, bytes]


class _Stream:
    """What is known of one stream's committed entries."""

    __slots__ = ("value", "committed", "records")

    def __init__(self, value: StreamValue, committed: int) -> None:
        self.value = value  # the stream object (a new object under the key starts afresh)
        self.committed = committed  # every entry with an ID up to this one is committed
        self.records: deque[tuple[int, int]] = deque()  # (log offset, last ID then), not committed yet


class CommittedReads:
    """The committed point of the node's log and its streams (`ctx.node.committed`)."""

    def __init__(self, repl: ReplicationNode) -> None:
        self.repl = repl
        self.server = repl.server
        self.commit = repl.commit
        self.active = False  # tracking streams (a replica set of more than one node)
        self.floor = 0  # where tracking (re)started: streams untouched since are committed past it
        self._high_water = 0  # most replicas online at once while this node was a primary
        self._been_replica = False
        self._streams: dict[KeyRef, _Stream] = {}
        self._waiting: dict[KeyRef, _Stream] = {}  # those with records
        # Keys written since the last records, with their last ID before the first write
        # (None: no stream there then).
        self._noted: dict[KeyRef, int | None] = {}
        self._restart_noted = False
        self._replid = ""

    # -- wiring ----------------------------------------------------------------------------

    def attach(self) -> None:
        """After the replication side attached (the backlog and the primary exist)."""
        repl = self.repl
        assert repl.backlog is not None and repl.primary is not None
        repl.backlog.add_listener(self)
        repl.primary.registry.add_ack_listener(self.recompute)
        self.commit.add_listener(self._committed)
        self._replid = repl.backlog.replid
        self._update_activity()

    def _update_activity(self) -> None:
        if self.server.role == "slave":
            self._been_replica = True
        active = self.server.role == "slave" or self.replicas_needed() > 0
        if active and not self.active:
            self.restart("tracking starts")
        self.active = active
        self.server.commit_notes = self if active else None

    def replicas_needed(self) -> int:
        """⌊N/2⌋: the replicas that, with the primary, make a majority of the replica set."""
        fencing = self.repl.fencing
        if fencing.enabled:
            return self.server.config.get_int("fenced-replica-set-size") // 2
        replicas = max(self._high_water, 1 if self._been_replica else 0)
        return (1 + replicas) // 2

    # -- the committed point (a primary computes it) ---------------------------------------

    def recompute(self) -> None:
        """A replica acknowledged, left, or the log grew: the primary's committed point."""
        repl = self.repl
        backlog, primary = repl.backlog, repl.primary
        if backlog is None or primary is None or self.server.role != "master":
            return
        registry = primary.registry
        online = registry.online_offsets(written=repl.fencing.enabled)
        if len(online) > self._high_water:
            self._high_water = len(online)
        self._update_activity()
        point = majority_offset(online, self.replicas_needed(), backlog.end)
        if point is not None:
            self.commit.advance(point)

    # -- BacklogListener -------------------------------------------------------------------

    def log_appended(self, end: int) -> None:
        self._update_activity()
        if self.active and (self._noted or self._restart_noted) and not self.server.effects.in_unit():
            self._record(end)
        if self.server.role == "master":
            self.recompute()

    def history_changed(self) -> None:
        backlog = self.repl.backlog
        assert backlog is not None
        history = backlog.history
        continued = history.replid2 == self._replid and history.second_offset == backlog.end
        self._replid = backlog.replid
        self._update_activity()
        if not continued:
            # A full sync or a reset: another log, or ours under a new name from an unknown point.
            self.restart("the log was replaced")

    # -- the write path --------------------------------------------------------------------

    def note(self, db_index: int, argv: Sequence[bytes]) -> None:
        """A write effect was applied (called after it, on both roles)."""
        name = argv[0]
        if name in _XADD:
            ref = (db_index, argv[1])
            if ref not in self._noted:
                value = self.server.keyspace.dbs[db_index].get(argv[1])
                # The entry just added is the stream's last: all older ones come before it.
                self._noted[ref] = value.last_id - 1 if type(value) is StreamValue else None
            return
        if name[:1] in b"xX":
            return  # the other stream effects add no entry and keep the stream object
        if name.lower() in _MOVES_VALUES:
            self._restart_noted = True
            return
        spec = lookup(argv)
        if spec is None or spec.first_key <= 0:
            return
        db = self.server.keyspace.dbs[db_index]
        for key in spec.keys(argv):
            ref = (db_index, key)
            if ref not in self._noted:
                value = db.get(key)
                self._noted[ref] = value.last_id if type(value) is StreamValue else None

    def note_run(self, db_index: int, key: bytes, before: int) -> None:
        """XADDs a replica appended in one run from its primary's log; `before` is the
        stream's last ID before them."""
        ref = (db_index, key)
        if ref not in self._noted:
            self._noted[ref] = before

    def _record(self, end: int) -> None:
        """Units up to `end` are in the log: what they wrote becomes records."""
        if self._restart_noted:
            self._restart_noted = False
            self.restart("a command moved whole values", end)
            return
        noted, self._noted = self._noted, {}
        dbs = self.server.keyspace.dbs
        for ref, before in noted.items():
            value = dbs[ref[0]].get(ref[1])
            state = self._streams.get(ref)
            if type(value) is not StreamValue:
                if state is not None:
                    del self._streams[ref]
                    self._waiting.pop(ref, None)
                continue
            if state is None or state.value is not value:
                if state is None and before is not None:
                    # Written for the first time since the floor: what it held before is
                    # committed as of the floor.
                    state = _Stream(value, 0)
                    state.records.append((self.floor, before))
                else:
                    state = _Stream(value, 0)  # another stream under this key: nothing vouched
                self._streams[ref] = state
            last = value.last_id
            records = state.records
            if not records or records[-1][1] != last:
                records.append((end, last))
                if len(records) > _MAX_RECORDS:
                    _thin(records)
            self._waiting[ref] = state
        self._committed(self.commit.offset)

    # -- the committed point moves ---------------------------------------------------------

    def _committed(self, point: int) -> None:
        if not self._waiting:
            return
        done = []
        for ref, state in self._waiting.items():
            records = state.records
            while records and records[0][0] <= point:
                state.committed = max(state.committed, records.popleft()[1])
            if not records:
                done.append(ref)
        for ref in done:
            del self._waiting[ref]

    def restart(self, why: str, at: int | None = None) -> None:
        """Forgets every record: streams are committed whole once the point passes `at` (by
        default where the log ends now)."""
        self.floor = at if at is not None else self.repl.end_offset()
        self._streams.clear()
        self._waiting.clear()
        self._noted.clear()
        self._restart_noted = False
        log.debug("committed reads: tracking restarts at offset %d (%s)", self.floor, why)

    # -- XCOMMITTED ------------------------------------------------------------------------

    def refresh(self) -> None:
        """The units committed so far reach the backlog, hence the records (a primary)."""
        self.repl.flush()

    def committed_id(self, db_index: int, key: bytes) -> int | None:
        """The highest entry ID of the stream at `key` that a majority of the replica set
        holds (0 when none); None when the key holds no stream."""
        value = self.server.keyspace.dbs[db_index].get(key)
        if type(value) is not StreamValue:
            return None
        if not self.active:
            return value.last_live_id()
        self._committed(self.commit.offset)
        ref = (db_index, key)
        state = self._streams.get(ref)
        if state is not None and state.value is value:
            bound = state.committed
        elif state is None and ref in self._noted:
            before = self._noted[ref]
            bound = before if before is not None and self.commit.offset >= self.floor else 0
        elif state is None:
            bound = value.last_id if self.commit.offset >= self.floor else 0
        else:
            bound = 0
        return _last_entry_up_to(value, bound)


def _last_entry_up_to(value: StreamValue, bound: int) -> int:
    last = value.last_live_id()
    if last <= bound:
        return last
    found = value.range(0, bound, 1, rev=True)
    return found[0][0] if found else 0


def _thin(records: deque[tuple[int, int]]) -> None:
    """Keeps every other record and the last: later commits then vouch for less at a time."""
    kept = list(records)[1::2]
    if kept[-1] != records[-1]:
        kept.append(records[-1])
    records.clear()
    records.extend(kept)
